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
// the watch cache over it, the fan-out every server runs. The "_across"
// backends write through one replica's store and watch another's on the
// same data, as two servers do: the native backend's second store is woken
// by LISTEN/NOTIFY, kine's second process polls the table.
//
//	cd e2e && go test -run '^$' -bench BenchmarkWatchDelivery -benchtime 300x .
//
// (the kine_postgres_across cases take about a second per write: 300x is
// five minutes each)
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
	// A second kine on the same database: a second replica's, which sees
	// the first one's writes by polling the table.
	kine2URL := binaries.StartKine(b, kineDSN).ClientURL
	var n int
	openPostgres := func(b *testing.B, table string) storage.Interface {
		s, err := postgres.Config{DSN: nativeDSN}.Open(context.Background(), postgres.Options{Table: table, CompactionInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	openKine := func(b *testing.B, url, prefix string) storage.Interface {
		s := etcd.New(clientOf(b, url), etcd.Options{Prefix: prefix, CompactionInterval: -1})
		b.Cleanup(func() { s.Close() })
		return s
	}
	// open returns the store written to and the store watched: the same
	// one, or (across) two replicas' stores of the same data.
	backends := []struct {
		name string
		open func(b *testing.B) (write, watched storage.Interface)
	}{
		{"bbolt", func(b *testing.B) (storage.Interface, storage.Interface) { s := benchBbolt(b); return s, s }},
		{"postgres", func(b *testing.B) (storage.Interface, storage.Interface) {
			n++
			s := openPostgres(b, fmt.Sprintf("bench%d", n))
			return s, s
		}},
		{"kine_postgres", func(b *testing.B) (storage.Interface, storage.Interface) {
			n++
			s := openKine(b, kineURL, fmt.Sprintf("/bench-%d", n))
			return s, s
		}},
		{"postgres_across", func(b *testing.B) (storage.Interface, storage.Interface) {
			n++
			table := fmt.Sprintf("bench%d", n)
			return openPostgres(b, table), openPostgres(b, table)
		}},
		{"kine_postgres_across", func(b *testing.B) (storage.Interface, storage.Interface) {
			n++
			prefix := fmt.Sprintf("/bench-%d", n)
			return openKine(b, kineURL, prefix), openKine(b, kine2URL, prefix)
		}},
	}
	for _, be := range backends {
		for _, watchers := range []int{0, 1, 1000} {
			name := "store"
			if watchers > 0 {
				name = fmt.Sprintf("cacher_%d", watchers)
			}
			b.Run(be.name+"/"+name, func(b *testing.B) {
				w, s := be.open(b)
				if watchers > 0 {
					same := w == s
					s = startCacher(b, s)
					if same { // one process: the writes go through its cache
						w = s
					}
				}
				benchDelivery(b, w, s, max(watchers, 1))
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

// benchDelivery runs the benchmark's loop: watchers watches on s, the
// writes to w (s itself, or the first of two replicas' stores when s is the
// second's, or a watch cache over it).
func benchDelivery(b *testing.B, w, s storage.Interface, watchers int) {
	ctx := b.Context()
	// A first write, so that the watches start from a revision.
	first, err := w.Create(ctx, storage.ObjectKey("bench.annex.dev", "widgets", "ns", "first"), deliveryObject("first"))
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
		if _, err := w.Create(ctx, storage.ObjectKey("bench.annex.dev", "widgets", "ns", name), deliveryObject(name)); err != nil {
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
