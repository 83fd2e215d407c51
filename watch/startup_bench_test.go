// This file holds the informer start-up benchmark: watchers starting a
// watch-list (sendInitialEvents) over 100,000 cached objects at once, while a
// writer keeps writing through the cacher.
//
//	go test ./watch -run '^$' -bench InformerStartup -benchtime 5x -count 6
//
// The store under the cacher is bbolt with UnsafeNoSync, so that fsync does
// not dominate the writer's latency.

package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// startupObjects is how many objects the cache holds when the informers start.
const startupObjects = 100_000

// populate creates n widgets in store, straight (not through a cacher).
func populate(tb testing.TB, store storage.Interface, n int, labels ...string) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("o%06d", i)
		if _, err := store.Create(ctx, key(fmt.Sprintf("ns%d", i%100), name), object(fmt.Sprintf("ns%d", i%100), name, "1", labels...)); err != nil {
			tb.Fatalf("Create: %v", err)
		}
	}
}

// startupWriter writes through the cacher on an open-loop schedule (one
// write every interval, whatever happened to the earlier ones) until stop is
// closed, and records each write's latency: from its scheduled time until the
// cache has applied it, which is when a read at "0" or a watch from then sees
// it. A lock held by a starting watcher delays both halves: the cached state
// the update starts from is read under the cacher's read lock, and the event
// is applied under its write lock.
type startupWriter struct {
	lats []time.Duration
	err  error
	done chan struct{}
}

func startWriter(c *Cacher, keys []string, interval time.Duration, stop <-chan struct{}) *startupWriter {
	sw := &startupWriter{done: make(chan struct{})}
	go func() {
		defer close(sw.done)
		ctx := context.Background()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		start := time.Now()
		for i := 0; ; i++ {
			at := start.Add(time.Duration(i) * interval)
			if d := time.Until(at); d > 0 {
				timer.Reset(d)
				select {
				case <-stop:
					return
				case <-timer.C:
				}
			} else {
				select {
				case <-stop:
					return
				default:
				}
			}
			o, err := c.Update(ctx, keys[i%len(keys)], storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
				var m map[string]any
				if err := json.Unmarshal(cur.Data, &m); err != nil {
					return nil, err
				}
				m["spec"] = map[string]any{"value": fmt.Sprint(i)}
				return json.Marshal(m)
			})
			if err != nil {
				sw.err = err
				return
			}
			if ok, err := c.waitFor(ctx, o.ResourceVersion, false); !ok || err != nil {
				sw.err = fmt.Errorf("the cache did not reach the write at %d: %v", o.ResourceVersion, err)
				return
			}
			sw.lats = append(sw.lats, time.Since(at))
		}
	}()
	return sw
}

// startInformer starts a watch-list on every object and reads it up to the
// initial-events-end bookmark, as an informer's first sync. It returns how
// many initial objects it received.
func startInformer(c *Cacher) (int, error) {
	w, err := c.Watch(context.Background(), prefix(""), storage.WatchOptions{
		Recursive: true, SendInitialEvents: true, ProgressNotify: true})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	n := 0
	for ev := range w.ResultChan() {
		switch {
		case ev.Type == storage.EventAdded:
			n++
		case ev.Type == storage.EventBookmark && ev.InitialEventsEnd:
			return n, nil
		case ev.Type == storage.EventError:
			return n, ev.Err
		case ev.Type == storage.EventBookmark:
		default:
			return n, fmt.Errorf("%s event before the initial-events-end bookmark", ev.Type)
		}
	}
	return n, fmt.Errorf("channel closed after %d initial events", n)
}

// BenchmarkInformerStartup100k starts N informers at once (each a watch-list
// over 100,000 objects, read to its initial-events-end bookmark) while a
// writer updates objects through the cacher at 100 writes/s. ns/op is the
// time until every informer has synced; the writer's latency percentiles
// (scheduled write to applied in the cache) cover the whole timed run.
func BenchmarkInformerStartup100k(b *testing.B) {
	store := openBolt(b, true)
	populate(b, store, startupObjects)
	// The default limits: starting events count neither against the
	// dispatch budget nor MaxLag, so informers still reading their 100,000
	// initial events are not cut off by the writer's events.
	c := startCacher(b, store, Config{})
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = key(fmt.Sprintf("ns%d", i), fmt.Sprintf("o%06d", i))
	}
	for _, informers := range []int{1, 8} {
		b.Run(fmt.Sprintf("informers=%d", informers), func(b *testing.B) {
			runtime.GC()
			stop := make(chan struct{})
			b.ReportAllocs()
			b.ResetTimer()
			sw := startWriter(c, keys, 10*time.Millisecond, stop)
			for range b.N {
				var wg sync.WaitGroup
				errs := make([]error, informers)
				for i := range informers {
					wg.Go(func() {
						n, err := startInformer(c)
						if err == nil && n != startupObjects {
							err = fmt.Errorf("%d initial objects, want %d", n, startupObjects)
						}
						errs[i] = err
					})
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			close(stop)
			<-sw.done
			b.StopTimer()
			if sw.err != nil {
				b.Fatal(sw.err)
			}
			if len(sw.lats) == 0 {
				b.Fatal("the writer made no write")
			}
			slices.Sort(sw.lats)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(sw.lats[len(sw.lats)/2]), "write-p50-ms")
			b.ReportMetric(ms(sw.lats[len(sw.lats)*99/100]), "write-p99-ms")
			b.ReportMetric(ms(sw.lats[len(sw.lats)-1]), "write-max-ms")
			// The writer's allocations are in allocs/op too: a writer held
			// up by the lock makes fewer writes.
			b.ReportMetric(float64(len(sw.lats))/float64(b.N), "writes/op")
		})
	}
}
