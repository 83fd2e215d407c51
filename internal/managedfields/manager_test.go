package managedfields

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

const testSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer}
      image: {type: string}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
            port: {type: integer}
      tags:
        type: array
        x-kubernetes-list-type: set
        items: {type: string}
      args:
        type: array
        items: {type: string}
      selector:
        type: object
        x-kubernetes-map-type: atomic
        additionalProperties: {type: string}
  status:
    type: object
    properties:
      phase: {type: string}
`

func newTestManager(t testing.TB) *Manager {
	t.Helper()
	m, err := New(Config{APIVersion: "platform.example.com/v1", Kind: "Widget", Schema: schema.MustParseYAML(testSchema), StatusSubresource: true})
	if err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) }
	return m
}

func obj(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var o map[string]any
	if err := dec.Decode(&o); err != nil {
		t.Fatal(err)
	}
	return o
}

func managedJSON(t *testing.T, o map[string]any) string {
	t.Helper()
	md, _ := o["metadata"].(map[string]any)
	b, err := json.Marshal(md["managedFields"])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUpdateOnCreateRecordsEveryField(t *testing.T) {
	m := newTestManager(t)
	o := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","labels":{"app":"x"}},"spec":{"replicas":1,"ports":[{"name":"http","port":80}]}}`)
	if err := m.Update(nil, o, "kubectl-create", ""); err != nil {
		t.Fatal(err)
	}
	want := `[{"apiVersion":"platform.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{".":{},"f:ports":{".":{},"k:{\"name\":\"http\"}":{".":{},"f:name":{},"f:port":{}}},"f:replicas":{}}},"manager":"kubectl-create","operation":"Update","time":"2026-11-24T10:00:00Z"}]`
	if got := managedJSON(t, o); got != want {
		t.Fatalf("managedFields:\n got %s\nwant %s", got, want)
	}
}

func TestApplyConflictsAndForce(t *testing.T) {
	m := newTestManager(t)
	live := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","uid":"u1"},"spec":{"replicas":1,"image":"a"}}`)
	if err := m.Update(nil, live, "kubectl-create", ""); err != nil {
		t.Fatal(err)
	}
	patch := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":2,"image":"b"}}`)
	_, err := m.Apply(live, patch, "mgr", "", false)
	var st *meta.Status
	if !errors.As(err, &st) || st.Code != 409 {
		t.Fatalf("want a 409, got %v", err)
	}
	wantMsg := "Apply failed with 2 conflicts: conflicts with \"kubectl-create\" using platform.example.com/v1:\n- .spec.image\n- .spec.replicas"
	if st.Message != wantMsg {
		t.Fatalf("message:\n got %q\nwant %q", st.Message, wantMsg)
	}
	if len(st.Details.Causes) != 2 || st.Details.Causes[0].Field != ".spec.image" || st.Details.Causes[0].Message != `conflict with "kubectl-create" using platform.example.com/v1` {
		t.Fatalf("causes: %+v", st.Details.Causes)
	}
	out, err := m.Apply(live, patch, "mgr", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if spec := out["spec"].(map[string]any); spec["replicas"] != json.Number("2") || spec["image"] != "b" {
		t.Fatalf("merged spec: %v", spec)
	}
	want := `[{"apiVersion":"platform.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:image":{},"f:replicas":{}}},"manager":"mgr","operation":"Apply","time":"2026-11-24T10:00:00Z"},{"apiVersion":"platform.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}},"manager":"kubectl-create","operation":"Update","time":"2026-11-24T10:00:00Z"}]`
	if got := managedJSON(t, out); got != want {
		t.Fatalf("managedFields:\n got %s\nwant %s", got, want)
	}
	// Applying again without image removes it: mgr owned it alone.
	out2, err := m.Apply(out, obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":2}}`), "mgr", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := out2["spec"].(map[string]any)["image"]; has {
		t.Fatalf("image kept: %v", out2["spec"])
	}
}

func TestApplyRefusesWrongKindAndManagedFields(t *testing.T) {
	m := newTestManager(t)
	for _, c := range []struct{ patch, msg string }{
		{`{"apiVersion":"platform.example.com/v2","kind":"Widget"}`, "invalid object type: platform.example.com/v2, Kind=Widget"},
		{`{"kind":"Widget"}`, "invalid object type: /, Kind=Widget"},
		{`{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"managedFields":[]}}`, "metadata.managedFields must be nil"},
		{`{"apiVersion":"platform.example.com/v1","kind":"Widget","spec":{"nope":1}}`, "failed to create typed patch object (/; platform.example.com/v1, Kind=Widget): .spec.nope: field not declared in schema"},
	} {
		_, err := m.Apply(nil, obj(t, c.patch), "m", "", false)
		var st *meta.Status
		if !errors.As(err, &st) || st.Code != 400 || st.Message != c.msg {
			t.Errorf("%s: got %v, want 400 %q", c.patch, err, c.msg)
		}
	}
}

func TestExistingObjectWithoutManagedFieldsIsNotTracked(t *testing.T) {
	m := newTestManager(t)
	live := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","uid":"u"},"spec":{"replicas":1}}`)
	o := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","uid":"u"},"spec":{"replicas":2}}`)
	if err := m.Update(live, o, "x", ""); err != nil {
		t.Fatal(err)
	}
	if _, has := o["metadata"].(map[string]any)["managedFields"]; has {
		t.Fatal("an untracked object got managedFields on update")
	}
	// The first apply gives what was there to before-first-apply.
	_, err := m.Apply(live, obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":3}}`), "m", "", false)
	var st *meta.Status
	if !errors.As(err, &st) || !strings.Contains(st.Message, `conflict with "before-first-apply" using platform.example.com/v1: .spec.replicas`) {
		t.Fatalf("got %v", err)
	}
}

func TestStatusSubresourceIgnoresSpec(t *testing.T) {
	m := newTestManager(t)
	live := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","uid":"u"},"spec":{"replicas":1}}`)
	if err := m.Update(nil, live, "creator", ""); err != nil {
		t.Fatal(err)
	}
	o := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","uid":"u"},"spec":{"replicas":5},"status":{"phase":"Ready"}}`)
	if err := m.Update(live, o, "ctrl", "status"); err != nil {
		t.Fatal(err)
	}
	got := managedJSON(t, o)
	if !strings.Contains(got, `"fieldsV1":{"f:status":{".":{},"f:phase":{}}},"manager":"ctrl","operation":"Update","subresource":"status"`) {
		t.Fatalf("status entry: %s", got)
	}
}

func TestUpdateCapsManagers(t *testing.T) {
	m := newTestManager(t)
	cur := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":0}}`)
	if err := m.Update(nil, cur, "m0", ""); err != nil {
		t.Fatal(err)
	}
	cur["metadata"].(map[string]any)["uid"] = "u"
	for i := 1; i <= 12; i++ {
		next := deepCopy(cur).(map[string]any)
		labels, _ := next["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			next["metadata"].(map[string]any)["labels"] = labels
		}
		labels["m"+string(rune('a'+i))] = "v"
		if err := m.Update(cur, next, "m"+string(rune('a'+i)), ""); err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	var list []any
	if err := json.Unmarshal(cur["metadata"].(map[string]any)["managedFields"].(json.RawMessage), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 10 {
		t.Fatalf("want 10 entries, got %d", len(list))
	}
	if !bytes.Contains([]byte(managedJSON(t, cur)), []byte(`"manager":"ancient-changes"`)) {
		t.Fatal("no ancient-changes entry")
	}
}

func mustSchema(t testing.TB) *schema.Props { return schema.MustParseYAML(testSchema) }

func objB(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var o map[string]any
	if err := dec.Decode(&o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestUpdateRefusesWhatTheSchemaDoesNot checks that an object the schema
// does not describe (a string where an integer goes, duplicate keys of a
// list map, a map where a list goes) fails the update, leaving the live
// managed fields, though the new object is not checked before the merge.
func TestUpdateRefusesWhatTheSchemaDoesNot(t *testing.T) {
	m := newTestManager(t)
	live := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":1}}`)
	if err := m.Update(nil, live, "creator", ""); err != nil {
		t.Fatal(err)
	}
	before := managedJSON(t, live)
	for _, bad := range []string{
		`{"spec":{"replicas":"three"}}`,
		`{"spec":{"ports":[{"name":"a","port":1},{"name":"a","port":2}]}}`,
		`{"spec":{"tags":{"a":"b"}}}`,
	} {
		o := obj(t, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},`+bad[1:])
		if err := m.Update(live, o, "editor", ""); err == nil {
			t.Errorf("%s: updated, managedFields %s", bad, managedJSON(t, o))
		} else if got := managedJSON(t, o); got != before {
			t.Errorf("%s: %v, managedFields %s, want the live ones %s", bad, err, got, before)
		}
	}
}
