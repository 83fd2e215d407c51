package meta

import "testing"

func BenchmarkParseLabelSelector(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseLabelSelector("app.kubernetes.io/name=web,tier in (api,web),!canary"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLabelSelectorMatches(b *testing.B) {
	sel, err := ParseLabelSelector("app.kubernetes.io/name=web,tier in (api,web),!canary")
	if err != nil {
		b.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": "web", "tier": "api", "pod-template-hash": "abc"}
	b.ReportAllocs()
	for b.Loop() {
		if !sel.Matches(labels) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkParseFieldSelector(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFieldSelector("metadata.name=foo,metadata.namespace=default"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateObjectMeta(b *testing.B) {
	m := ObjectMeta{Name: "my-first-flunder", Namespace: "default",
		Labels:      map[string]string{"app.kubernetes.io/name": "web", "tier": "api"},
		Annotations: map[string]string{"example.com/note": "hello"}}
	b.ReportAllocs()
	for b.Loop() {
		if c := ValidateObjectMeta(&m, true, nil); c != nil {
			b.Fatal(c)
		}
	}
}
