package managedfields

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/annexapi/annex/schema"
)

// mergeBySMD is Merge through structured-merge-diff's merge always, as it
// was before canSetFields: the reference the shortcut must equal.
func mergeBySMD(m *Manager, obj, ac map[string]any) (map[string]any, error) {
	patchTV, err := m.typedOf(ac)
	if err != nil {
		return nil, err
	}
	liveTV, err := m.typedOf(obj)
	if err != nil {
		return nil, err
	}
	merged, err := liveTV.Merge(patchTV)
	if err != nil {
		return nil, err
	}
	out, err := jsonNumbers(merged.AsValue().Unstructured())
	if err != nil {
		return nil, err
	}
	keepManagedFields(obj, out)
	return out, nil
}

func TestMergeMatchesStructuredMergeDiff(t *testing.T) {
	const live = `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","labels":{"app":"x"},"managedFields":[{"manager":"m","operation":"Update","apiVersion":"platform.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{"replicas":2.0,"image":"nginx","ports":[{"name":"http","port":80}],"tags":["a"],"args":["--v=2"],"selector":{"k":"v","j":"w"}},"status":{"phase":"Ready"}}`
	// An atomic struct, beside the test schema's atomic map.
	const atomicStruct = `
type: object
properties:
  spec:
    type: object
    properties:
      template:
        type: object
        x-kubernetes-map-type: atomic
        properties:
          a: {type: string}
          b: {type: string}
`
	for _, tc := range []struct {
		name, live, ac string
		shortcut       bool // canSetFields takes it
		schemaless     bool // no schema: every field deduced
		schema         string
	}{
		{name: "atomic_struct_replaced", live: `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"template":{"a":"1","b":"2"}}}`, ac: `{"spec":{"template":{"a":"3"}}}`, schema: atomicStruct},
		{name: "atomic_struct_absent", live: `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"}}`, ac: `{"spec":{"template":{"a":"3"}}}`, schema: atomicStruct},
		{"schemaless_label_added", live, `{"metadata":{"labels":{"managed-by":"annex"}}}`, true, true, ""},
		{"schemaless_nested_map", live, `{"spec":{"selector":{"k":"z"},"extra":{"a":1}}}`, true, true, ""},
		{"schemaless_list", live, `{"spec":{"args":["--v=4"]}}`, false, true, ""},
		{"label_added", live, `{"metadata":{"labels":{"managed-by":"annex"}}}`, true, false, ""},
		{"label_replaced", live, `{"metadata":{"labels":{"app":"y"}}}`, true, false, ""},
		{"labels_where_there_are_none", `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":1}}`, `{"metadata":{"labels":{"managed-by":"annex"},"annotations":{"n":"1"}}}`, true, false, ""},
		{"scalars_and_a_new_map", live, `{"spec":{"replicas":3,"image":"busybox"},"status":{"phase":"Pending"}}`, true, false, ""},
		{"no_spec_yet", `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a"}}`, `{"spec":{"replicas":1.5e1}}`, true, false, ""},
		{"atomic_map_replaced", live, `{"spec":{"selector":{"k":"z"}}}`, false, false, ""},
		{"associative_list", live, `{"spec":{"ports":[{"name":"https","port":443}]}}`, false, false, ""},
		{"set_list", live, `{"spec":{"tags":["b"]}}`, false, false, ""},
		{"atomic_list", live, `{"spec":{"args":["--v=4"]}}`, false, false, ""},
		{"null_value", live, `{"metadata":{"labels":null}}`, false, false, ""},
		{"null_labels_in_live", `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","labels":null}}`, `{"metadata":{"labels":{"a":"b"}}}`, false, false, ""},
		{"empty", live, `{}`, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t)
			if tc.schema != "" {
				var err error
				if m, err = New(Config{APIVersion: "platform.example.com/v1", Kind: "Widget", Schema: schema.MustParseYAML(tc.schema)}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.schemaless {
				var err error
				if m, err = New(Config{APIVersion: "platform.example.com/v1", Kind: "Widget"}); err != nil {
					t.Fatal(err)
				}
			}
			o, ac := obj(t, tc.live), obj(t, tc.ac)
			before, _ := json.Marshal(o)
			want, wantErr := mergeBySMD(m, obj(t, tc.live), obj(t, tc.ac))
			got, err := m.Merge(o, ac)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("Merge error %v, structured-merge-diff's %v", err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Errorf("Merge = %s\nwant %s", g, w)
			}
			if after, _ := json.Marshal(o); string(after) != string(before) {
				t.Errorf("Merge changed its object: %s, was %s", after, before)
			}
			if got := canSetFields(m.typ.Schema, m.typ.TypeRef, smdObject(obj(t, tc.live)), smdObject(ac)); got != tc.shortcut {
				t.Errorf("canSetFields = %v, want %v", got, tc.shortcut)
			}
		})
	}
}
