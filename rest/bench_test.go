package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/schema"
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
	return r.WithContext(filters.ContextWithRequestInfo(r.Context(), info))
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
	r.Header.Set("Accept-Encoding", "gzip") // as every Go client sends it
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

// benchWriteHandler returns a handler over a fresh bbolt store (no fsync)
// serving the test resource changed by mutate, the counter of its JSON
// passes, and the resourceVersion of ns1/env-0000, which it creates.
func benchWriteHandler(b *testing.B, mutate func(*Resource)) (*handler, *atomic.Int64, uint64) {
	return benchConfigHandler(b, func(c *Config) {
		if mutate != nil {
			mutate(&c.Resources[0])
		}
	})
}

// benchConfigHandler is benchWriteHandler with the whole Config to change.
func benchConfigHandler(b *testing.B, mutate func(*Config)) (*handler, *atomic.Int64, uint64) {
	b.Helper()
	s := openStore(b)
	cfg := Config{Resources: []Resource{environmentResource(s)}}
	if mutate != nil {
		mutate(&cfg)
	}
	hh, err := NewHandler(cfg)
	if err != nil {
		b.Fatal(err)
	}
	h := hh.(*handler)
	passes := new(atomic.Int64)
	h.jsonPasses = passes
	w := &discardWriter{h: http.Header{}}
	r := benchWriteRequest(b, "POST", envBase+"/namespaces/ns1/environments", "application/json")
	r.Body = io.NopCloser(strings.NewReader(`{"metadata":{"name":"env-0000"},"spec":{"owner":"alice","tier":"dev","replicas":1}}`))
	h.ServeHTTP(w, r)
	if w.code != http.StatusCreated {
		b.Fatalf("create: %d", w.code)
	}
	obj, err := s.Get(context.Background(), storage.ObjectKey("platform.example.com", "environments", "ns1", "env-0000"), storage.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	passes.Store(0)
	return h, passes, obj.ResourceVersion
}

// benchWriteRequest returns a request with its RequestInfo resolved; the
// caller sets its Body before each use.
func benchWriteRequest(b testing.TB, method, path, contentType string) *http.Request {
	b.Helper()
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("Content-Type", contentType)
	info, err := filters.RequestInfoResolver{}.Resolve(r)
	if err != nil {
		b.Fatal(err)
	}
	return r.WithContext(filters.ContextWithRequestInfo(r.Context(), info))
}

// runWrite serves r once per iteration with the body body(i) returns, checks
// the status code, and reports the JSON passes per request: every decode or
// encode of a whole object, or of its metadata, in the rest write path (the
// handler's jsonPasses counter; a JSON or merge patch's application counts
// as two, json-patch decoding the document and encoding the result).
// Storage's byte-level metadata edits are not counted.
func runWrite(b *testing.B, h *handler, passes *atomic.Int64, r *http.Request, wantCode int, body func(i int) []byte) {
	b.ReportAllocs()
	rd := new(bytes.Reader)
	rc := io.NopCloser(rd)
	n := 0
	passes.Store(0)
	for b.Loop() {
		rd.Reset(body(n))
		r.Body = rc
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != wantCode {
			b.Fatalf("request %d: code %d, want %d", n, w.code, wantCode)
		}
		n++
	}
	b.ReportMetric(float64(passes.Load())/float64(n), "json-passes/op")
}

// BenchmarkCreate measures one create through the handler into bbolt
// (without fsync): decode, registry rules, validation, encode, store,
// respond. Each request creates a new name.
func BenchmarkCreate(b *testing.B) {
	h, passes, _ := benchWriteHandler(b, nil)
	r := benchWriteRequest(b, "POST", envBase+"/namespaces/ns1/environments", "application/json")
	var buf []byte
	runWrite(b, h, passes, r, http.StatusCreated, func(i int) []byte {
		buf = append(buf[:0], `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"bench-`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		return append(buf, `","labels":{"app":"bench","tier":"dev"},"annotations":{"example.com/note":"a benchmark object"}},"spec":{"owner":"alice","tier":"dev","replicas":1}}`...)
	})
}

// BenchmarkUpdate measures one update of the same object through the
// handler into bbolt (without fsync): a PUT carrying the current
// resourceVersion whose spec and status change every time (so generation
// is bumped), the same PUT to the status subresource, and a JSON merge
// patch.
func BenchmarkUpdate(b *testing.B) {
	const path = envBase + "/namespaces/ns1/environments/env-0000"
	phases := []string{"Ready", "Pending"}
	put := func(rv *uint64) func(i int) []byte {
		var buf []byte
		return func(i int) []byte {
			buf = append(buf[:0], `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"env-0000","namespace":"ns1","resourceVersion":"`...)
			buf = strconv.AppendUint(buf, *rv, 10)
			buf = append(buf, `","labels":{"app":"bench","tier":"dev"},"annotations":{"example.com/note":"a benchmark object"}},"spec":{"owner":"alice","tier":"dev","replicas":`...)
			buf = strconv.AppendInt(buf, int64(i%2+1), 10)
			buf = append(buf, `},"status":{"phase":"`...)
			buf = append(buf, phases[i%2]...)
			buf = append(buf, `"}}`...)
			*rv++ // the store's next revision: nothing else writes to it
			return buf
		}
	}
	b.Run("put", func(b *testing.B) {
		h, passes, rv := benchWriteHandler(b, nil)
		runWrite(b, h, passes, benchWriteRequest(b, "PUT", path, "application/json"), http.StatusOK, put(&rv))
	})
	b.Run("put_status", func(b *testing.B) {
		h, passes, rv := benchWriteHandler(b, func(r *Resource) { r.StatusSubresource = true })
		runWrite(b, h, passes, benchWriteRequest(b, "PUT", path+"/status", "application/json"), http.StatusOK, put(&rv))
	})
	b.Run("merge_patch", func(b *testing.B) {
		h, passes, _ := benchWriteHandler(b, nil)
		patches := [][]byte{[]byte(`{"spec":{"replicas":2}}`), []byte(`{"spec":{"replicas":1}}`)}
		runWrite(b, h, passes, benchWriteRequest(b, "PATCH", path, "application/merge-patch+json"), http.StatusOK,
			func(i int) []byte { return patches[i%2] })
	})
}

// BenchmarkCreateDryRun is BenchmarkCreate with ?dryRun=All: the same
// steps with a storage read instead of a write, so the handler's own cost
// is most of the time measured.
func BenchmarkCreateDryRun(b *testing.B) {
	h, passes, _ := benchWriteHandler(b, nil)
	r := benchWriteRequest(b, "POST", envBase+"/namespaces/ns1/environments?dryRun=All", "application/json")
	body := []byte(`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"bench-dry","labels":{"app":"bench","tier":"dev"},"annotations":{"example.com/note":"a benchmark object"}},"spec":{"owner":"alice","tier":"dev","replicas":1}}`)
	runWrite(b, h, passes, r, http.StatusCreated, func(int) []byte { return body })
}

// BenchmarkUpdateDryRun is BenchmarkUpdate's put with ?dryRun=All.
func BenchmarkUpdateDryRun(b *testing.B) {
	h, passes, rv := benchWriteHandler(b, nil)
	r := benchWriteRequest(b, "PUT", envBase+"/namespaces/ns1/environments/env-0000?dryRun=All", "application/json")
	body := []byte(`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"env-0000","namespace":"ns1","resourceVersion":"` +
		strconv.FormatUint(rv, 10) + `","labels":{"app":"bench","tier":"dev"},"annotations":{"example.com/note":"a benchmark object"}},"spec":{"owner":"alice","tier":"dev","replicas":2},"status":{"phase":"Ready"}}`)
	runWrite(b, h, passes, r, http.StatusOK, func(int) []byte { return body })
}

// BenchmarkManagedFields measures what field management costs a write:
// create, PUT and merge patch of the schema'd resource with managedFields
// tracked (the default) and off (Config.DisableManagedFields), and a
// server-side apply; compare on and off of the same run (benchstat).
func BenchmarkManagedFields(b *testing.B) {
	const path = envBase + "/namespaces/ns1/environments/env-0000"
	for _, mode := range []struct {
		name string
		off  bool
	}{{"on", false}, {"off", true}} {
		setup := func(b *testing.B) (*handler, *atomic.Int64, uint64) {
			return benchConfigHandler(b, func(c *Config) {
				c.Resources[0].Schema = schema.MustParseYAML(testSchema)
				c.DisableManagedFields = mode.off
			})
		}
		b.Run("create/"+mode.name, func(b *testing.B) {
			h, passes, _ := setup(b)
			var buf []byte
			runWrite(b, h, passes, benchWriteRequest(b, "POST", envBase+"/namespaces/ns1/environments", "application/json"), http.StatusCreated, func(i int) []byte {
				buf = append(buf[:0], `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"bench-`...)
				buf = strconv.AppendInt(buf, int64(i), 10)
				return append(buf, `","labels":{"app":"bench","tier":"dev"},"annotations":{"example.com/note":"a benchmark object"}},"spec":{"owner":"alice","tier":"dev","replicas":1}}`...)
			})
		})
		b.Run("put/"+mode.name, func(b *testing.B) {
			h, passes, rv := setup(b)
			var buf []byte
			runWrite(b, h, passes, benchWriteRequest(b, "PUT", path+"?fieldManager=editor", "application/json"), http.StatusOK, func(i int) []byte {
				buf = append(buf[:0], `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"env-0000","namespace":"ns1","resourceVersion":"`...)
				buf = strconv.AppendUint(buf, rv, 10)
				buf = append(buf, `","labels":{"app":"bench","tier":"dev"},"annotations":{"example.com/note":"a benchmark object"}},"spec":{"owner":"alice","tier":"dev","replicas":`...)
				buf = strconv.AppendInt(buf, int64(i%2+1), 10)
				rv++
				return append(buf, `}}`...)
			})
		})
		b.Run("merge_patch/"+mode.name, func(b *testing.B) {
			h, passes, _ := setup(b)
			patches := [][]byte{[]byte(`{"spec":{"replicas":2}}`), []byte(`{"spec":{"replicas":1}}`)}
			runWrite(b, h, passes, benchWriteRequest(b, "PATCH", path+"?fieldManager=patcher", "application/merge-patch+json"), http.StatusOK,
				func(i int) []byte { return patches[i%2] })
		})
	}
	b.Run("apply", func(b *testing.B) {
		h, passes, _ := benchConfigHandler(b, func(c *Config) { c.Resources[0].Schema = schema.MustParseYAML(testSchema) })
		applies := [][]byte{
			[]byte("apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: env-0000\nspec:\n  owner: alice\n  replicas: 2\n"),
			[]byte("apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: env-0000\nspec:\n  owner: alice\n  replicas: 1\n"),
		}
		runWrite(b, h, passes, benchWriteRequest(b, "PATCH", path+"?fieldManager=applier&force=true", "application/apply-patch+yaml"), http.StatusOK,
			func(i int) []byte { return applies[i%2] })
	})
}
