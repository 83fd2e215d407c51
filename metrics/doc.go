// Package metrics records the request metrics kube-apiserver exposes, with the
// same names and labels, so dashboards and alerts written for it work:
// apiserver_request_total{verb, dry_run, group, version, resource,
// subresource, scope, component, code} and apiserver_request_duration_seconds
// (same labels but code), plus annex_request_rejections_total{stage}, which
// names the stage that turned a request away.
//
// # Usage
//
//	m := metrics.New(metrics.Config{Registerer: reg})
//	handler = m.Filter()(handler) // outermost, after the request info is resolved
//
// The registerer is injected; nil records nothing (the filter still runs and
// costs a wrapped ResponseWriter). The global Prometheus registry is never used.
//
// # Cardinality
//
// Label values come from the request path, which clients choose. Config.Known
// says which group/version/resource triples the server serves; requests for
// anything else are counted with resource "other" and empty group and version,
// so a client cannot grow the number of series without bound.
package metrics
