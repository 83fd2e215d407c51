package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/storage"
)

// discardWriter is a ResponseWriter that keeps nothing, so a benchmark
// measures the handler, not a recorder's buffer.
type discardWriter struct {
	h    http.Header
	n    int
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *discardWriter) WriteString(s string) (int, error) {
	w.n += len(s)
	return len(s), nil
}

// benchHandler fills a bbolt store with n Environments in ns1 and returns
// the handler and the store.
func benchHandler(b *testing.B, n int) (http.Handler, storage.Interface) {
	b.Helper()
	s := openStore(b)
	h, err := NewHandler(Config{Resources: []Resource{environmentResource(s)}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h))
	defer srv.Close()
	e := &testEnv{store: s, srv: srv}
	for i := range n {
		e.create(b, "ns1", fmt.Sprintf("env-%04d", i), map[string]string{"app": "bench", "tier": "dev"}, "alice")
	}
	return h, s
}

func benchRequest(b *testing.B, path string) *http.Request {
	b.Helper()
	r := httptest.NewRequest("GET", path, nil)
	info, err := filters.RequestInfoResolver{}.Resolve(r)
	if err != nil {
		b.Fatal(err)
	}
	return r.WithContext(filters.WithRequestInfo(r.Context(), info))
}

// rawHandler writes body as a hand-written net/http handler would: the
// reference the handler's overhead is measured against.
func rawHandler(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

func runServe(b *testing.B, h http.Handler, r *http.Request, wantBytes int) {
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != http.StatusOK || w.n != wantBytes {
			b.Fatalf("code %d, %d bytes, want %d", w.code, w.n, wantBytes)
		}
	}
}

// BenchmarkGet compares a GET through the handler (bbolt read + write of
// the stored bytes) with a raw handler writing the same bytes.
func BenchmarkGet(b *testing.B) {
	h, s := benchHandler(b, 1)
	obj, err := s.Get(context.Background(), storage.ObjectKey("platform.example.com", "environments", "ns1", "env-0000"), storage.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	body := append(append([]byte{}, obj.Data...), '\n')
	r := benchRequest(b, envBase+"/namespaces/ns1/environments/env-0000")
	b.Run("handler", func(b *testing.B) { runServe(b, h, r, len(body)) })
	b.Run("raw_reference", func(b *testing.B) { runServe(b, rawHandler(body), r, len(body)) })
	b.Run("storage_only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(context.Background(), obj.Key, storage.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkList compares a LIST of 1000 objects through the handler with a
// raw handler writing the same bytes.
func BenchmarkList(b *testing.B) {
	h, s := benchHandler(b, 1000)
	r := benchRequest(b, envBase+"/namespaces/ns1/environments")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	var l struct{ Items []json.RawMessage }
	if err := json.Unmarshal(body, &l); err != nil || len(l.Items) != 1000 {
		b.Fatalf("list: %v, %d items", err, len(l.Items))
	}
	b.Run("handler", func(b *testing.B) { runServe(b, h, r, len(body)) })
	b.Run("raw_reference", func(b *testing.B) { runServe(b, rawHandler(body), r, len(body)) })
	// The storage List alone: the handler's own cost is the difference.
	b.Run("storage_only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.List(context.Background(), "/platform.example.com/environments/ns1", storage.ListOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same list re-encoded through encoding/json, as a decode/encode
	// server would: what "bytes are canonical" saves.
	b.Run("reencode_reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v map[string]any
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
