// This file tests how a watch that starts with the current state (a
// watch-list, or resource version "0") builds its initial events outside the
// cacher's lock: writes applied meanwhile arrive once, after the initial
// events, and a ring that wraps meanwhile makes it start again.

package watch

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// eventString is an event as the tests compare it.
func eventString(ev storage.Event) string {
	if ev.Type == storage.EventBookmark {
		return fmt.Sprintf("BOOKMARK end=%v @%d", ev.InitialEventsEnd, ev.Object.ResourceVersion)
	}
	return fmt.Sprintf("%s %s @%d", ev.Type, ev.Object.Meta.Name, ev.Object.ResourceVersion)
}

func TestInitialEventsBuiltOutsideTheLock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		ringSize int
		writes   int  // objects created while the first build runs
		list     bool // SendInitialEvents, else resource version "0"
		// builds is how many times the initial events are built outside
		// the lock.
		builds int
	}{
		{name: "watch_list_writes_while_building", ringSize: 0, writes: 3, list: true, builds: 1},
		{name: "rv_0_writes_while_building", ringSize: 0, writes: 3, list: false, builds: 1},
		{name: "watch_list_ring_wraps_while_building", ringSize: 4, writes: 10, list: true, builds: 2},
		{name: "rv_0_ring_wraps_while_building", ringSize: 4, writes: 10, list: false, builds: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startCacher(t, openBolt(t, true), Config{RingSize: tt.ringSize, BookmarkInterval: -1})
			var want []string
			for _, n := range []string{"c", "a", "b"} {
				mustCreate(t, c, key("ns", n), object("ns", n, "1"))
			}
			state := map[string]uint64{}
			for _, n := range []string{"a", "b", "c"} {
				o, err := c.Get(context.Background(), key("ns", n), storage.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				state[n] = o.ResourceVersion
			}
			start := current(t, c)
			// The writes made during the first build: each waits until the
			// cache has applied it, which it could not if the build held
			// the lock.
			var builds atomic.Int32
			var during []storage.Object
			f := func() {
				if builds.Add(1) != 1 {
					return
				}
				for i := range tt.writes {
					n := fmt.Sprintf("w%02d", i)
					o := mustCreate(t, c, key("ns", n), object("ns", n, "1"))
					if ok, err := c.waitFor(context.Background(), o.ResourceVersion, false); !ok || err != nil {
						t.Errorf("the cache did not apply the write at %d while the initial events were built: %v", o.ResourceVersion, err)
					}
					during = append(during, o)
				}
			}
			c.building.Store(&f)
			opts := storage.WatchOptions{Recursive: true, ResourceVersion: "0"}
			if tt.list {
				opts = storage.WatchOptions{Recursive: true, SendInitialEvents: true}
			}
			w := mustWatch(t, c, prefix(""), opts)

			if tt.builds == 1 {
				// The state at the snapshot, then the writes as changes.
				for _, n := range []string{"a", "b", "c"} {
					want = append(want, fmt.Sprintf("ADDED %s @%d", n, state[n]))
				}
				if tt.list {
					want = append(want, fmt.Sprintf("BOOKMARK end=true @%d", start))
				}
				for _, o := range during {
					want = append(want, fmt.Sprintf("ADDED %s @%d", o.Meta.Name, o.ResourceVersion))
				}
			} else {
				// Started again from a snapshot with the writes in it.
				for _, n := range []string{"a", "b", "c"} {
					want = append(want, fmt.Sprintf("ADDED %s @%d", n, state[n]))
				}
				for _, o := range during {
					want = append(want, fmt.Sprintf("ADDED %s @%d", o.Meta.Name, o.ResourceVersion))
				}
				if tt.list {
					want = append(want, fmt.Sprintf("BOOKMARK end=true @%d", during[len(during)-1].ResourceVersion))
				}
			}
			// One more write after the start: it must come next, once.
			after := mustCreate(t, c, key("ns", "z"), object("ns", "z", "1"))
			want = append(want, fmt.Sprintf("ADDED z @%d", after.ResourceVersion))

			var got []string
			for range want {
				got = append(got, eventString(next(t, w, 5*time.Second)))
			}
			if !slices.Equal(got, want) {
				t.Errorf("events:\n got %q\nwant %q", got, want)
			}
			select {
			case ev := <-w.ResultChan():
				t.Errorf("unexpected event after the last write: %s", eventString(ev))
			default:
			}
			if n := builds.Load(); n != int32(tt.builds) {
				t.Errorf("the initial events were built outside the lock %d times, want %d", n, tt.builds)
			}
		})
	}
}

// A watch-list over more objects than the dispatch budget, whose consumer
// takes longer than MaxLag to read them while writes arrive, is not cut
// off: its starting events are bounded by WatcherBuffer alone, and the lag
// clock starts once they are taken.
func TestStartingEventsOutsideBudgetAndLag(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64 // how far the test's clock is ahead of time.Now
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	c := startCacher(t, openBolt(t, true), Config{BookmarkInterval: -1, DispatchBudget: 20,
		MaxLag: time.Second, DispatchWorkers: 1, Clock: clock})
	const objects = 300 // far beyond the result channel and the budget
	for i := range objects {
		n := fmt.Sprintf("o%03d", i)
		mustCreate(t, c, key("ns", n), object("ns", n, "1"))
	}
	slow := mustWatch(t, c, prefix(""), storage.WatchOptions{Recursive: true, SendInitialEvents: true})
	fast := mustWatch(t, c, prefix(""), storage.WatchOptions{Recursive: true, ResourceVersion: fmt.Sprint(current(t, c))})

	// An hour passes before the consumer reads anything, while writes
	// arrive: each is queued behind the starting events.
	offset.Store(int64(time.Hour))
	var writes []storage.Object
	for i := range 5 {
		n := fmt.Sprintf("w%d", i)
		writes = append(writes, mustCreate(t, c, key("ns", n), object("ns", n, "1")))
	}
	// The one shard has offered every write to both watchers once the fast
	// one has them all.
	for range writes {
		if ev := next(t, fast, 5*time.Second); ev.Type != storage.EventAdded {
			t.Fatalf("fast watcher: %s", eventString(ev))
		}
	}

	for i := range objects {
		ev := next(t, slow, 5*time.Second)
		if ev.Type != storage.EventAdded {
			t.Fatalf("starting event %d: %s (%v)", i, eventString(ev), ev.Err)
		}
	}
	if ev := next(t, slow, 5*time.Second); ev.Type != storage.EventBookmark || !ev.InitialEventsEnd {
		t.Fatalf("after the initial state: %s (%v), want the initial-events-end bookmark", eventString(ev), ev.Err)
	}
	for _, o := range writes {
		ev := next(t, slow, 5*time.Second)
		if got, want := eventString(ev), fmt.Sprintf("ADDED %s @%d", o.Meta.Name, o.ResourceVersion); got != want {
			t.Fatalf("live event: %s (%v), want %s", got, ev.Err, want)
		}
	}
	if n := c.queued.n.Load(); n != 0 {
		t.Errorf("dispatch budget still holds %d events once everything was taken", n)
	}
}
