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
// event is {"type":"ADDED","object": + bytes + }\n. Writes (create, update)
// decode the request body once into a generic JSON map, apply the registry
// rules, and encode once before storing.
//
// # Errors
//
// Every failure is a *meta.Status written by [filters.WriteStatus];
// [StatusForError] is the one function that maps storage errors to Kubernetes
// Status codes and messages.
//
// # Not yet
//
// PATCH answers 405 MethodNotAllowed and discovery does not advertise it
// (issue 4 implements patches);
// subresources, Table and PartialObjectMetadata output, finalizers and graceful
// deletion, and WatchList (sendInitialEvents, rejected with 422 as an apiserver
// with the feature gate off does) are not implemented.
package rest
