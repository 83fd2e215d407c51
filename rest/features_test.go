package rest

import (
	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/attrs"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

const testSchema = `
type: object
description: An Environment.
properties:
  spec:
    type: object
    properties:
      owner: {type: string}
      tier: {type: string, description: The tier., default: dev}
      replicas: {type: integer}
  status:
    type: object
    properties:
      phase: {type: string}
`

// newFeatureEnv is newEnv with a schema, printer columns, the status
// subresource and the warnings filter.
func newFeatureEnv(t *testing.T, mutate func(*Config)) *testEnv {
	t.Helper()
	s := openStore(t)
	r := environmentResource(s)
	r.Schema = schema.MustParseYAML(testSchema)
	r.StatusSubresource = true
	r.PrinterColumns = []PrinterColumn{
		{Name: "Tier", Type: "string", JSONPath: ".spec.tier"},
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas", Priority: 1},
	}
	cfg := Config{Resources: []Resource{r}}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	chain := filters.WithWarningRecorder(filters.WarningRecorderConfig{})(h)
	srv := httptest.NewServer(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(chain))
	t.Cleanup(srv.Close)
	return &testEnv{store: s, srv: srv}
}

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

func TestTable(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	e.create(t, "ns1", "a", map[string]string{"app": "x"}, "alice")
	r := e.do(t, "GET", envBase+"/namespaces/ns1/environments", "", "Accept", tableAccept)
	var tbl meta.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil || r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if tbl.Kind != "Table" || tbl.APIVersion != "meta.k8s.io/v1" || len(tbl.ColumnDefinitions) != 3 {
		t.Fatalf("table = %s", r.body)
	}
	if c := tbl.ColumnDefinitions[0]; c.Name != "Name" || c.Format != "name" {
		t.Errorf("first column = %+v", c)
	}
	if c := tbl.ColumnDefinitions[2]; c.Name != "Replicas" || c.Priority != 1 || c.Type != "integer" {
		t.Errorf("replicas column = %+v", c)
	}
	if len(tbl.Rows) != 1 {
		t.Fatalf("rows = %d", len(tbl.Rows))
	}
	cells, _ := json.Marshal(tbl.Rows[0].Cells)
	if string(cells) != `["a","dev",1]` {
		t.Errorf("cells = %s", cells)
	}
	var pom struct {
		Kind     string         `json:"kind"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(tbl.Rows[0].Object, &pom); err != nil || pom.Kind != "PartialObjectMetadata" || pom.Metadata["namespace"] != "ns1" {
		t.Errorf("row object = %s", tbl.Rows[0].Object)
	}
	// includeObject=None leaves the row object out; a single GET is one row.
	r = e.do(t, "GET", envBase+"/namespaces/ns1/environments/a?includeObject=None", "", "Accept", tableAccept)
	if !strings.Contains(string(r.body), `"object":null`) || !strings.Contains(string(r.body), `"cells":["a","dev",1]`) {
		t.Errorf("single table = %s", r.body)
	}
	// Default columns: Name and Age.
	e2 := newEnv(t, nil)
	e2.create(t, "ns1", "a", nil, "alice")
	r = e2.do(t, "GET", envBase+"/namespaces/ns1/environments", "", "Accept", tableAccept)
	if !strings.Contains(string(r.body), `"name":"Age","type":"date"`) {
		t.Errorf("default columns = %s", r.body)
	}
}

func TestPartialObjectMetadata(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	e.create(t, "ns1", "a", nil, "alice")
	accept := "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	r := e.do(t, "GET", envBase+"/environments", "", "Accept", accept)
	m := r.object(t)
	items, _ := m["items"].([]any)
	if m["kind"] != "PartialObjectMetadataList" || len(items) != 1 || fieldAt(items[0].(map[string]any), "kind") != "PartialObjectMetadata" {
		t.Fatalf("list = %s", r.body)
	}
	if fieldAt(items[0].(map[string]any), "spec") != nil {
		t.Errorf("item carries spec: %s", r.body)
	}
	r = e.do(t, "GET", envBase+"/environments", "", "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	if r.code != 406 || !strings.Contains(string(r.body), "you requested PartialObjectMetadata, but the requested object is a list") {
		t.Errorf("PartialObjectMetadata on a list: %d %s", r.code, r.body)
	}
	r = e.do(t, "GET", envBase+"/namespaces/ns1/environments/a", "", "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	if m := r.object(t); m["kind"] != "PartialObjectMetadata" || fieldAt(m, "metadata", "name") != "a" {
		t.Errorf("get = %s", r.body)
	}
}

func TestWatchOutputs(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	e.create(t, "ns1", "a", nil, "alice")
	ws := e.watchAccept(t, envBase+"/environments?watch=true&resourceVersion=0", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	ev := ws.next(t)
	if ev.Type != "ADDED" || ev.Object["kind"] != "PartialObjectMetadata" {
		t.Fatalf("partial event = %+v", ev)
	}
	tw := e.watchAccept(t, envBase+"/environments?watch=true&resourceVersion=0", tableAccept)
	ev = tw.next(t)
	if ev.Type != "ADDED" || ev.Object["kind"] != "Table" || ev.Object["columnDefinitions"] == nil {
		t.Fatalf("first table event = %+v", ev)
	}
	e.create(t, "ns1", "b", nil, "bob")
	ev = tw.next(t)
	if ev.Type != "ADDED" || ev.Object["columnDefinitions"] != nil || len(ev.Object["rows"].([]any)) != 1 {
		t.Fatalf("later table event = %+v", ev)
	}
}

func TestWatchListWithoutCache(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	r := e.do(t, "GET", envBase+"/environments?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", "")
	if r.code != 422 || !strings.Contains(string(r.body), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled") {
		t.Fatalf("%d %s", r.code, r.body)
	}
}

func TestPatch(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	a := e.create(t, "ns1", "a", nil, "alice")
	path := envBase + "/namespaces/ns1/environments/a"
	tests := []struct {
		name, ct, body string
		code           int
		check          func(t *testing.T, m map[string]any)
	}{
		{name: "merge", ct: "application/merge-patch+json", body: `{"spec":{"replicas":3}}`, code: 200,
			check: func(t *testing.T, m map[string]any) {
				if fieldAt(m, "spec", "replicas") != float64(3) || fieldAt(m, "metadata", "generation") != float64(2) {
					t.Errorf("merged = %v", m)
				}
			}},
		{name: "json", ct: "application/json-patch+json", body: `[{"op":"replace","path":"/spec/owner","value":"bob"}]`, code: 200,
			check: func(t *testing.T, m map[string]any) {
				if fieldAt(m, "spec", "owner") != "bob" {
					t.Errorf("patched = %v", m)
				}
			}},
		{name: "json_test_fails", ct: "application/json-patch+json", body: `[{"op":"test","path":"/spec/owner","value":"zed"}]`, code: 422},
		{name: "bad_json_patch", ct: "application/json-patch+json", body: `{"op":"x"}`, code: 400},
		{name: "strategic_is_415", ct: "application/strategic-merge-patch+json", body: `{}`, code: 415},
		{name: "apply_needs_field_manager", ct: "application/apply-patch+yaml", body: `{}`, code: 422},
		{name: "stale_rv_conflicts", ct: "application/merge-patch+json", body: `{"metadata":{"resourceVersion":"` + fieldAt(a, "metadata", "resourceVersion").(string) + `"}}`, code: 409},
		{name: "status_ignored", ct: "application/merge-patch+json", body: `{"status":{"phase":"X"}}`, code: 200,
			check: func(t *testing.T, m map[string]any) {
				if fieldAt(m, "status") != nil {
					t.Errorf("main patch set status: %v", m)
				}
			}},
		{name: "force_forbidden", ct: "application/merge-patch+json", body: `{}`, code: 422},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			if tc.name == "force_forbidden" {
				p += "?force=true"
			}
			r := e.do(t, "PATCH", p, tc.body, "Content-Type", tc.ct)
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			if tc.check != nil {
				tc.check(t, r.object(t))
			}
		})
	}
	r := e.do(t, "PATCH", envBase+"/namespaces/ns1/environments/missing", `{}`, "Content-Type", "application/merge-patch+json")
	if r.code != 404 {
		t.Errorf("patch of a missing object: %d", r.code)
	}
	r = e.do(t, "PATCH", path+"/status", `{"status":{"phase":"Ready"},"spec":{"owner":"eve"}}`, "Content-Type", "application/merge-patch+json")
	if m := r.object(t); fieldAt(m, "status", "phase") != "Ready" || fieldAt(m, "spec", "owner") != "bob" {
		t.Errorf("status patch = %s", r.body)
	}
}

func TestFieldValidation(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	body := `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"a"},"spec":{"owner":"x","colour":"blue","size":1}}`
	base := envBase + "/namespaces/ns1/environments"
	r := e.do(t, "POST", base+"?fieldValidation=Strict", body)
	want := `Environment in version "v1alpha1" cannot be handled as a Environment: strict decoding error: unknown field "spec.colour", unknown field "spec.size"`
	if s := r.status(t); r.code != 400 || s.Reason != meta.StatusReasonBadRequest || s.Message != want {
		t.Fatalf("strict: %d %q", r.code, s.Message)
	}
	r = e.do(t, "POST", base+"?fieldValidation=Bogus", body)
	if r.code != 422 {
		t.Fatalf("bogus fieldValidation: %d %s", r.code, r.body)
	}
	r = e.do(t, "POST", base, body)
	if r.code != 201 {
		t.Fatalf("warn: %d %s", r.code, r.body)
	}
	if got := strings.Join(r.header.Values("Warning"), "|"); !strings.Contains(got, `299 - "unknown field \"spec.colour\""`) {
		t.Errorf("Warning = %q", got)
	}
	m := r.object(t)
	if fieldAt(m, "spec", "colour") != nil || fieldAt(m, "spec", "tier") != "dev" {
		t.Errorf("not pruned and defaulted: %s", r.body)
	}
	r = e.do(t, "POST", base+"?fieldValidation=Ignore", strings.Replace(body, `"a"`, `"b"`, 1))
	if r.code != 201 || len(r.header.Values("Warning")) != 0 {
		t.Errorf("ignore: %d %v", r.code, r.header.Values("Warning"))
	}
}

func TestAdmission(t *testing.T) {
	t.Parallel()
	var calls []string
	adm := AdmitterFuncs{
		MutateFunc: func(_ context.Context, a *attrs.Admission) error {
			calls = append(calls, "mutate "+a.Operation)
			if a.Object != nil {
				md := metadata(a.Object)
				labels, _ := md["labels"].(map[string]any)
				if labels == nil {
					labels = map[string]any{}
					md["labels"] = labels
				}
				labels["mutated"] = "true"
			}
			return nil
		},
		ValidateFunc: func(_ context.Context, a *attrs.Admission) error {
			calls = append(calls, "validate "+a.Operation)
			name := a.Name
			switch {
			case name == "denied":
				return meta.NewForbidden(meta.GroupResource{Group: a.Group, Resource: a.Resource}, name, "policy says no")
			case name == "broken":
				return errors.New("webhook down")
			case a.Operation == attrs.Delete && str(metadata(a.OldObject), "name") == "keep":
				return meta.NewForbidden(meta.GroupResource{Group: a.Group, Resource: a.Resource}, "keep", "kept")
			}
			return nil
		},
	}
	e := newFeatureEnv(t, func(c *Config) { c.Admission = adm })
	m := e.create(t, "ns1", "a", nil, "alice")
	if fieldAt(m, "metadata", "labels", "mutated") != "true" {
		t.Errorf("mutation not stored: %v", m)
	}
	if strings.Join(calls, ",") != "mutate CREATE,validate CREATE" {
		t.Errorf("calls = %v", calls)
	}
	base := envBase + "/namespaces/ns1/environments"
	r := e.do(t, "POST", base, `{"metadata":{"name":"denied"},"spec":{"owner":"x"}}`)
	if r.code != 403 || r.status(t).Reason != meta.StatusReasonForbidden {
		t.Errorf("denied: %d %s", r.code, r.body)
	}
	r = e.do(t, "POST", base, `{"metadata":{"name":"broken"},"spec":{"owner":"x"}}`)
	if r.code != 500 {
		t.Errorf("broken: %d %s", r.code, r.body)
	}
	e.create(t, "ns1", "keep", nil, "alice")
	if r = e.do(t, "DELETE", base+"/keep", ""); r.code != 403 {
		t.Errorf("delete keep: %d %s", r.code, r.body)
	}
	calls = nil
	if r = e.do(t, "PATCH", base+"/a", `{"spec":{"replicas":2}}`, "Content-Type", "application/merge-patch+json"); r.code != 200 {
		t.Fatalf("patch: %d %s", r.code, r.body)
	}
	if strings.Join(calls, ",") != "mutate UPDATE,validate UPDATE" {
		t.Errorf("patch calls = %v", calls)
	}
}

func TestOpenAPIEndpoints(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	r := e.do(t, "GET", "/openapi/v2", "", "Accept", "application/json")
	etag := r.header.Get("ETag")
	if r.code != 200 || etag == "" || !strings.Contains(string(r.body), `"swagger":"2.0"`) {
		t.Fatalf("v2: %d %q", r.code, etag)
	}
	if r = e.do(t, "GET", "/openapi/v2", "", "If-None-Match", etag); r.code != 304 {
		t.Errorf("v2 If-None-Match: %d", r.code)
	}
	// client-go's OpenAPISchema asks for protobuf: kube-openapi's form,
	// gnostic's openapi_v2.Document, with the same definitions.
	r = e.do(t, "GET", "/openapi/v2", "", "Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	var doc openapiv2.Document
	if r.code != 200 || r.header.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" || r.header.Get("ETag") != etag {
		t.Fatalf("v2 protobuf: %d %q %q", r.code, r.header.Get("Content-Type"), r.header.Get("ETag"))
	}
	if err := proto.Unmarshal(r.body, &doc); err != nil || doc.GetSwagger() != "2.0" || len(doc.GetDefinitions().GetAdditionalProperties()) == 0 {
		t.Fatalf("v2 protobuf does not decode as an OpenAPI v2 document: %v (swagger %q)", err, doc.GetSwagger())
	}
	if r = e.do(t, "GET", "/openapi/v2", "", "Accept", "application/vnd.kubernetes.protobuf"); r.code != 406 {
		t.Errorf("v2 as kube's object protobuf: %d, want 406", r.code)
	}
	r = e.do(t, "GET", "/openapi/v3", "")
	var root struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &root); err != nil {
		t.Fatal(err)
	}
	u := root.Paths["apis/platform.example.com/v1alpha1"].URL
	if !strings.HasPrefix(u, "/openapi/v3/apis/platform.example.com/v1alpha1?hash=") {
		t.Fatalf("root = %s", r.body)
	}
	r = e.do(t, "GET", u, "", "Accept", "application/json")
	if r.code != 200 || r.header.Get("Cache-Control") != "public, immutable" || !strings.Contains(string(r.body), "fieldValidation") {
		t.Errorf("gv doc: %d %q", r.code, r.header.Get("Cache-Control"))
	}
	if r = e.do(t, "GET", "/openapi/v3/apis/platform.example.com/v1alpha1?hash=stale", ""); r.code != 200 || r.header.Get("Cache-Control") == "public, immutable" {
		t.Errorf("stale hash: %d %q", r.code, r.header.Get("Cache-Control"))
	}
	if r = e.do(t, "GET", "/openapi/v3/apis/other/v1", ""); r.code != 404 {
		t.Errorf("unknown gv: %d", r.code)
	}
	d := e.do(t, "GET", envBase, "")
	if !strings.Contains(string(d.body), `"name":"environments/status"`) || !strings.Contains(string(d.body), `"patch"`) {
		t.Errorf("discovery = %s", d.body)
	}
}

func TestJSONPath(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"items": []any{map[string]any{"n": "a"}, map[string]any{"n": "b"}}, "x": "y"}}
	tests := []struct {
		path string
		want string
		err  bool
	}{
		{path: ".spec.x", want: "y"},
		{path: "{.spec.items[1].n}", want: "b"},
		{path: ".spec.items[*].n", want: "a,b"},
		{path: ".spec.missing", want: "<nil>"},
		{path: "spec", err: true},
		{path: ".spec[", err: true},
	}
	for _, tc := range tests {
		steps, err := parseJSONPath(tc.path)
		if (err != nil) != tc.err {
			t.Fatalf("%s: err = %v", tc.path, err)
		}
		if err != nil {
			continue
		}
		got := cell("string", evalPath(obj, steps), timeZero())
		if s := toString(got); s != tc.want {
			t.Errorf("%s = %s, want %s", tc.path, s, tc.want)
		}
	}
}

func toString(v any) string {
	if v == nil {
		return "<nil>"
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func timeZero() (t time.Time) { return t }

func (e *testEnv) watchAccept(t *testing.T, path, accept string) *watchStream {
	t.Helper()
	return e.watchWith(t, path, http.Header{"Accept": []string{accept}})
}
