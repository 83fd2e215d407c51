package watch

import (
	"context"
	"testing"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// BenchmarkListScan is one LIST from the cache with nothing else running,
// over 50,000 objects: whole (collected, and streamed as a LIST handler
// reads it) and with a selector matching none of them (the flood's LIST:
// selector_none's predicate reads nothing, selector_labels' is a label
// selector, as a LIST's, over objects labelled as annexload's are).
// It is the cost of the turns a long walk takes on the scans' cores (Scans)
// when no other walk waits.
//
//	go test ./watch -run '^$' -bench ListScan -count 6
func BenchmarkListScan(b *testing.B) {
	const n = 50_000
	store := openBolt(b, true)
	populate(b, store, n, "load", "1", "tier", "bench")
	c := startCacher(b, store, Config{})
	ctx := context.Background()
	none := storage.PredicateFunc(func(*storage.Object) bool { return false })
	sel, err := meta.ParseLabelSelector("app=nobody")
	if err != nil {
		b.Fatal(err)
	}
	nobody := storage.Selection{Need: sel.Need(), Match: func(o *storage.Object) bool { return sel.MatchesSet(&o.Meta.Labels) }}
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
	b.Run("selector_labels", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.List(ctx, suitePrefix, storage.ListOptions{Predicate: nobody})
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
