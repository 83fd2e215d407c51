package otlp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/annexapi/annex/otlp"
)

// served is a handler that records that it was reached.
type served struct{ reached bool }

func (s *served) ServeHTTP(http.ResponseWriter, *http.Request) { s.reached = true }

// TestNilTracerFilterIsNext: a nil Tracer (tracing off) filters nothing:
// its Filter is next itself, as a nil audit.Auditor's is, never a wrapper
// that would dereference the Tracer on the first request.
func TestNilTracerFilterIsNext(t *testing.T) {
	t.Parallel()
	next := &served{}
	var tr *otlp.Tracer
	h := tr.Filter(next)
	if h != http.Handler(next) {
		t.Fatalf("nil Tracer's Filter returned %T, want next", h)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if !next.reached {
		t.Error("the request did not reach next")
	}
}
