// Package otlp traces a server as kube-apiserver does with
// --tracing-config-file: an OpenTelemetry span per request (its parent taken
// from a traceparent header, as kube-aggregator sends it), a span per stage
// of the chain the request went through (read from the request's
// filters.Trace), and one per storage call (Tracer.Observe, a
// storage.RequestObserver).
//
// # Usage
//
//	cfg, err := otlp.LoadConfiguration("tracing.yaml") // kube's TracingConfiguration
//	t, err := otlp.New(*cfg, "my-server", otlpgrpc.Exporter)
//	annex.SetFilter(stages, annex.StageTracing, t.Filter)
//	store, err := bbolt.Open(path, bbolt.Options{Observer: t.Observe})
//	defer t.Shutdown()
//
// The exporter is given, not linked: package otlpgrpc holds kube's OTLP/gRPC
// one, so that a program that does not trace does not link gRPC.
package otlp
