package rest

import (
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestServerSideApply drives apply the way kubectl and controllers send it
// (PATCH, application/apply-patch+yaml, fieldManager, force) over HTTP.
func TestServerSideApply(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	path := envBase + "/namespaces/ns1/environments/x"
	apply := func(query, body string) response {
		return e.do(t, "PATCH", path+query, body, "Content-Type", "application/apply-patch+yaml")
	}
	managers := func(m map[string]any) map[string]string {
		out := map[string]string{}
		list, _ := fieldAt(m, "metadata", "managedFields").([]any)
		for _, x := range list {
			en := x.(map[string]any)
			key := en["manager"].(string) + "/" + en["operation"].(string)
			if s, _ := en["subresource"].(string); s != "" {
				key += "/" + s
			}
			b := mustJSON(t, en["fieldsV1"])
			out[key] = string(b)
		}
		return out
	}

	r := apply("?fieldManager=alice", "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: x\nspec:\n  owner: alice\n  replicas: 1\n")
	if r.code != 201 {
		t.Fatalf("apply that creates: %d %s", r.code, r.body)
	}
	m := r.object(t)
	if got := managers(m); len(got) != 1 || got["alice/Apply"] != `{"f:spec":{"f:owner":{},"f:replicas":{}}}` {
		t.Fatalf("managedFields after create = %v", got)
	}
	if fieldAt(m, "spec", "tier") != "dev" {
		t.Errorf("schema default not applied: %v", m["spec"])
	}

	r = apply("?fieldManager=bob", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x"},"spec":{"replicas":2}}`)
	st := r.status(t)
	if r.code != 409 || st.Reason != "Conflict" || st.Message != `Apply failed with 1 conflict: conflict with "alice": .spec.replicas` ||
		st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != "FieldManagerConflict" ||
		st.Details.Causes[0].Field != ".spec.replicas" || st.Details.Causes[0].Message != `conflict with "alice"` {
		t.Fatalf("conflict: %d %s", r.code, r.body)
	}

	r = apply("?fieldManager=bob&force=true", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x"},"spec":{"replicas":2}}`)
	if r.code != 200 {
		t.Fatalf("forced apply: %d %s", r.code, r.body)
	}
	m = r.object(t)
	if got := managers(m); got["alice/Apply"] != `{"f:spec":{"f:owner":{}}}` || got["bob/Apply"] != `{"f:spec":{"f:replicas":{}}}` {
		t.Fatalf("managedFields after force = %v", got)
	}
	if fieldAt(m, "spec", "replicas") != float64(2) {
		t.Errorf("replicas = %v", fieldAt(m, "spec", "replicas"))
	}

	// alice stops applying owner, which she alone managed: it goes.
	r = apply("?fieldManager=alice", "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: x\n  labels:\n    team: a\n")
	if r.code != 200 {
		t.Fatalf("apply without owner: %d %s", r.code, r.body)
	}
	m = r.object(t)
	if v := fieldAt(m, "spec", "owner"); v != nil {
		t.Errorf("owner kept after its only manager dropped it: %v", v)
	}
	if fieldAt(m, "spec", "replicas") != float64(2) || fieldAt(m, "metadata", "labels", "team") != "a" {
		t.Errorf("object = %v", m)
	}

	// A PUT from a client that names no fieldManager is recorded under
	// its User-Agent's program name.
	rv := fieldAt(m, "metadata", "resourceVersion").(string)
	m["spec"].(map[string]any)["owner"] = "carol"
	r = e.do(t, "PUT", path, string(mustJSON(t, m)), "User-Agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/abc")
	if r.code != 200 {
		t.Fatalf("put: %d %s", r.code, r.body)
	}
	if got := managers(r.object(t)); got["kubectl/Update"] != `{"f:spec":{"f:owner":{}}}` {
		t.Fatalf("managedFields after put (rv %s) = %v", rv, got)
	}

	// The status subresource records its own entry.
	r = e.do(t, "PATCH", path+"/status?fieldManager=ctrl", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x"},"status":{"phase":"Ready"}}`,
		"Content-Type", "application/apply-patch+yaml")
	if r.code != 200 {
		t.Fatalf("status apply: %d %s", r.code, r.body)
	}
	m = r.object(t)
	if got := managers(m); got["ctrl/Apply/status"] != `{"f:status":{"f:phase":{}}}` || fieldAt(m, "status", "phase") != "Ready" {
		t.Fatalf("after status apply: %v %v", got, m["status"])
	}

	// A dry run answers the merge and stores nothing.
	r = apply("?fieldManager=bob&dryRun=All", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x"},"spec":{"replicas":7}}`)
	if r.code != 200 || fieldAt(r.object(t), "spec", "replicas") != float64(7) {
		t.Fatalf("dry run: %d %s", r.code, r.body)
	}
	if got := fieldAt(e.do(t, "GET", path, "").object(t), "spec", "replicas"); got != float64(2) {
		t.Fatalf("dry run stored replicas %v", got)
	}
}

func TestServerSideApplyRefusals(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	path := envBase + "/namespaces/ns1/environments/x"
	tests := []struct {
		name, query, body string
		code              int
		msg               string
	}{
		{"no_field_manager", "", `{}`, 422, `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"bad_yaml", "?fieldManager=m", "a: [", 400, "error decoding YAML: "},
		{"not_an_object", "?fieldManager=m", "- a\n- b\n", 400, "error decoding YAML: "},
		{"wrong_kind", "?fieldManager=m", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Other","metadata":{"name":"x"}}`, 400,
			"invalid object type: platform.example.com/v1alpha1, Kind=Other"},
		{"wrong_version", "?fieldManager=m", `{"apiVersion":"platform.example.com/v1","kind":"Environment","metadata":{"name":"x"}}`, 400,
			"invalid object type: platform.example.com/v1, Kind=Environment"},
		{"managed_fields_set", "?fieldManager=m", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x","managedFields":[{"manager":"m"}]}}`, 400,
			"metadata.managedFields must be nil"},
		{"unknown_field", "?fieldManager=m", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x"},"spec":{"nope":1}}`, 400,
			"failed to create typed patch object (/x; platform.example.com/v1alpha1, Kind=Environment): .spec.nope: field not declared in schema"},
		{"uid_of_missing_object", "?fieldManager=m", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x","uid":"u1"}}`, 409,
			`Operation cannot be fulfilled on environments.platform.example.com "x": uid mismatch: the provided object specified uid u1, and no existing object was found`},
		{"unprintable_manager", "?fieldManager=a%01b", `{}`, 422, `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\x01b": invalid character U+0001 (at position 1)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, "PATCH", path+tc.query, tc.body, "Content-Type", "application/apply-patch+yaml")
			st := r.status(t)
			if r.code != tc.code || !strings.HasPrefix(st.Message, tc.msg) {
				t.Fatalf("got %d %q, want %d %q", r.code, st.Message, tc.code, tc.msg)
			}
		})
	}
	if r := e.do(t, "GET", path, ""); r.code != 404 {
		t.Fatalf("a refused apply created the object: %d", r.code)
	}
}

func TestManagedFieldsOff(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, func(c *Config) { c.DisableManagedFields = true })
	r := e.do(t, "POST", envBase+"/namespaces/ns1/environments", `{"metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1"}]},"spec":{"owner":"x"}}`)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if v := fieldAt(r.object(t), "metadata", "managedFields"); v != nil {
		t.Errorf("managedFields recorded with field management off: %v", v)
	}
	r = e.do(t, "PATCH", envBase+"/namespaces/ns1/environments/a?fieldManager=m", `{}`, "Content-Type", "application/apply-patch+yaml")
	if r.code != 415 || !strings.HasSuffix(r.status(t).Message, "application/json-patch+json, application/merge-patch+json") {
		t.Fatalf("apply with field management off: %d %s", r.code, r.body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestYAMLBodiesAndResponses creates and updates with application/yaml
// bodies and reads with Accept: application/yaml, as kube-apiserver serves
// them; a YAML Status answers a YAML request that fails.
func TestYAMLBodiesAndResponses(t *testing.T) {
	t.Parallel()
	e := newFeatureEnv(t, nil)
	coll := envBase + "/namespaces/ns1/environments"
	r := e.do(t, "POST", coll, "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: y\n  labels: {a: \"1\"}\nspec:\n  owner: \"007\"\n  replicas: 3\n",
		"Content-Type", "application/yaml", "Accept", "application/yaml")
	if r.code != 201 || r.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("yaml create: %d %s %s", r.code, r.header.Get("Content-Type"), r.body)
	}
	var created map[string]any
	if err := yaml.Unmarshal(r.body, &created); err != nil {
		t.Fatalf("answer is not YAML: %v\n%s", err, r.body)
	}
	if fieldAt(created, "spec", "owner") != "007" || fieldAt(created, "spec", "replicas") != 3 || fieldAt(created, "metadata", "labels", "a") != "1" {
		t.Fatalf("yaml answer = %v", created)
	}
	rv := fieldAt(created, "metadata", "resourceVersion").(string)
	r = e.do(t, "PUT", coll+"/y", "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: y\n  resourceVersion: \""+rv+"\"\nspec:\n  owner: bond\n",
		"Content-Type", "application/yaml")
	if r.code != 200 || fieldAt(r.object(t), "spec", "owner") != "bond" {
		t.Fatalf("yaml update: %d %s", r.code, r.body)
	}
	r = e.do(t, "GET", coll, "", "Accept", "application/yaml")
	var list map[string]any
	if err := yaml.Unmarshal(r.body, &list); err != nil || r.code != 200 || list["kind"] != "EnvironmentList" {
		t.Fatalf("yaml list: %d %v %s", r.code, err, r.body)
	}
	r = e.do(t, "GET", coll+"/missing", "", "Accept", "application/yaml")
	var st map[string]any
	if err := yaml.Unmarshal(r.body, &st); err != nil || r.code != 404 || st["reason"] != "NotFound" {
		t.Fatalf("yaml status: %d %v %s", r.code, err, r.body)
	}
	r = e.do(t, "POST", coll, "a: [", "Content-Type", "application/yaml")
	if r.code != 400 || !strings.HasPrefix(r.status(t).Message, "error decoding YAML: ") {
		t.Fatalf("bad yaml body: %d %s", r.code, r.body)
	}
}

// TestManagedFieldsBytes checks the byte-level handling of managedFields:
// spliced out before decoding and written back where json.Marshal puts it.
func TestManagedFieldsBytes(t *testing.T) {
	t.Parallel()
	mf := `[{"apiVersion":"g/v","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}},"manager":"m","operation":"Update"}]`
	for _, body := range []string{
		`{"metadata":{"name":"a","managedFields":` + mf + `,"uid":"u"},"spec":{}}`,
		`{"metadata":{"managedFields":` + mf + `,"name":"a"}}`,
		`{"metadata":{"name":"a","managedFields":` + mf + `}}`,
		`{"metadata":{"managedFields":` + mf + `}}`,
		`{"metadata":{"annotations":{"x":"y"},"name":"a"  ,  "managedFields" : ` + mf + ` },"z":1}`,
	} {
		rest, raw := spliceManagedFields([]byte(body))
		if string(raw) != mf {
			t.Fatalf("%s: raw = %s", body, raw)
		}
		var m map[string]any
		if err := json.Unmarshal(rest, &m); err != nil {
			t.Fatalf("%s: rest %s: %v", body, rest, err)
		}
		if _, has := m["metadata"].(map[string]any)["managedFields"]; has {
			t.Fatalf("%s: not removed: %s", body, rest)
		}
		// Written back, the bytes are what json.Marshal gives for the
		// decoded object.
		var full map[string]any
		if err := json.Unmarshal([]byte(body), &full); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(full)
		m["metadata"].(map[string]any)["managedFields"] = raw
		got, err := marshalObject(m)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", body, got, want)
		}
	}
	for _, body := range []string{`{"metadata":{"managedFields":null}}`, `{"metadata":{"managedFields":[1,}}`, `{"metadata":"x","managedFields":[]}`,
		`{"metadata":{"managedFields":[],"managedFields":[]}}`} {
		if rest, raw := spliceManagedFields([]byte(body)); raw != nil || string(rest) != body {
			t.Errorf("%s: spliced into %s and %s", body, rest, raw)
		}
	}
}
