package annex_test

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/otlp/otlpgrpc"
)

// otlpReceiver is an in-process OTLP/gRPC trace collector.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestTracingExportsSpans runs a server with a TracingConfiguration file
// pointing at an in-process OTLP receiver: a request carrying a sampled
// traceparent (as kube-aggregator forwards it) is one server span, child of
// the caller's, with a span per stage and one per storage call; a request
// without one is not traced (samplingRatePerMillion 0).
func TestTracingExportsSpans(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &otlpReceiver{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, rcv)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	cfg := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: "+ln.Addr().String()+"\nsamplingRatePerMillion: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, annex.Builder{Observability: annex.Observability{TracingConfigFile: cfg, TraceExporter: otlpgrpc.Exporter}})
	coll := ts.URL + "/apis/test.annex.dev/v1/namespaces/t/widgets"
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", coll, strings.NewReader(`{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"traced"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if code, _ := do(t, ts.Client(), "GET", coll+"/traced", ""); code != 200 { // no traceparent: not sampled
		t.Fatalf("get: %d", code)
	}
	if err := ts.Close(); err != nil { // Run's end flushes the spans
		t.Fatal(err)
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var server *tracepb.Span
	names := map[string]*tracepb.Span{}
	for _, s := range rcv.spans {
		if hex.EncodeToString(s.TraceId) != traceID {
			t.Errorf("span %q of another trace %x (the untraced GET?)", s.Name, s.TraceId)
			continue
		}
		names[s.Name] = s
		if s.Name == "HTTP POST" {
			server = s
		}
	}
	if server == nil || hex.EncodeToString(server.ParentSpanId) != parentID || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Fatalf("no server span child of the traceparent: %v", names)
	}
	for _, want := range []string{"authentication", "impersonation", "flowcontrol", "authorization", "storage.create"} {
		s, ok := names[want]
		if !ok {
			t.Errorf("no %q span (have %d spans)", want, len(rcv.spans))
			continue
		}
		if string(s.ParentSpanId) != string(server.SpanId) || s.StartTimeUnixNano < server.StartTimeUnixNano || s.EndTimeUnixNano > server.EndTimeUnixNano {
			t.Errorf("span %q is not within the request's span", want)
		}
	}
}

// TestTracingNeedsAnExporter: a tracing configuration in a program that
// linked no exporter is a Build error naming the setting, not a silent
// no-op.
func TestTracingNeedsAnExporter(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := (&annex.Builder{DataDir: t.TempDir(), Observability: annex.Observability{TracingConfigFile: cfg}}).Build()
	if err == nil || !strings.Contains(err.Error(), "TracingConfigFile") || !strings.Contains(err.Error(), "no trace exporter") {
		t.Fatalf("Build = %v", err)
	}
}
