package audit_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/filters"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the chain rather than a recorder.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkFilter compares a GET and a create through request info,
// authentication stand-in and audit, with no audit, audit at Metadata level
// and at RequestResponse level, the log backend writing to io.Discard (the
// cost of audit itself) or to a real file, in the request's goroutine
// (blocking, kube's default for the log) or from the backend's (batch).
// Compare within one run; on a shared machine compare cpu-ns/op (the CPU
// the process spent per request, the batch writer's included), which other
// processes do not inflate as they do ns/op.
func BenchmarkFilter(b *testing.B) {
	object := `{"apiVersion":"example.annex.dev/v1","kind":"Environment","metadata":{"name":"e1","namespace":"ns1","uid":"0b6e3a5c-3c1d-4c57-9a52-0c8b5f7d8e21","resourceVersion":"12345","labels":{"team":"platform"}},"spec":{"tier":"prod","replicas":3,"owner":"` + strings.Repeat("x", 700) + `"}}`
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(r.Body)
		}
		filters.RecordAuthorizationDecision(r.Context(), true, "", nil)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(object))
	})
	const (
		metadata = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
		both     = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
		rr       = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n"
	)
	levels := []struct {
		name    string
		policy  string
		mode    audit.Mode
		batch   int  // batch mode's MaxBatchSize; 0: kube's default for the log, 1
		discard bool // io.Discard instead of a file: the cost without I/O
	}{
		{"none", "", "", 0, false},
		{"metadata_discard", metadata, "", 0, true},
		{"metadata_file_blocking", metadata, audit.ModeBlocking, 0, false},
		{"metadata_file_batch", metadata, audit.ModeBatch, 0, false},
		{"metadata_both_stages_file_batch", both, audit.ModeBatch, 0, false},
		{"metadata_both_stages_file_batch400", both, audit.ModeBatch, 400, false},
		{"metadata_both_stages_file_blocking", both, audit.ModeBlocking, 0, false},
		{"request_response_discard", rr, "", 0, true},
		{"request_response_file_batch", rr, audit.ModeBatch, 0, false},
	}
	for _, verb := range []string{"get", "create"} {
		for _, l := range levels {
			b.Run(verb+"/"+l.name, func(b *testing.B) {
				var a *audit.Auditor
				stop := func() {}
				if l.policy != "" {
					var err error
					lc := audit.LogConfig{Path: filepath.Join(b.TempDir(), "audit.log"), Batch: audit.BatchConfig{Mode: l.mode, MaxBatchSize: l.batch}}
					if l.discard {
						lc = audit.LogConfig{Writer: io.Discard}
					}
					a, err = audit.New(audit.Config{Policy: mustPolicy(b, l.policy), Log: lc})
					if err != nil {
						b.Fatal(err)
					}
					stop = startAuditor(b, a)
				}
				h := chain(a, &filters.User{Name: "alice", Groups: []string{"system:authenticated"}}, nil, handler)
				w := &discardWriter{h: http.Header{}}
				uri, method := envURI+"/e1", "GET"
				if verb == "create" {
					uri, method = envURI, "POST"
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				for b.Loop() {
					var body *strings.Reader
					r := httptest.NewRequest(method, uri, nil)
					if verb == "create" {
						body = strings.NewReader(object)
						r.Body, r.ContentLength = readCloser{body}, int64(len(object))
						r.Header.Set("Content-Type", "application/json")
					}
					clear(w.h)
					h.ServeHTTP(w, r)
				}
				stop() // the batch writer's last writes count too
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
