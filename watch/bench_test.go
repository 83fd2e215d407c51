// This file holds the fan-out benchmarks (10,000 watchers on one resource)
// and the test that bounds the heap of an idle watcher.
//
//	go test ./watch -run '^$' -bench FanOut -benchtime 500x
//
// The store under the cacher is bbolt with UnsafeNoSync, so that fsync does
// not dominate the write path being measured.

package watch

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// heapPerWatcher opens n idle watchers on c (no consumer reading) and returns
// the heap they take, per watcher. The watchers are stopped afterwards.
func heapPerWatcher(tb testing.TB, c *Cacher, n int) float64 {
	tb.Helper()
	from := storage.FormatResourceVersion(current(tb, c))
	ws := make([]storage.Watcher, 0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range n {
		w, err := c.Watch(ctx, prefix(""), storage.WatchOptions{ResourceVersion: from, Recursive: true, ProgressNotify: true})
		if err != nil {
			tb.Fatal(err)
		}
		ws = append(ws, w)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	runtime.KeepAlive(ws)
	for _, w := range ws {
		w.Stop()
	}
	return per
}

func TestIdleWatcherHeap(t *testing.T) {
	c := startCacher(t, openBolt(t, true), Config{})
	mustCreate(t, c, key("ns", "a"), object("ns", "a", "1"))
	per := heapPerWatcher(t, c, 10000)
	t.Logf("heap per idle watcher (10,000 watchers, a cancellable context each): %.0f bytes", per)
	if per > 8192 {
		t.Errorf("an idle watcher takes %.0f bytes of heap, want at most 8 KiB", per)
	}
}

// fanOut is 10,000 watchers, each read by its own goroutine that records
// the delivery latency of every event: from just before the write (or the
// apply) of object o<i> to its arrival.
type fanOut struct {
	sentAt []atomic.Int64 // by object index, UnixNano before the write
	lats   [][]time.Duration
	wg     sync.WaitGroup
}

func newFanOut(tb testing.TB, c *Cacher, watchers, events int) *fanOut {
	tb.Helper()
	f := &fanOut{sentAt: make([]atomic.Int64, events), lats: make([][]time.Duration, watchers)}
	from := storage.FormatResourceVersion(current(tb, c))
	for i := range watchers {
		w := mustWatch(tb, c, prefix(""), storage.WatchOptions{ResourceVersion: from, Recursive: true})
		f.lats[i] = make([]time.Duration, 0, events)
		f.wg.Go(func() {
			for len(f.lats[i]) < events {
				ev, ok := <-w.ResultChan()
				if !ok || ev.Type == storage.EventError {
					return
				}
				k := ev.Object.Key
				n, err := strconv.Atoi(k[strings.LastIndexByte(k, 'o')+1:])
				if err != nil {
					continue
				}
				f.lats[i] = append(f.lats[i], time.Duration(time.Now().UnixNano()-f.sentAt[n].Load()))
			}
		})
	}
	return f
}

// report waits for every delivery and reports latency percentiles.
func (f *fanOut) report(b *testing.B, watchers, events int) {
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("not all %d deliveries within 60s", watchers*events)
	}
	var all []time.Duration
	for _, l := range f.lats {
		all = append(all, l...)
	}
	if len(all) != watchers*events {
		b.Fatalf("%d deliveries, want %d (a watcher was cut off?)", len(all), watchers*events)
	}
	slices.Sort(all)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
	b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
	b.ReportMetric(ms(all[len(all)-1]), "max-ms")
}

// BenchmarkFanOut10000Watchers writes b.N objects at 100 writes/s through
// the cacher into bbolt while 10,000 watchers read every event.
func BenchmarkFanOut10000Watchers(b *testing.B) {
	const watchers = 10000
	c := startCacher(b, openBolt(b, true), Config{})
	mustCreate(b, c, key("ns", "seed"), object("ns", "seed", "1"))
	b.ReportMetric(heapPerWatcher(b, c, watchers), "heap-B/idle-watcher")
	f := newFanOut(b, c, watchers, b.N)
	datas := make([][]byte, b.N)
	for i := range datas {
		datas[i] = object("ns", fmt.Sprintf("o%d", i), "1")
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		f.sentAt[i].Store(time.Now().UnixNano())
		mustCreate(b, c, key("ns", fmt.Sprintf("o%d", i)), datas[i])
	}
	f.report(b, watchers, b.N)
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N), "allocs/event")
	b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N)/watchers, "allocs/delivery")
}

// BenchmarkDispatch10000Watchers applies b.N events straight to the cacher
// (no store write, as fast as the watchers take them) with 10,000 watchers
// reading: the cost of the fan-out alone.
func BenchmarkDispatch10000Watchers(b *testing.B) {
	const watchers = 10000
	c := startCacher(b, openBolt(b, true), Config{})
	mustCreate(b, c, key("ns", "seed"), object("ns", "seed", "1"))
	f := newFanOut(b, c, watchers, b.N)
	base := current(b, c)
	evs := make([]storage.Event, b.N)
	for i := range evs {
		k := key("ns", fmt.Sprintf("o%d", i))
		data, meta, err := storage.PrepareCreate(object("ns", fmt.Sprintf("o%d", i), "1"), base+uint64(i)+1, "uid", "2024-01-01T00:00:00Z")
		if err != nil {
			b.Fatal(err)
		}
		evs[i] = storage.Event{Type: storage.EventAdded, Object: storage.Object{Key: k, ResourceVersion: base + uint64(i) + 1, Data: data, Meta: meta}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		f.sentAt[i].Store(time.Now().UnixNano())
		c.apply(evs[i])
	}
	f.report(b, watchers, b.N)
}
