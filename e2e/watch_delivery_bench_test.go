// This file holds the watch delivery benchmark: how long a write takes to
// reach watchers in one process, through each backend's own watch and
// through the watch cache over it, without HTTP: annex's native PostgreSQL
// backend, the etcd backend on kine on the same PostgreSQL, and bbolt as
// the reference that has no database round trip at all.

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/etcd"
	"github.com/annexapi/annex/storage/postgres"
	"github.com/annexapi/annex/watch"
)

// deliveryPrefix is the resource prefix the benchmark writes under.
var deliveryPrefix = storage.ResourcePrefix("bench.annex.dev", "widgets", "")

// BenchmarkWatchDelivery writes one object at a time and waits until every
// watcher has its event; it reports the write's p50 and p99 (create sent →
// acknowledged), the delivery's (acknowledged → received by a watcher, 0
// for an event that arrived first) and sent → received, over every event at
// every watcher. A backend that acknowledges late (kine) has events arrive
// first more often: sent → received is the figure that compares backends.
// "store" is one watch on the backend itself; "cacher_N" is N watchers of
// the watch cache over it, the fan-out every server runs.
//
//	cd e2e && go test -run '^$' -bench BenchmarkWatchDelivery -benchtime 300x .
func BenchmarkWatchDelivery(b *testing.B) {
	pg := binaries.StartPostgres(b)
	kineDSN, err := pg.CreateDatabase("kine")
	if err != nil {
		b.Fatal(err)
	}
	kineURL := binaries.StartKine(b, kineDSN).ClientURL
	nativeDSN, err := pg.CreateDatabase("native")
	if err != nil {
		b.Fatal(err)
	}
	var n int
	backends := []struct {
		name string
		open func(b *testing.B) storage.Interface
	}{
		{"bbolt", benchBbolt},
		{"postgres", func(b *testing.B) storage.Interface {
			n++
			s, err := postgres.Config{DSN: nativeDSN}.Open(context.Background(), postgres.Options{Table: fmt.Sprintf("bench%d", n), CompactionInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"kine_postgres", func(b *testing.B) storage.Interface {
			n++
			s := etcd.New(clientOf(b, kineURL), etcd.Options{Prefix: fmt.Sprintf("/bench-%d", n), CompactionInterval: -1})
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, be := range backends {
		for _, watchers := range []int{0, 1, 1000} {
			name := "store"
			if watchers > 0 {
				name = fmt.Sprintf("cacher_%d", watchers)
			}
			b.Run(be.name+"/"+name, func(b *testing.B) {
				s := be.open(b)
				if watchers > 0 {
					s = startCacher(b, s)
				}
				benchDelivery(b, s, max(watchers, 1))
			})
		}
	}
}

// startCacher returns a watch cache over s, ready.
func startCacher(b *testing.B, s storage.Interface) storage.Interface {
	c, err := watch.New(s, watch.Config{Prefix: deliveryPrefix})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for c.Ready(ctx) != nil {
		if time.Now().After(deadline) {
			b.Fatal("watch cache not ready after 30s")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	return c
}

// benchDelivery runs the benchmark's loop on s with watchers watches.
func benchDelivery(b *testing.B, s storage.Interface, watchers int) {
	ctx := b.Context()
	// A first write, so that the watches start from a revision.
	first, err := s.Create(ctx, storage.ObjectKey("bench.annex.dev", "widgets", "ns", "first"), deliveryObject("first"))
	if err != nil {
		b.Fatal(err)
	}
	type arrival struct {
		i  int
		at time.Time
	}
	arrivals := make(chan arrival, watchers)
	var wg sync.WaitGroup
	for range watchers {
		w, err := s.Watch(ctx, deliveryPrefix, storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(first.ResourceVersion), Recursive: true})
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			for ev := range w.ResultChan() {
				if ev.Type != storage.EventAdded {
					continue
				}
				var i int
				if _, err := fmt.Sscanf(ev.Object.Meta.Name, "o%d", &i); err == nil {
					arrivals <- arrival{i, time.Now()}
				}
			}
		})
		b.Cleanup(w.Stop)
	}
	b.Cleanup(wg.Wait)
	var writes, deliveries, fromSend []time.Duration
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("o%d", i)
		sent := time.Now()
		if _, err := s.Create(ctx, storage.ObjectKey("bench.annex.dev", "widgets", "ns", name), deliveryObject(name)); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		writes = append(writes, acked.Sub(sent))
		timeout := time.NewTimer(30 * time.Second)
		for range watchers {
			select {
			case a := <-arrivals:
				if a.i != i {
					b.Fatalf("event %d while waiting for %d", a.i, i)
				}
				deliveries = append(deliveries, max(a.at.Sub(acked), 0))
				fromSend = append(fromSend, a.at.Sub(sent))
			case <-timeout.C:
				b.Fatalf("event %d not delivered to every watcher within 30s", i)
			}
		}
		timeout.Stop()
	}
	b.StopTimer()
	slices.Sort(writes)
	slices.Sort(deliveries)
	slices.Sort(fromSend)
	q := func(ds []time.Duration, f float64) float64 {
		return float64(ds[min(len(ds)-1, int(f*float64(len(ds))))].Microseconds())
	}
	b.ReportMetric(q(writes, 0.5), "write-p50-µs")
	b.ReportMetric(q(writes, 0.99), "write-p99-µs")
	b.ReportMetric(q(deliveries, 0.5), "delivery-p50-µs")
	b.ReportMetric(q(deliveries, 0.99), "delivery-p99-µs")
	b.ReportMetric(q(fromSend, 0.5), "sent-to-delivered-p50-µs")
	b.ReportMetric(q(fromSend, 0.99), "sent-to-delivered-p99-µs")
}

// deliveryObject is a small object named name in namespace ns.
func deliveryObject(name string) []byte {
	return []byte(`{"apiVersion":"bench.annex.dev/v1","kind":"Widget","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"value":"` + strings.Repeat("x", 200) + `"}}`)
}
