// This file tests the dispatch shards: per-watcher order and gap-freedom
// with several shards while watchers start and stop mid-stream, Stop racing
// deliveries, the default number of shards, and the bounded shard backlog.

package watch

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/annexapi/annex/storage"
)

// change is one write as the writer saw it.
type change struct {
	typ storage.EventType
	key string
	ns  string
	rev uint64
}

func (c change) String() string { return fmt.Sprintf("%s %s@%d", c.typ, c.key, c.rev) }

// collect reads w until it has want events or its channel closes, failing
// on an ERROR event or after timeout.
func collect(t *testing.T, w storage.Watcher, want int, timeout time.Duration) []change {
	t.Helper()
	var got []change
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(got) < want {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			if ev.Type == storage.EventError {
				t.Errorf("ERROR event: %v", ev.Err)
				return got
			}
			got = append(got, change{typ: ev.Type, key: ev.Object.Key, ns: ev.Object.Meta.Namespace, rev: ev.Object.ResourceVersion})
		case <-timer.C:
			t.Errorf("%d of %d events within %v", len(got), want, timeout)
			return got
		}
	}
	return got
}

func TestShardsKeepOrderPerWatcher(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{DispatchWorkers: 4})
	if len(c.shards) != 4 {
		t.Fatalf("%d shards, want 4", len(c.shards))
	}
	type watch struct {
		w    storage.Watcher
		from uint64 // the revision it started after
		ns   string // "" for every namespace
		stop int    // stopped after this many writes (0: never)
	}
	var ws []*watch
	start := func(from uint64, i int) {
		ns := []string{"", "a", "b"}[i%3]
		w := mustWatch(t, c, prefix(ns), storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(from), Recursive: true})
		ws = append(ws, &watch{w: w, from: from, ns: ns})
	}
	for i := range 30 {
		start(current(t, c), i)
	}
	// Creates, updates and deletes in two namespaces; watchers start from
	// revisions in the ring as it goes, and some stop mid-stream.
	const writes = 300
	var changes []change
	for i := range writes {
		ns := []string{"a", "b"}[i%2]
		name := fmt.Sprint(i % 20)
		k := key(ns, name)
		var ch change
		if _, err := c.Get(context.Background(), k, storage.GetOptions{ResourceVersion: "0"}); err == nil {
			if i%3 == 0 {
				d, err := c.Delete(context.Background(), k, storage.DeleteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ch = change{storage.EventDeleted, k, ns, d.ResourceVersion}
			} else {
				u := mustRelabel(t, c, k, "i", fmt.Sprint(i))
				ch = change{storage.EventModified, k, ns, u.ResourceVersion}
			}
		} else {
			o := mustCreate(t, c, k, object(ns, name, "1"))
			ch = change{storage.EventAdded, k, ns, o.ResourceVersion}
		}
		changes = append(changes, ch)
		switch {
		case i%25 == 0:
			from := changes[max(0, i-5)].rev // a few events back: replayed from the ring
			for j := range 6 {
				start(from, j)
			}
		case i%40 == 0:
			ws[i/40].stop = i
			ws[i/40].w.Stop()
		}
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		var want []change
		for _, ch := range changes {
			if ch.rev > w.from && (w.ns == "" || ch.ns == w.ns) {
				want = append(want, ch)
			}
		}
		wg.Go(func() {
			got := collect(t, w.w, len(want), 10*time.Second)
			if w.stop != 0 {
				// Stopped: what arrived is a prefix of what it would have seen.
				want = want[:min(len(want), len(got))]
			}
			if len(got) != len(want) {
				t.Errorf("watcher from %d in %q (stopped at %d): %d events, want %d", w.from, w.ns, w.stop, len(got), len(want))
				return
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("watcher from %d in %q: event %d is %v, want %v", w.from, w.ns, i, got[i], want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestStopWhileDispatching(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{DispatchWorkers: 2})
	from := storage.FormatResourceVersion(current(t, c))
	const n = 200
	ws := make([]storage.Watcher, n)
	for i := range ws {
		ws[i] = mustWatch(t, c, prefix(""), storage.WatchOptions{ResourceVersion: from, Recursive: true, ProgressNotify: true})
	}
	done := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			mustCreate(t, c, key("ns", fmt.Sprint(i)), object("ns", fmt.Sprint(i), "1"))
			if i%10 == 0 {
				if err := c.RequestProgress(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	// Each reader takes a few events (in order), then stops its watcher
	// while the writer goes on: the channel must close, with no panic from
	// a send on a closed channel.
	var readers sync.WaitGroup
	for i, w := range ws {
		readers.Go(func() {
			var last uint64
			for range i % 7 {
				ev := next(t, w, 10*time.Second)
				if ev.Type != storage.EventBookmark && ev.Object.ResourceVersion <= last {
					t.Errorf("watcher %d: %s at %d after %d", i, ev.Type, ev.Object.ResourceVersion, last)
				}
				if ev.Type != storage.EventBookmark {
					last = ev.Object.ResourceVersion
				}
			}
			w.Stop()
			timer := time.NewTimer(10 * time.Second)
			defer timer.Stop()
			for {
				select {
				case _, ok := <-w.ResultChan():
					if !ok {
						return
					}
				case <-timer.C:
					t.Errorf("watcher %d: channel not closed within 10s of Stop", i)
					return
				}
			}
		})
	}
	readers.Wait()
	close(done)
	writer.Wait()
	// Every watcher left its shard.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := registeredWatchers(c); got == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d watchers still registered in the shards 10s after Stop", got)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

// registeredWatchers is apiserver_registered_watchers: the shards lower it
// as they forget a watcher.
func registeredWatchers(c *Cacher) int { return int(testutil.ToFloat64(c.m.watchers)) }

func TestDispatchWorkersDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		workers int
		want    int
	}{
		{name: "zero_means_gomaxprocs", workers: 0, want: runtime.GOMAXPROCS(0)},
		{name: "explicit", workers: 3, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(openBolt(t, true), Config{Prefix: suitePrefix, DispatchWorkers: tc.workers})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.shards) != tc.want || c.cfg.DispatchWorkers != tc.want {
				t.Errorf("%d shards (DispatchWorkers %d), want %d", len(c.shards), c.cfg.DispatchWorkers, tc.want)
			}
		})
	}
}

func TestShardBacklogIsBounded(t *testing.T) {
	t.Parallel()
	c, err := New(openBolt(t, true), Config{Prefix: suitePrefix, DispatchWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := c.shards[0]
	e := newEvent(storage.EventAdded, storage.Object{Key: key("ns", "a"), ResourceVersion: 1}, nil)
	for range 10 {
		s.enqueue(item{kind: itemEvent, e: e})
	}
	room := make(chan struct{})
	go func() { s.waitRoom(4); close(room) }()
	select {
	case <-room:
		t.Fatal("waitRoom(4) returned with 10 events queued and no shard goroutine")
	default:
	}
	var wg sync.WaitGroup
	wg.Go(s.run)
	select {
	case <-room:
	case <-time.After(10 * time.Second):
		t.Fatal("waitRoom did not return within 10s of the shard taking its queue")
	}
	s.enqueue(item{kind: itemStop})
	wg.Wait()
	if s.enqueue(item{kind: itemEvent, e: e}) {
		t.Error("enqueue on a stopped shard reported success")
	}
	s.waitRoom(0) // a stopped shard never makes anyone wait
}
