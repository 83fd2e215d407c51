// This file holds the tracer and kube's TracingConfiguration file.

package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/metrics"
	"github.com/annexapi/annex/storage"
)

// Configuration is kube's apiserver.config.k8s.io
// TracingConfiguration (the --tracing-config-file).
type Configuration struct {
	// Endpoint is the OTLP/gRPC collector, host:port (plaintext, as kube's).
	// Zero means localhost:4317.
	Endpoint string `json:"endpoint,omitempty"`
	// SamplingRatePerMillion is how many requests in a million start a
	// trace; a request whose traceparent is sampled is traced whatever it
	// is. Nil means 0: only those.
	SamplingRatePerMillion *int32 `json:"samplingRatePerMillion,omitempty"`
}

// LoadConfiguration reads a TracingConfiguration file (YAML or JSON;
// apiserver.config.k8s.io v1, v1beta1 or v1alpha1).
func LoadConfiguration(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		APIVersion             string `yaml:"apiVersion"`
		Kind                   string `yaml:"kind"`
		Endpoint               string `yaml:"endpoint"`
		SamplingRatePerMillion *int32 `yaml:"samplingRatePerMillion"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch doc.APIVersion {
	case "apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1":
	default:
		return nil, fmt.Errorf("%s: apiVersion %q is not apiserver.config.k8s.io/v1, v1beta1 or v1alpha1", path, doc.APIVersion)
	}
	if doc.Kind != "TracingConfiguration" {
		return nil, fmt.Errorf("%s: kind %q is not TracingConfiguration", path, doc.Kind)
	}
	c := &Configuration{Endpoint: doc.Endpoint, SamplingRatePerMillion: doc.SamplingRatePerMillion}
	return c, c.Validate()
}

// Validate checks the sampling rate.
func (c *Configuration) Validate() error {
	if r := c.SamplingRatePerMillion; r != nil && (*r < 0 || *r > 1000000) {
		return fmt.Errorf("samplingRatePerMillion: Invalid value: %d: sampling rate must be between 0 and 1000000", *r)
	}
	return nil
}

// Exporter returns the exporter of a server's spans to endpoint, the
// Configuration's (localhost:4317 by default): package otlpgrpc's Exporter
// is kube-apiserver's OTLP/gRPC.
type Exporter func(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error)

// Tracer is a server's tracing: the provider (shut down with the server)
// and the tracer of its spans. Its methods are safe for concurrent use.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
}

// New starts the exporter (to c's endpoint) and the provider of spans named
// for service, sampled as c says.
func New(c Configuration, service string, exporter Exporter) (*Tracer, error) {
	if exporter == nil {
		return nil, errors.New("no exporter (otlpgrpc.Exporter is kube's OTLP/gRPC)")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ep := c.Endpoint
	if ep == "" {
		ep = "localhost:4317"
	}
	exp, err := exporter(context.Background(), ep)
	if err != nil {
		return nil, err
	}
	var rate float64
	if c.SamplingRatePerMillion != nil {
		rate = float64(*c.SamplingRatePerMillion) / 1e6
	}
	res := sdkresource.NewSchemaless(attribute.String("service.name", service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(rate))))
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/annexapi/annex"),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}, nil
}

// Filter starts the request's span (a child of its traceparent), runs the
// rest of the chain, then adds a span per stage the request went through,
// from the chain's stage trace (the annex.StageTracing row). A nil Tracer's
// filter is next: tracing off.
func (t *Tracer) Filter(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		begin := time.Now()
		ctx, span := t.tracer.Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(begin),
			trace.WithAttributes(attribute.String("http.method", r.Method), attribute.String("http.target", r.URL.RequestURI()),
				attribute.String("user_agent.original", r.UserAgent()), attribute.String("net.peer.addr", r.RemoteAddr)))
		rw := filters.WrapResponseWriter(w)
		next.ServeHTTP(rw, r.WithContext(ctx))
		end := time.Now()
		code := rw.Status()
		if code == 0 {
			code = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.status_code", code), attribute.String("audit-id", filters.AuditIDFrom(r.Context())))
		if st := filters.TraceFrom(r.Context()); st != nil && span.IsRecording() {
			at := st.Start()
			for name, d := range st.Latencies() {
				from := at
				if at = at.Add(d); at.After(end) {
					at = end
				}
				if name == filters.StepAdmission || name == filters.StepStorage || !at.After(begin) {
					continue // handler steps (storage calls have spans of their own), or stages before this one
				}
				if from.Before(begin) {
					from = begin // the stage this filter is in began before its span
				}
				_, s := t.tracer.Start(ctx, name, trace.WithTimestamp(from))
				s.End(trace.WithTimestamp(at))
			}
		}
		span.End(trace.WithTimestamp(end))
	})
}

// Observe adds a span for a storage call, in the request's trace: a
// storage.RequestObserver for the backends' Observer option.
func (t *Tracer) Observe(ctx context.Context, op, key string, start time.Time, took time.Duration) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	group, resource := metrics.KeyResource(key)
	_, s := t.tracer.Start(ctx, "storage."+op, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("key", key), attribute.String("group", group), attribute.String("resource", resource)))
	s.End(trace.WithTimestamp(start.Add(took)))
}

// Shutdown flushes the spans still buffered.
func (t *Tracer) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := t.provider.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the collector went away: nothing more to do
	}
	return err
}

var _ storage.RequestObserver = (*Tracer)(nil).Observe
