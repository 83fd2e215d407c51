package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

const testSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      tier: {type: string, default: dev}
      replicas: {type: integer, default: 1}
      port: {x-kubernetes-int-or-string: true}
      labels: {type: object, additionalProperties: {type: string}}
      items:
        type: array
        items: {type: object, properties: {name: {type: string}, weight: {type: integer, default: 5}}}
      free: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {known: {type: object, properties: {a: {type: string}}}}}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        properties: {spec: {type: object, properties: {x: {type: string}}}}
  status:
    type: object
    properties:
      phase: {type: string}
`

func TestPrune(t *testing.T) {
	p := MustParseYAML(testSchema)
	cases := []struct {
		name, in, want string
		pruned         []string
	}{
		{"keeps_known", `{"apiVersion":"a/v1","kind":"K","metadata":{"name":"x","zz":1},"spec":{"tier":"dev"}}`,
			`{"apiVersion":"a/v1","kind":"K","metadata":{"name":"x","zz":1},"spec":{"tier":"dev"}}`, nil},
		{"drops_unknown_nested", `{"spec":{"tier":"dev","foo":1},"bar":true}`, `{"spec":{"tier":"dev"}}`, []string{"bar", "spec.foo"}},
		{"array_items", `{"spec":{"items":[{"name":"a","x":1}]}}`, `{"spec":{"items":[{"name":"a"}]}}`, []string{"spec.items[0].x"}},
		{"additional_properties", `{"spec":{"labels":{"a":"b"}}}`, `{"spec":{"labels":{"a":"b"}}}`, nil},
		{"preserve_unknown_still_prunes_known", `{"spec":{"free":{"any":1,"known":{"a":"x","b":2}}}}`, `{"spec":{"free":{"any":1,"known":{"a":"x"}}}}`, []string{"spec.free.known.b"}},
		{"int_or_string", `{"spec":{"port":"http"}}`, `{"spec":{"port":"http"}}`, nil},
		{"embedded_keeps_type_meta", `{"spec":{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"x":"1","y":2}}}}`,
			`{"spec":{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"x":"1"}}}}`, []string{"spec.template.spec.y"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(t, tc.in)
			got := Prune(p, o)
			if !reflect.DeepEqual(got, tc.pruned) {
				t.Fatalf("pruned = %v, want %v", got, tc.pruned)
			}
			if !reflect.DeepEqual(o, obj(t, tc.want)) {
				b, _ := json.Marshal(o)
				t.Fatalf("object = %s, want %s", b, tc.want)
			}
		})
	}
	if Prune(nil, obj(t, `{"a":1}`)) != nil {
		t.Fatal("nil schema pruned")
	}
}

func TestDefault(t *testing.T) {
	p := MustParseYAML(testSchema)
	cases := []struct{ name, in, want string }{
		{"fills_absent", `{"spec":{}}`, `{"spec":{"tier":"dev","replicas":1}}`},
		{"keeps_present", `{"spec":{"tier":"prod","replicas":3}}`, `{"spec":{"tier":"prod","replicas":3}}`},
		{"null_not_nullable", `{"spec":{"tier":null}}`, `{"spec":{"tier":"dev","replicas":1}}`},
		{"array_items", `{"spec":{"items":[{"name":"a"},{"weight":2}]}}`, `{"spec":{"tier":"dev","replicas":1,"items":[{"name":"a","weight":5},{"weight":2}]}}`},
		{"no_spec_no_defaults", `{}`, `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(t, tc.in)
			Default(p, o)
			if !reflect.DeepEqual(o, obj(t, tc.want)) {
				b, _ := json.Marshal(o)
				t.Fatalf("object = %s, want %s", b, tc.want)
			}
		})
	}
}

// BenchmarkPruneAndDefault is what a write of an object costs here: its
// unknown fields pruned, then its defaults filled in.
func BenchmarkPruneAndDefault(b *testing.B) {
	p, err := ParseYAML([]byte(testSchema))
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"apiVersion":"v1","kind":"K","metadata":{"name":"a"},"spec":{"tier":"prod","labels":{"a":"b"},"items":[{"name":"a"},{"name":"b","weight":2}],"free":{"x":1,"known":{"a":"s"}},"template":{"spec":{"x":"y"}}},"status":{"phase":"Ready"}}`)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		var o map[string]any
		if err := json.Unmarshal(body, &o); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		Prune(p, o)
		Default(p, o)
	}
}
