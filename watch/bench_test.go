// This file holds the fan-out benchmarks (10,000 watchers on one resource)
// and the test that bounds the heap of an idle watcher.
//
//	go test ./watch -run '^$' -bench . -benchtime 300x
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
	"github.com/annexapi/annex/storage/backend"
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
// the delivery latency of every event: from the time the write of object
// o<i> was scheduled (or the apply started) to its arrival.
type fanOut struct {
	sentAt []atomic.Int64 // by object index, UnixNano of the scheduled write
	lats   [][]time.Duration
	wg     sync.WaitGroup
	// With track, complete[i] is closed once every watcher has event i.
	delivered []atomic.Int32
	complete  []chan struct{}
}

func newFanOut(tb testing.TB, c *Cacher, watchers, events int, track bool) *fanOut {
	tb.Helper()
	f := &fanOut{sentAt: make([]atomic.Int64, events), lats: make([][]time.Duration, watchers)}
	if track {
		f.delivered = make([]atomic.Int32, events)
		f.complete = make([]chan struct{}, events)
		for i := range f.complete {
			f.complete[i] = make(chan struct{})
		}
	}
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
				if track && f.delivered[n].Add(1) == int32(watchers) {
					close(f.complete[n])
				}
			}
		})
	}
	return f
}

// wait waits for every delivery and fails when one is missing.
func (f *fanOut) wait(b *testing.B, watchers, events int) []time.Duration {
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		b.Fatalf("not all %d deliveries within 120s", watchers*events)
	}
	var all []time.Duration
	for _, l := range f.lats {
		all = append(all, l...)
	}
	if len(all) != watchers*events {
		b.Fatalf("%d deliveries, want %d (a watcher was cut off?)", len(all), watchers*events)
	}
	return all
}

// reportLatency reports percentiles of the delivery latencies.
func reportLatency(b *testing.B, all []time.Duration) {
	slices.Sort(all)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
	b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
	b.ReportMetric(ms(all[len(all)-1]), "max-ms")
}

// benchWorkers is one DispatchWorkers setting the benchmarks compare.
type benchWorkers struct {
	name    string
	workers int
}

func fanOutWorkers() []benchWorkers {
	return []benchWorkers{{"workers=default", 0}, {"workers=1", 1}}
}

// BenchmarkFanOut10000Watchers writes b.N objects through the cacher into
// bbolt while 10,000 watchers read every event. The writer is open loop:
// write i is scheduled at start + i×10ms (100 writes/s) whatever happened to
// the earlier ones, and latency counts from the scheduled time, so a cacher
// (or a writer) that falls behind shows up as latency, not as a lower rate.
// It reports the latency percentiles, the write rate achieved, the writer's
// worst lateness, allocations per event and per delivery, and the heap of an
// idle watcher.
func BenchmarkFanOut10000Watchers(b *testing.B) {
	for _, bc := range fanOutWorkers() {
		b.Run(bc.name, func(b *testing.B) {
			const watchers = 10000
			const interval = 10 * time.Millisecond
			c := startCacher(b, openBolt(b, true), Config{DispatchWorkers: bc.workers})
			mustCreate(b, c, key("ns", "seed"), object("ns", "seed", "1"))
			heap := heapPerWatcher(b, c, watchers)
			f := newFanOut(b, c, watchers, b.N, false)
			keys := make([]string, b.N)
			datas := make([][]byte, b.N)
			for i := range datas {
				keys[i] = key("ns", fmt.Sprintf("o%d", i))
				datas[i] = object("ns", fmt.Sprintf("o%d", i), "1")
			}
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mallocs := ms.Mallocs
			b.ResetTimer()
			start := time.Now().Add(interval)
			var lateness time.Duration
			for i := range b.N {
				at := start.Add(time.Duration(i) * interval)
				if d := time.Until(at); d > 0 {
					timer.Reset(d)
					<-timer.C
				}
				lateness = max(lateness, time.Since(at))
				f.sentAt[i].Store(at.UnixNano())
				mustCreate(b, c, keys[i], datas[i])
			}
			elapsed := time.Since(start)
			lats := f.wait(b, watchers, b.N)
			b.StopTimer()
			runtime.ReadMemStats(&ms)
			reportLatency(b, lats)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(lateness)/float64(time.Millisecond), "write-late-ms")
			b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N), "allocs/event")
			b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N)/watchers, "allocs/delivery")
			b.ReportMetric(heap, "heap-B/idle-watcher")
		})
	}
}

// BenchmarkDispatch10000Watchers applies b.N events straight to the cacher
// (no store write) with 10,000 watchers reading, as fast as they are
// delivered: event i is applied once every watcher has event i-6 (so no watcher ever has more than its channel holds). ns/op is
// the time to deliver one event to every watcher (the throughput of the
// fan-out alone); the latencies count from the apply.
func BenchmarkDispatch10000Watchers(b *testing.B) {
	for _, bc := range fanOutWorkers() {
		b.Run(bc.name, func(b *testing.B) {
			const watchers = 10000
			c := startCacher(b, openBolt(b, true), Config{DispatchWorkers: bc.workers})
			mustCreate(b, c, key("ns", "seed"), object("ns", "seed", "1"))
			f := newFanOut(b, c, watchers, b.N, true)
			base := current(b, c)
			evs := make([]storage.Event, b.N)
			for i := range evs {
				k := key("ns", fmt.Sprintf("o%d", i))
				data, meta, err := backend.PrepareCreate(object("ns", fmt.Sprintf("o%d", i), "1"), base+uint64(i)+1, "uid", "2024-01-01T00:00:00Z")
				if err != nil {
					b.Fatal(err)
				}
				evs[i] = storage.Event{Type: storage.EventAdded, Object: storage.Object{Key: k, ResourceVersion: base + uint64(i) + 1, Data: data, Meta: meta}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			const window = 6
			for i := range b.N {
				if i >= window {
					<-f.complete[i-window]
				}
				f.sentAt[i].Store(time.Now().UnixNano())
				c.apply(evs[i])
			}
			lats := f.wait(b, watchers, b.N)
			b.StopTimer()
			reportLatency(b, lats)
		})
	}
}
