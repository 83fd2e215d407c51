package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex/internal/attrs"
	"github.com/annexapi/annex/meta"
)

// TestPrepareCreateSharedByPostAndPut checks that a POST and a PUT that
// creates apply the same create rules: server-owned fields replaced or
// dropped, generation 1, status dropped when a subresource, the strategy's
// hook, and validating admission seeing the filled uid.
func TestPrepareCreateSharedByPostAndPut(t *testing.T) {
	t.Parallel()
	const body = `{"metadata":{"name":"c","uid":"client","creationTimestamp":"2000-01-01T00:00:00Z",` +
		`"deletionTimestamp":"2000-01-01T00:00:00Z","deletionGracePeriodSeconds":30,"generation":7,"selfLink":"/x",` +
		`"managedFields":[{"manager":"m","operation":"Update"}]},"spec":{"owner":"alice","replicas":1},"status":{"phase":"X"}}`
	tests := []struct {
		name, method, path string
		code               int
	}{
		{"post", "POST", envBase + "/namespaces/ns1/environments", http.StatusCreated},
		{"put_creates", "PUT", envBase + "/namespaces/ns1/environments/c", http.StatusCreated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var validatedUID any
			e := newEnv(t, func(c *Config) {
				r := &c.Resources[0]
				r.StatusSubresource = true
				r.Strategy.AllowCreateOnUpdate = true
				r.Strategy.PrepareForCreate = func(_ context.Context, obj Object) { metadata(obj)["labels"] = map[string]any{"hook": "ran"} }
				c.Admission = AdmitterFuncs{ValidateFunc: func(_ context.Context, a *attrs.Admission) error {
					if a.Operation != attrs.Create {
						t.Errorf("operation = %s, want CREATE", a.Operation)
					}
					validatedUID = fieldAt(a.Object, "metadata", "uid")
					return nil
				}}
			})
			r := e.do(t, tc.method, tc.path, body)
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			obj := r.object(t)
			md, _ := obj["metadata"].(map[string]any)
			uid, _ := md["uid"].(string)
			if uid == "" || uid == "client" || validatedUID != uid {
				t.Errorf("uid = %q, validating admission saw %v", uid, validatedUID)
			}
			if ts, _ := md["creationTimestamp"].(string); ts == "" || strings.HasPrefix(ts, "2000-") {
				t.Errorf("creationTimestamp = %q, want now", ts)
			}
			for _, k := range []string{"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
				if v, ok := md[k]; ok {
					t.Errorf("metadata.%s = %v, want none", k, v)
				}
			}
			// The body's entry does not decode (no apiVersion): the server's
			// record of this create replaces it, as kube-apiserver's.
			if mf, _ := md["managedFields"].([]any); len(mf) != 1 || fieldAt(mf[0].(map[string]any), "manager") != "Go-http-client" ||
				fieldAt(mf[0].(map[string]any), "operation") != "Update" {
				t.Errorf("metadata.managedFields = %v, want the server's one Update entry", md["managedFields"])
			}
			if md["generation"] != float64(1) || fieldAt(obj, "metadata", "labels", "hook") != "ran" {
				t.Errorf("generation = %v, labels = %v", md["generation"], md["labels"])
			}
			if _, ok := obj["status"]; ok {
				t.Errorf("status kept on create: %v", obj["status"])
			}
		})
	}
}

// TestWriteJSONPasses holds the write path to what rest/doc.go promises: a
// create decodes and encodes once, an update or patch also decodes the
// stored object once, and nothing else encodes or decodes an object.
func TestWriteJSONPasses(t *testing.T) {
	t.Parallel()
	const coll = envBase + "/namespaces/ns1/environments"
	admit := func(c *Config) { c.Admission = AdmitterFuncs{} }
	tests := []struct {
		name             string
		mutate           func(*Config)
		method, path, ct string
		body             string // RV is replaced by env-0000's resourceVersion
		code             int
		passes           int64
	}{
		{name: "create", method: "POST", path: coll, body: `{"metadata":{"name":"n","labels":{"a":"b"}},"spec":{"owner":"x"}}`, code: 201, passes: 2},
		{name: "create_dry_run", method: "POST", path: coll + "?dryRun=All", body: `{"metadata":{"name":"n"}}`, code: 201, passes: 2},
		{name: "create_admitted", mutate: admit, method: "POST", path: coll, body: `{"metadata":{"name":"n"}}`, code: 201, passes: 2},
		{name: "update", method: "PUT", path: coll + "/env-0000", body: `{"metadata":{"name":"env-0000","resourceVersion":"RV"},"spec":{"owner":"y"}}`, code: 200, passes: 3},
		{name: "update_status", mutate: func(c *Config) { c.Resources[0].StatusSubresource = true }, method: "PUT", path: coll + "/env-0000/status",
			body: `{"metadata":{"name":"env-0000","resourceVersion":"RV"},"status":{"phase":"Ready"}}`, code: 200, passes: 3},
		{name: "update_creates", mutate: func(c *Config) { c.Resources[0].Strategy.AllowCreateOnUpdate = true }, method: "PUT", path: coll + "/new",
			body: `{"metadata":{"name":"new"}}`, code: 201, passes: 2},
		// json-patch decodes the stored bytes and encodes the result: 2 more.
		{name: "merge_patch", method: "PATCH", path: coll + "/env-0000", ct: "application/merge-patch+json", body: `{"spec":{"replicas":3}}`, code: 200, passes: 5},
		{name: "delete", method: "DELETE", path: coll + "/env-0000", code: 200, passes: 0},
		{name: "delete_admitted", mutate: admit, method: "DELETE", path: coll + "/env-0000", code: 200, passes: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Resources: []Resource{environmentResource(openStore(t))}}
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			hh, err := NewHandler(cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := hh.(*handler)
			serve := func(method, path, ct, body string) *httptest.ResponseRecorder {
				if ct == "" {
					ct = "application/json"
				}
				r := benchWriteRequest(t, method, path, ct)
				r.Body = http.NoBody
				if body != "" {
					r.Body = io.NopCloser(strings.NewReader(body))
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			w := serve("POST", coll, "", `{"metadata":{"name":"env-0000"},"spec":{"owner":"x"}}`)
			if w.Code != http.StatusCreated {
				t.Fatalf("setup create: %d %s", w.Code, w.Body)
			}
			var created struct {
				Metadata struct{ ResourceVersion string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &created); err != nil {
				t.Fatal(err)
			}
			passes := new(atomic.Int64)
			h.jsonPasses = passes
			w = serve(tc.method, tc.path, tc.ct, strings.ReplaceAll(tc.body, "RV", created.Metadata.ResourceVersion))
			if w.Code != tc.code {
				t.Fatalf("code = %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if got := passes.Load(); got != tc.passes {
				t.Errorf("JSON passes = %d, want %d", got, tc.passes)
			}
		})
	}
}

// TestObjectMetaOf checks the direct conversion against the JSON round trip
// it replaces: the same ObjectMeta whenever it answers, and the round trip
// left to the cases it cannot be sure of.
func TestObjectMetaOf(t *testing.T) {
	t.Parallel()
	decoded := func(s string) map[string]any {
		obj, st := (&resourceHandler{h: &handler{}}).decodeObject([]byte(s))
		if st != nil {
			t.Fatalf("decode %s: %v", s, st)
		}
		return obj
	}
	tests := []struct {
		name   string
		md     map[string]any
		direct bool // the conversion must not need the round trip
	}{
		{"empty", decoded(`{}`), true},
		{"typical", decoded(`{"name":"a","namespace":"ns","uid":"u","resourceVersion":"5","generation":3,
			"creationTimestamp":"2024-05-01T12:00:00Z","labels":{"a":"b"},"annotations":{},"finalizers":["f"]}`), true},
		{"nulls", decoded(`{"name":null,"labels":null,"generation":null,"creationTimestamp":null,"deletionTimestamp":null,
			"deletionGracePeriodSeconds":null,"finalizers":null,"ownerReferences":null,"managedFields":null}`), true},
		{"deletion", decoded(`{"deletionTimestamp":"2024-05-01T12:00:00+02:00","deletionGracePeriodSeconds":30}`), true},
		{"owner_references", decoded(`{"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"n","uid":"u","controller":true,"blockOwnerDeletion":null}]}`), true},
		{"unknown_member", decoded(`{"name":"a","extra":{"x":1}}`), true},
		{"go_values", map[string]any{"generation": 1, "labels": map[string]string{"a": "b"}, "finalizers": []string{"f"}}, true},
		{"name_in_other_case", decoded(`{"Name":"a"}`), false},
		{"owner_reference_other_case", decoded(`{"ownerReferences":[{"Kind":"K"}]}`), false},
		{"managed_fields", decoded(`{"managedFields":[{"manager":"m","operation":"Update","apiVersion":"g/v","time":"2024-05-01T12:00:00Z",
			"fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}},"subresource":"status"}]}`), true},
		{"managed_fields_bad_time", decoded(`{"managedFields":[{"manager":"m","time":"now"}]}`), false},
		{"managed_fields_not_a_list", decoded(`{"managedFields":{"manager":"m"}}`), false},
		{"number_name", decoded(`{"name":5}`), false},
		{"fractional_generation", decoded(`{"generation":1.5}`), false},
		{"bad_timestamp", decoded(`{"creationTimestamp":"yesterday"}`), false},
		{"label_not_string", decoded(`{"labels":{"a":1}}`), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := objectMetaOf(tc.md)
			if ok != tc.direct {
				t.Fatalf("direct = %v, want %v", ok, tc.direct)
			}
			if !ok {
				return
			}
			b, err := json.Marshal(tc.md)
			if err != nil {
				t.Fatal(err)
			}
			var want meta.ObjectMeta
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("the round trip fails (%v) where the direct conversion succeeded", err)
			}
			// Validation never reads fieldsV1: the direct conversion leaves it out.
			for i := range want.ManagedFields {
				want.ManagedFields[i].FieldsV1 = nil
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("direct  %+v\nround trip %+v", *got, want)
			}
		})
	}
}

// TestJSONEqual checks jsonEqual against comparing encodings, which
// specChanged used to do.
func TestJSONEqual(t *testing.T) {
	t.Parallel()
	rh := &resourceHandler{h: &handler{}}
	n := func(s string) json.Number { return json.Number(s) }
	tests := []struct {
		name string
		a, b any
	}{
		{"equal_maps", map[string]any{"a": n("1"), "b": []any{"x", true, nil}}, map[string]any{"b": []any{"x", true, nil}, "a": n("1")}},
		{"missing_key", map[string]any{"a": n("1")}, map[string]any{"a": n("1"), "b": nil}},
		{"other_number_spelling", n("1.0"), n("1")},
		{"number_and_string", n("1"), "1"},
		{"slice_order", []any{"a", "b"}, []any{"b", "a"}},
		{"nil_and_empty_map", nil, map[string]any{}},
		{"go_int_and_number", 1, n("1")},
		{"go_string_map", map[string]string{"a": "b"}, map[string]any{"a": "b"}},
		{"go_int_and_float", int64(2), 2.0},
		{"nested_difference", map[string]any{"a": map[string]any{"b": false}}, map[string]any{"a": map[string]any{"b": true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ea, _ := json.Marshal(tc.a)
			eb, _ := json.Marshal(tc.b)
			want := bytes.Equal(ea, eb)
			if got := rh.jsonEqual(tc.a, tc.b); got != want {
				t.Errorf("jsonEqual = %v, encodings equal = %v (%s vs %s)", got, want, ea, eb)
			}
		})
	}
}
