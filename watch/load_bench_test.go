package watch

import (
	"context"
	"testing"
	"time"
)

// BenchmarkCacheLoad100k is a restart's watch-cache load: a cacher over a
// bbolt store of 100,000 objects started until ready (the initial list
// read, its metadata parsed, the tree built), as a server does at start.
//
//	go test ./watch -run '^$' -bench CacheLoad100k -benchtime 5x
func BenchmarkCacheLoad100k(b *testing.B) {
	store := openBolt(b, true)
	populate(b, store, startupObjects)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := New(store, Config{Prefix: suitePrefix})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- c.Start(ctx) }()
		for c.Ready(ctx) != nil {
			time.Sleep(100 * time.Microsecond) // polling readiness, as a readiness probe does
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-ready")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
