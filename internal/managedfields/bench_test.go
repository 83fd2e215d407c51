package managedfields

import (
	"testing"
)

// BenchmarkUpdate measures one tracked update of a small object (the
// field manager alone, no storage): the stored object's entries decoded,
// both objects typed, the change attributed, the entries encoded.
func BenchmarkUpdate(b *testing.B) {
	m, err := New(Config{APIVersion: "platform.example.com/v1", Kind: "Widget", Schema: mustSchema(b), StatusSubresource: true})
	if err != nil {
		b.Fatal(err)
	}
	live := objB(b, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"ns","labels":{"app":"x","tier":"dev"},"annotations":{"note":"a benchmark object"}},"spec":{"replicas":1,"image":"a","ports":[{"name":"http","port":80}]}}`)
	if err := m.Update(nil, live, "creator", ""); err != nil {
		b.Fatal(err)
	}
	live["metadata"].(map[string]any)["uid"] = "u"
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		obj := deepCopy(live).(map[string]any)
		obj["spec"].(map[string]any)["replicas"] = int64(i%2 + 2)
		if err := m.Update(live, obj, "editor", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMerge is a mutating admission policy's apply configuration merged
// into an object (what each MutatingAdmissionPolicy mutation costs).
func BenchmarkMerge(b *testing.B) {
	m := newTestManager(b)
	live := obj(b, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","labels":{"app":"x"}},"spec":{"replicas":1,"image":"nginx","ports":[{"name":"http","port":80},{"name":"https","port":443}],"tags":["a","b"],"args":["--v=2"]}}`)
	ac := obj(b, `{"metadata":{"labels":{"team":"payments"}},"spec":{"replicas":3}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Merge(live, ac); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreate measures the managed fields of a created object (nothing
// stored yet): the whole object attributed to its manager, the entry
// encoded.
func BenchmarkCreate(b *testing.B) {
	m, err := New(Config{APIVersion: "platform.example.com/v1", Kind: "Widget", Schema: mustSchema(b), StatusSubresource: true})
	if err != nil {
		b.Fatal(err)
	}
	obj := objB(b, `{"apiVersion":"platform.example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"ns","labels":{"app":"x","tier":"dev"},"annotations":{"note":"a benchmark object"}},"spec":{"replicas":1,"image":"a","ports":[{"name":"http","port":80}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Update(nil, deepCopy(obj).(map[string]any), "creator", ""); err != nil {
			b.Fatal(err)
		}
	}
}
