package watch

import (
	"context"
	"testing"

	"github.com/annexapi/annex/storage"
)

// BenchmarkListScan is one LIST from the cache with nothing else running,
// over 50,000 objects: whole (collected, and streamed as a LIST handler
// reads it) and with a selector matching none of them (the flood's LIST).
// It is the cost of the turns a long walk takes on the scans' cores (Scans)
// when no other walk waits.
//
//	go test ./watch -run '^$' -bench ListScan -count 6
func BenchmarkListScan(b *testing.B) {
	const n = 50_000
	store := openBolt(b, true)
	populate(b, store, n)
	c := startCacher(b, store, Config{})
	ctx := context.Background()
	none := storage.PredicateFunc(func(*storage.Object) bool { return false })
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.List(ctx, suitePrefix, storage.ListOptions{})
			if err != nil || len(res.Items) != n {
				b.Fatalf("List: %v, %d items", err, len(res.Items))
			}
		}
	})
	b.Run("whole_streamed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.List(ctx, suitePrefix, storage.ListOptions{Stream: true})
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for range res.Each {
				got++
			}
			if got != n {
				b.Fatalf("streamed %d items, want %d", got, n)
			}
		}
	})
	b.Run("selector_none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.List(ctx, suitePrefix, storage.ListOptions{Predicate: none})
			if err != nil || len(res.Items) != 0 {
				b.Fatalf("List: %v, %d items", err, len(res.Items))
			}
		}
	})
	b.Run("selector_none_streamed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.List(ctx, suitePrefix, storage.ListOptions{Predicate: none, Stream: true})
			if err != nil {
				b.Fatal(err)
			}
			for range res.Each {
				b.Fatal("an object matched a predicate that matches none")
			}
		}
	})
}
