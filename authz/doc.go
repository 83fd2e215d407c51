// Package authz decides whether an authenticated user may do what a request
// asks: the [Authorizer] interface, the union of named authorizers, the
// built-in always-allow paths and privileged groups, the SubjectAccessReview
// webhook, RBAC evaluated in process, and the impersonation and
// authorization filters.
//
// # Authorizers
//
// An [Authorizer] looks at [Attributes] (the user, and the verb, resource or
// path from the request info) and returns Allow, Deny or NoOpinion with a
// reason. [NewUnion] asks named authorizers in order; the first Allow or Deny
// wins, and when all abstain the request is refused with every reason.
// [New] builds what Kubernetes' delegated authorization builds:
//
//	kubernetes.io/always-allow-groups  system:masters
//	kubernetes.io/always-allow-paths   /healthz, /readyz, /livez
//	your authorizers                   ([Webhook] as NameWebhook, [RBAC] as NameRBAC, ...)
//
// # Delegated and standalone
//
// Behind kube-aggregator, [Webhook] posts a SubjectAccessReview (user, UID,
// groups, extra, resource attributes with raw selectors, or the path) to the
// cluster through package kubeclient. Answers are kept in a bounded LRU
// (8192) for 10s (allowed and denied separately configurable); errors are
// never cached; a cluster that cannot be reached gives NoOpinion with an
// error, which the filter answers 500: fail closed.
//
// Standalone, [RBAC] evaluates Roles, ClusterRoles and bindings loaded from
// YAML in the rbac.authorization.k8s.io/v1 format ([LoadRBACFiles]) with
// Kubernetes' matching rules ([RuleAllows], [SubjectMatches]). It never
// denies; RoleBindings never reach cluster-scoped attributes.
//
// [PermissionCheck] is a readiness check for delegated mode: it asks the
// cluster with SelfSubjectAccessReviews whether the server's own credentials
// may create TokenReviews and SubjectAccessReviews and read the
// extension-apiserver-authentication ConfigMap, and names the missing
// binding when not.
//
// # Impersonation
//
// [WithImpersonation] runs after authentication and before authorization.
// Each Impersonate-User, -Group, -Uid and -Extra-* item is authorized
// separately as verb "impersonate" (users or serviceaccounts, groups, uids,
// userextras/<key>); the impersonated user then replaces the requester for
// every later stage, and the requester is kept for audit
// (filters.ImpersonatorFrom).
//
// # The filter
//
//	authorize, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a})
//	handler = authorize(handler)
//
// [WithAuthorization] runs after authentication and the request-info
// resolver, reading both from the context. Allow proceeds. Deny or NoOpinion
// is a 403 Status with Kubernetes' exact message:
//
//	{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
//	 "message":"pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"ns\"",
//	 "reason":"Forbidden","details":{"kind":"pods"},"code":403}
//
// An authorizer error without Allow is a 500 whose plain-text body is the one
// Kubernetes writes (`Internal Server Error: "<uri>": <error>`), because
// failing closed on a broken webhook must not look like a policy decision.
//
// # Caveats
//
// The package does not import authn or any other stage; it reads the user
// through package filters. Audit annotations are recorded by whoever sets
// [FilterConfig].OnDecision. Selectors travel as raw strings in
// [Attributes]; authorizers that narrow by them parse them themselves.
package authz
