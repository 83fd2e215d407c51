// Package rest serves declared resources over HTTP the way k8s.io/apiserver's
// generic registry does: create, get, list, update, delete, deletecollection
// and watch on each [Resource], plus legacy and aggregated (v2) discovery.
//
// # Usage
//
//	h, err := rest.NewHandler(rest.Config{
//		Resources: []rest.Resource{{
//			Group: "platform.example.com", Version: "v1alpha1",
//			Plural: "environments", Kind: "Environment", Namespaced: true,
//			Storage: store,
//		}},
//	})
//
// The handler dispatches on the [filters.RequestInfo] an earlier filter put in
// the request context (filters' request-info resolver); it never parses
// resource paths itself. Discovery paths (/apis, /apis/<g>, /apis/<g>/<v>) are
// recognised by path.
//
// # Bytes are canonical
//
// Reads never decode or re-encode an object. A GET writes the stored bytes; a
// LIST writes a prefix, the items' bytes joined by commas and a suffix; a watch
// event is {"type":"ADDED","object": + bytes + }\n.
//
// A write decodes the request body once into a generic JSON map (numbers as
// json.Number), applies the registry rules and admission to that map, and
// encodes it once to store it. An update also decodes the stored object once
// (the old object hooks and admission see); a patch is applied to the stored
// bytes (json-patch decodes them and encodes the result) and the result is
// decoded once; a delete decodes the stored object only for admission. A
// storage conflict retries the try, passes included. Metadata validation,
// the generation check and the status subresource work on the decoded
// values, not on JSON. TestWriteJSONPasses holds these counts.
//
// # Versions
//
// Resources with the same Group and Plural are the versions of one resource
// (Resource.StorageVersion marks the one objects are stored at). Stored
// bytes already at the requested version are served as they are, which is
// the usual case at the storage version; others are decoded, converted
// (Resource.Conversion: ConversionFuncs, a conversion webhook from package
// conversion, or None) and encoded, once per LIST for all its items, once
// per event and version for watches. Writes convert to the storage version
// just before the one encode. Admission rules written for another served
// version see the object converted to it (attrs.Admission.AtVersion).
//
// # Which validation to use
//
// Three mechanisms check a write, run in this order, and refuse it with
// kube's 422 Invalid; use the first one that can say what you mean:
//
//   - The schema (Resource.Schema, an OpenAPI v3 structural schema with
//     x-kubernetes-validations CEL rules): types, formats, enums, ranges,
//     required fields, and rules over one object, including transition
//     rules (oldSelf). It is declarative, shown by kubectl explain, the
//     same as a CRD's, and checked before anything runs.
//   - Strategy hooks (ValidateCreate, ValidateUpdate, ValidateStatusUpdate,
//     returning field.ErrorList): Go code for what a schema cannot say
//     (a checksum, a parse, a rule over several fields with a loop), for
//     your own resource only. ValidateUpdate does not run on /status writes
//     and can let metadata-only edits through (MetadataOnly). A hook's
//     cause identical to one the schema (or the hook) already gave is
//     listed once.
//   - Admission (Builder.Admission.Validators, ValidatingAdmissionPolicy files,
//     webhooks): policy that spans resources or depends on who asks, or that
//     an operator adds without rebuilding the server; it also sees deletes.
//
// # The write path
//
// Create, update, patch and delete go through named steps, in
// k8s.io/apiserver's order: decode, (update: carryOver), admit (mutating),
// prepare (one prepareCreate for a POST and for a PUT that creates, or
// prepareUpdate), validate, admit (validating), store, respond. An update's
// steps up to validating admission run inside storage's guaranteed update,
// once per try. The attributes admission sees are an [attrs.Admission],
// the type package admission takes, so an *admission.Chain is an [Admitter].
//
// # Errors
//
// Every failure is a *meta.Status written by [filters.WriteStatus];
// [StatusForError] is the one function that maps storage errors to Kubernetes
// Status codes and messages.
//
// # Output, patch, validation, admission
//
// Accept negotiation serves Table (kubectl get: a name column, the declared
// [PrinterColumn]s or Age, row objects per includeObject) and
// PartialObjectMetadata(List) for get, list and watch, and answers JSON to an
// Accept that lists protobuf first. PATCH takes JSON patch and merge patch
// (github.com/evanphx/json-patch/v5) inside storage's guaranteed update, with
// a resourceVersion in the patch as a precondition; strategic merge and apply
// patches get 415, as for a CRD. A [Resource.Schema] prunes and defaults
// writes, with fieldValidation Strict (400), Warn (default, Warning headers)
// or Ignore, and is published at /openapi/v2 and /openapi/v3. An [Admitter]
// in [Config] runs mutating and validating admission on every write, again on
// every conflict retry. [Resource.StatusSubresource] serves <plural>/status.
// A watch-list (sendInitialEvents=true) is served when the store implements
// [InitialEventsSender] (the watch cache), else refused with 422.
//
// # Computed resources
//
// A resource that is not stored (metrics-server's NodeMetrics, computed on
// read) sets [Resource.Getter] and/or [Resource.Lister] instead of Storage.
// It serves get and list only, with label and field selectors applied to
// what the Lister returns, Table output from its PrinterColumns, and list
// metadata {} (no resourceVersion). Watch answers 405 as k8s does for a store
// that cannot watch, unless the resource has [Resource.Events]: its watch is
// then served from a watch cache over those events (the Builder's
// watch.OnDemand, which runs the events only while someone watches, priming
// its cache from the [EventSource]'s current state each time), with
// bookmarks and WatchList. Writes answer the 405 MethodNotAllowed
// k8s.io/apiserver gives a method without a route. Discovery lists only the
// served verbs.
//
// # Deletion
//
// As for custom resources: an object whose finalizers (its own, or the
// orphan or foregroundDeletion finalizer its propagationPolicy adds) hold it
// is marked with deletionTimestamp and stays until an update removes the
// last one, which deletes it in the same storage write
// (storage.ErrDeleteInstead); kube-controller-manager's garbage collector
// and namespace controller work with it behind kube-aggregator.
//
// # Not yet
//
// Strategic merge patch, server-side apply and the scale subresource are not
// implemented.
package rest
