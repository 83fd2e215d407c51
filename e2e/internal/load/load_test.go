package load

import "testing"

func TestAddedName(t *testing.T) {
	for _, c := range []struct {
		line, want string
		ok         bool
	}{
		{`{"type":"ADDED","object":{"kind":"Environment","apiVersion":"x/v1","metadata":{"name":"watch-1-7","namespace":"default"}}}`, "watch-1-7", true},
		// annex's order: metadata's keys sorted, the name after managedFields.
		{`{"type":"ADDED","object":{"apiVersion":"x/v1","kind":"Environment","metadata":{"creationTimestamp":"2026-11-29T00:51:53Z","labels":{"app":"load"},"managedFields":[{"manager":"Go-http-client","operation":"Update"}],"name":"watch-1-6","namespace":"default"}}}`, "watch-1-6", true},
		// Another shape: decoded in full.
		{`{"object":{"metadata":{"namespace":"default","name":"watch-1-8"}},"type":"ADDED"}`, "watch-1-8", true},
		// A nested metadata first: the object's own name is found by decoding.
		{`{"type":"ADDED","object":{"spec":{"template":{"metadata":{"name":"tpl"}}},"metadata":{"name":"watch-1-9"}}}`, "watch-1-9", true},
		{`{"type":"MODIFIED","object":{"metadata":{"name":"watch-1-7"}}}`, "", false},
		{`{"type":"ADDED","object":{"metadata":{"name":"other"}}}`, "", false},
		{`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}`, "", false},
		{`not json`, "", false},
	} {
		got, ok := addedName([]byte(c.line), "watch-1-")
		if got != c.want || ok != c.ok {
			t.Errorf("addedName(%s) = %q, %v; want %q, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// BenchmarkAddedName: the name found in the line, against the line decoded
// in full (the object's metadata not opening with its name).
func BenchmarkAddedName(b *testing.B) {
	const obj = `"kind":"Environment","apiVersion":"example.annex.dev/v1alpha1","metadata":{"name":"watch-1-7","namespace":"default","uid":"0b1c6a3e-8d1f-4c7a-9f0e-2b5d4c3a1e7f","resourceVersion":"123","creationTimestamp":"2026-11-28T10:00:00Z","labels":{"team":"a","tier":"gold"}},"spec":{"owner":"team-a","replicas":3,"tier":"gold","regions":["eu-west-1","us-east-2"],"description":"an object of some hundred bytes, as the load tool writes"}`
	for _, c := range []struct{ name, line string }{
		{"found", `{"type":"ADDED","object":{` + obj + `}}`},
		{"found_annex_order", `{"type":"ADDED","object":{"apiVersion":"example.annex.dev/v1alpha1","kind":"Environment","metadata":{"creationTimestamp":"2026-11-28T10:00:00Z","labels":{"team":"a","tier":"gold"},"managedFields":[{"apiVersion":"example.annex.dev/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:team":{},"f:tier":{}}}},"manager":"Go-http-client","operation":"Update"}],"name":"watch-1-7","namespace":"default","resourceVersion":"123","uid":"0b1c6a3e-8d1f-4c7a-9f0e-2b5d4c3a1e7f"},"spec":{"owner":"team-a","replicas":3}}}`},
		{"decoded", `{"object":{` + obj + `},"type":"ADDED"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := addedName([]byte(c.line), "watch-1-"); !ok {
					b.Fatal("not found")
				}
			}
		})
	}
}
