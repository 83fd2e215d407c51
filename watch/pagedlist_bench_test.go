package watch

import (
	"context"
	"fmt"
	"testing"

	"github.com/annexapi/annex/storage"
)

// BenchmarkPagedList is the cost of one page (limit 500) of a LIST served
// from the cache, at the start of the collection and in its middle (a
// continue token), with 10,000 and 100,000 objects cached: a page should cost
// the same whatever the total.
//
//	go test ./watch -run '^$' -bench PagedList -benchtime 200x
func BenchmarkPagedList(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		store := openBolt(b, true)
		populate(b, store, n)
		c := startCacher(b, store, Config{})
		ctx := context.Background()
		// The token of the page that starts half way through.
		var mid string
		res, err := c.List(ctx, suitePrefix, storage.ListOptions{Limit: int64(n / 2)})
		if err != nil || res.Continue == "" {
			b.Fatalf("List: %v, continue %q", err, res.Continue)
		}
		mid = res.Continue
		for _, at := range []struct{ name, token string }{{"first", ""}, {"middle", mid}} {
			b.Run(fmt.Sprintf("%dk/%s", n/1000, at.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := c.List(ctx, suitePrefix, storage.ListOptions{Limit: 500, Continue: at.token})
					if err != nil || len(res.Items) != 500 || res.RemainingItemCount == nil {
						b.Fatalf("List: %v, %d items, remaining %v", err, len(res.Items), res.RemainingItemCount)
					}
				}
			})
		}
	}
}
