// Package admission is the admission stage of annex: what runs on every
// write (create, update, patch, delete) between decoding and storage —
// mutating admission, schema validation, then validating admission — with
// Kubernetes' semantics and Kubernetes' exact error wording.
//
// # Pieces
//
//   - [Mutator] and [Validator], one method each, with [MutatorFunc] and
//     [ValidatorFunc] adapters, over [Attributes] (operation, resource,
//     names, object and old object, user, dryRun, options). Attributes is
//     attrs.Admission, the type the REST layer fills, so a [Chain] is a
//     rest.Admitter with no glue between them.
//   - [Chain], built once by [New]: Mutate runs every mutator in order (and
//     all of them once more when one asks for reinvocation); Validate runs
//     the resource's [SchemaValidator] and then every validator in order.
//   - [SchemaValidator]: a structural schema compiled once into a JSON-schema
//     validator (santhosh-tekuri/jsonschema/v5) and CEL programs for
//     x-kubernetes-validations (oldSelf transition rules, messageExpression,
//     reason, fieldPath, per-call and per-object cost limits), with kube's
//     validation ratcheting on update (a schema error or a failed rule on a
//     value the update did not change is dropped; the rule's is a warning). Errors are a
//     422 Invalid Status with one cause per field, worded as the
//     kube-apiserver words them for custom resources. Defaulting and pruning
//     happen at decode time in the REST layer, not here.
//   - [ValidatingPolicies] and [MutatingPolicies]: ValidatingAdmissionPolicy
//     and MutatingAdmissionPolicy with their bindings, from
//     admissionregistration.k8s.io YAML or Go values.
//   - [Webhooks]: Mutating- and ValidatingWebhookConfigurations, called with
//     AdmissionReview v1 over HTTPS.
//   - [NamespaceLifecycle]: rejects creates in namespaces that do not exist
//     or are terminating in the cluster (aggregated mode).
//   - [Cluster] ([FollowCluster]): kube's four plugins over the program's
//     policies and webhooks and, given a kubeclient, the cluster's own
//     (list and watch of the configuration kinds at the versions the
//     cluster serves, params of any kind, ConfigMaps included): until the
//     first list, writes wait 10s then get kube's 403 "not yet ready to
//     handle request"; when the cluster goes away the last configuration
//     stays enforced; a kind the cluster does not serve is empty, and its
//     Note says so (/readyz). Webhooks named by service are reached through
//     the cluster's service proxy (the identity needs create on
//     services/proxy; the kube-apiserver makes the last hop and does not
//     check caBundle). Its identity needs get, list, watch on the kinds and
//     on params' kinds.
//
// # Order
//
// Kubernetes' order is NamespaceLifecycle, MutatingAdmissionPolicy,
// MutatingAdmissionWebhook, (schema), ValidatingAdmissionPolicy,
// ValidatingAdmissionWebhook; list Mutators and Validators in that order.
// Update and patch must call Mutate and Validate again on every conflict
// retry, as Kubernetes does.
//
// # Usage
//
//	vap, err := admission.LoadValidatingPolicies(policyYAML, admission.PolicyOptions{})
//	chain, err := admission.New(admission.Config{
//		Resources:  []admission.Resource{{Group: "example.annex.dev", Version: "v1", Resource: "environments", Kind: "Environment", Schema: s}},
//		Validators: []admission.Validator{vap},
//	})
//	err = chain.Mutate(ctx, attrs)   // may change attrs.Object
//	err = chain.Validate(ctx, attrs) // *meta.Status on rejection
//
// # Context
//
// Warnings go to the client through filters.AddWarning and audit
// annotations through filters.AddAuditAnnotation; without recorders in the
// context they are dropped.
//
// # Caveats
//
// CEL expressions are checked with dynamic types (not against the schema),
// so a rule that a 1.34 cluster refuses for its estimated cost compiles
// here; at run time the per-call limit and the budgets apply with
// Kubernetes' costs. Every environment is Kubernetes 1.34's (package
// cellib): its libraries (quantity, url, ip, cidr, semver, format, regex,
// lists, authz) and the cel-go extensions it enables, and no others (no
// math, encoders, cel.bind or cel-go's network and regex extensions). The
// authorizer variable of policies and matchConditions needs
// PolicyOptions.Authorizer or WebhookOptions.Authorizer; the Builder sets
// them to the server's authorizer.
package admission
