package backend

import (
	"strings"
	"testing"
)

// BenchmarkDecodeMeta is the metadata parse of every write and of every
// object a watch cache loads at start (a 1 KB object with two labels).
func BenchmarkDecodeMeta(b *testing.B) {
	data := []byte(`{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w-000001","namespace":"ns",` +
		`"uid":"6f1c2a4e-8d0b-4f6e-9a51-3c2d7e9b1f00","resourceVersion":"12345","creationTimestamp":"2026-11-25T22:00:00Z",` +
		`"labels":{"app":"demo","tier":"web"}},"spec":{"owner":"x","notes":"` + strings.Repeat("x", 700) + `"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMeta(data); err != nil {
			b.Fatal(err)
		}
	}
}
