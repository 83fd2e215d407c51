// Package otlp exports a server's trace spans the way kube-apiserver does
// for --tracing-config-file: OTLP over gRPC, plaintext, to the configured
// endpoint. It is its own package so that only programs that trace link
// gRPC: set annex.Builder.TraceExporter to GRPCExporter.
//
//	b := annex.Builder{TraceExporter: otlp.GRPCExporter}
//	b.AddPFlags(fs) // --tracing-config-file now exports
package otlp
