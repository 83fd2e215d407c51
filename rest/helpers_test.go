package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
)

// testEnv is a handler over a real bbolt store, behind the request-info
// resolver, served by httptest.
type testEnv struct {
	store *bbolt.Store
	srv   *httptest.Server
}

const envBase = "/apis/platform.example.com/v1alpha1"

// environmentResource is the test resource: platform.example.com/v1alpha1
// environments, namespaced, spec owner/tier/replicas, status phase.
func environmentResource(s storage.Interface) Resource {
	return Resource{
		Group: "platform.example.com", Version: "v1alpha1",
		Plural: "environments", Kind: "Environment", Namespaced: true,
		ShortNames: []string{"env"}, Categories: []string{"all"},
		Storage: s,
		Strategy: Strategy{SelectableFields: []string{"spec.owner"},
			ValidateCreate: validateEnvironment,
			ValidateUpdate: func(ctx context.Context, obj, _ Object) field.ErrorList { return validateEnvironment(ctx, obj) },
		},
	}
}

// validateEnvironment rejects a negative spec.replicas.
func validateEnvironment(_ context.Context, obj Object) field.ErrorList {
	spec, _ := obj["spec"].(map[string]any)
	if n, ok := spec["replicas"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v < 0 {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), v, "must be greater than or equal to 0")}
		}
	}
	return nil
}

func openStore(t testing.TB) *bbolt.Store {
	t.Helper()
	s, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newEnv(t testing.TB, mutate func(*Config)) *testEnv {
	t.Helper()
	s := openStore(t)
	cfg := Config{Resources: []Resource{environmentResource(s)}}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h))
	t.Cleanup(srv.Close)
	return &testEnv{store: s, srv: srv}
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

// status decodes the body as a Status.
func (r response) status(t testing.TB) meta.Status {
	t.Helper()
	var s meta.Status
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("body is not a Status: %v: %s", err, r.body)
	}
	return s
}

// object decodes the body as generic JSON.
func (r response) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.body)
	}
	return m
}

// do sends a request; headers come in name, value pairs.
func (e *testEnv) do(t testing.TB, method, path, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

// create posts an Environment and fails the test unless it is created.
func (e *testEnv) create(t testing.TB, ns, name string, labels map[string]string, owner string) map[string]any {
	t.Helper()
	obj := map[string]any{
		"apiVersion": "platform.example.com/v1alpha1", "kind": "Environment",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec":     map[string]any{"owner": owner, "tier": "dev", "replicas": 1},
	}
	b, _ := json.Marshal(obj)
	r := e.do(t, "POST", envBase+"/namespaces/"+ns+"/environments", string(b))
	if r.code != http.StatusCreated {
		t.Fatalf("create %s/%s: %d %s", ns, name, r.code, r.body)
	}
	return r.object(t)
}

// fieldAt walks a dotted path in generic JSON.
func fieldAt(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}
