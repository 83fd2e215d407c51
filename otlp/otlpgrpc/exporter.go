// Package otlpgrpc is kube-apiserver's trace exporter: OTLP over gRPC,
// plaintext, to the endpoint of the TracingConfiguration. It is a package
// of its own so that only programs that trace link gRPC:
//
//	b := annex.Builder{}
//	b.Observability.TraceExporter = otlpgrpc.Exporter // --tracing-config-file now exports
package otlpgrpc

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/annexapi/annex/otlp"
)

// Exporter returns an OTLP/gRPC span exporter to endpoint (host:port),
// without TLS, as kube-apiserver's tracing exports.
func Exporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
}

var _ otlp.Exporter = Exporter
