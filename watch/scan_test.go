package watch

import (
	"context"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// gatedProbe is a predicate that matches nothing and records, across all
// the walks that share it, how many of them were past their first
// yieldEvery objects (where a walk holds a slot of its Scans) at once.
type gatedProbe struct {
	inside, most atomic.Int64
	calls        int // this walk's; one probe per walk
	shared       *gatedProbe
}

func (p *gatedProbe) Matches(*storage.Object) bool {
	if p.calls++; p.calls < yieldEvery {
		return false
	}
	s := p.shared
	n := s.inside.Add(1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	// Let the other walks run while this one is inside: without the
	// limit they would come inside too, whatever the number of cores.
	runtime.Gosched()
	s.inside.Add(-1)
	return false
}

// TestScansHoldLongWalksToTheirCores runs selector LISTs (paged and
// streamed) that match nothing over a cache of several thousand objects,
// concurrently, with a limit of one core: past its first yieldEvery
// objects, no walk ever scans while another does.
func TestScansHoldLongWalksToTheirCores(t *testing.T) {
	t.Parallel()
	store := openBolt(t, true)
	populate(t, store, 4*yieldEvery)
	c := startCacher(t, store, Config{Scans: NewScans(1)})
	shared := &gatedProbe{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := &gatedProbe{shared: shared}
			res, err := c.List(context.Background(), suitePrefix, storage.ListOptions{Predicate: p, Stream: i%2 == 0})
			if err != nil {
				t.Errorf("List: %v", err)
				return
			}
			if res.Each != nil {
				for range res.Each {
					t.Error("an object matched a predicate that matches none")
				}
			} else if len(res.Items) != 0 {
				t.Errorf("%d objects matched a predicate that matches none", len(res.Items))
			}
			if p.calls != 4*yieldEvery {
				t.Errorf("the walk read %d objects, want %d", p.calls, 4*yieldEvery)
			}
		})
	}
	wg.Wait()
	if got := shared.most.Load(); got != 1 {
		t.Errorf("at most %d walks scanned at once past their first %d objects, want 1 (the limit)", got, yieldEvery)
	}
}

// TestScanGivesItsCoreUpToItsConsumer: a streamed LIST whose consumer
// waits (a slow client) holds no slot meanwhile, so another long walk, on
// a limit of one core, runs to its end.
func TestScanGivesItsCoreUpToItsConsumer(t *testing.T) {
	t.Parallel()
	store := openBolt(t, true)
	populate(t, store, 3*yieldEvery)
	c := startCacher(t, store, Config{Scans: NewScans(1)})
	ctx := context.Background()
	res, err := c.List(ctx, suitePrefix, storage.ListOptions{Stream: true})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	blocked, release := make(chan struct{}), make(chan struct{})
	go func() {
		n := 0
		for range res.Each {
			if n++; n == 2*yieldEvery { // past its first turn's start
				close(blocked)
				<-release
			}
		}
	}()
	<-blocked
	done := make(chan error, 1)
	go func() {
		res, err := c.List(ctx, suitePrefix, storage.ListOptions{Predicate: storage.PredicateFunc(func(*storage.Object) bool { return false })})
		if err == nil && len(res.Items) != 0 {
			err = context.Canceled
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("List: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("a walk waited for the core of a walk whose consumer was blocked")
	}
	close(release)
}

func TestNewScansLeavesACore(t *testing.T) {
	t.Parallel()
	want := max(1, runtime.GOMAXPROCS(0)-1)
	if got := NewScans(0).Cores(); got != want {
		t.Errorf("NewScans(0).Cores() = %d, want %d", got, want)
	}
	if got := NewScans(3).Cores(); got != 3 {
		t.Errorf("NewScans(3).Cores() = %d, want 3", got)
	}
}

// BenchmarkGetDuringScans is a GET's round trip over a loopback TCP
// connection (a byte in, the cached object's bytes out) while GOMAXPROCS
// goroutines run selector LISTs matching nothing over 20,000 objects, one
// after another: with the scans limited to GOMAXPROCS-1 cores (the
// default), and to all of them (each walk yielding with runtime.Gosched
// every yieldEvery objects, as before there was a limit). It reports the
// round trip's p50 and p99 and the scans' throughput.
//
//	go test ./watch -run '^$' -bench GetDuringScans -benchtime 300x
func BenchmarkGetDuringScans(b *testing.B) {
	store := openBolt(b, true)
	populate(b, store, 20_000)
	for _, tc := range []struct {
		name  string
		cores int
	}{{"free_core", 0}, {"all_cores", runtime.GOMAXPROCS(0)}} {
		b.Run(tc.name, func(b *testing.B) {
			c := startCacher(b, store, Config{Scans: NewScans(tc.cores)})
			ctx, cancel := context.WithCancel(context.Background())
			var scans atomic.Int64
			var wg sync.WaitGroup
			none := storage.PredicateFunc(func(*storage.Object) bool { return false })
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for ctx.Err() == nil {
						if _, err := c.List(ctx, suitePrefix, storage.ListOptions{Predicate: none}); err != nil {
							b.Error(err)
							return
						}
						scans.Add(1)
					}
				})
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				one := make([]byte, 1)
				for {
					if _, err := conn.Read(one); err != nil {
						return
					}
					o, err := c.Get(ctx, key("ns1", "o000001"), storage.GetOptions{ResourceVersion: "0"})
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := conn.Write(o.Data[:1]); err != nil {
						return
					}
				}
			})
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			one := make([]byte, 1)
			start, scans0 := time.Now(), scans.Load()
			for b.Loop() {
				t0 := time.Now()
				if _, err := conn.Write(one); err != nil {
					b.Fatal(err)
				}
				if _, err := conn.Read(one); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed, done := time.Since(start), scans.Load()-scans0
			conn.Close()
			ln.Close()
			cancel()
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(done)/elapsed.Seconds(), "scans/s")
		})
	}
}

// BenchmarkScanVisit is what a walk pays per object for its turns on
// Scans' cores (a slot taken and a look at the clock every yieldEvery
// objects, runtime.Gosched too), beside the yield alone that walks did
// before there was a limit (runtime.Gosched every yieldEvery objects).
// Both are about a nanosecond per object (visit is inlined; before it was,
// the limit cost 3.3–3.8 ns against 1.2–1.4), against ~16 ns an object of
// a selector LIST costs at the least (BenchmarkListScan).
//
//	go test ./watch -run '^$' -bench ScanVisit -count 4
func BenchmarkScanVisit(b *testing.B) {
	b.Run("limit", func(b *testing.B) {
		w := scan{s: NewScans(0)}
		for b.Loop() {
			w.visit()
		}
		w.pause()
	})
	b.Run("gosched_only", func(b *testing.B) {
		visited := 0
		for b.Loop() {
			if visited++; visited%yieldEvery == 0 {
				runtime.Gosched()
			}
		}
	})
}
