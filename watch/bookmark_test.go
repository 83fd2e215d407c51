package watch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// manualClock is a Config.Clock the test moves by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func TestNextBookmark(t *testing.T) {
	t.Parallel()
	c := &Cacher{cfg: Config{BookmarkInterval: time.Minute}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		now      time.Time
		deadline time.Time
		want     time.Time
	}{
		{name: "no_deadline_every_minute", now: t0, want: t0.Add(time.Minute)},
		{name: "far_deadline", now: t0, deadline: t0.Add(10 * time.Minute), want: t0.Add(time.Minute)},
		{name: "deadline_within_a_minute", now: t0, deadline: t0.Add(30 * time.Second), want: t0.Add(28 * time.Second)},
		{name: "at_two_seconds_before_deadline", now: t0, deadline: t0.Add(2 * time.Second), want: t0},
		{name: "past_two_seconds_before_deadline", now: t0, deadline: t0.Add(time.Second), want: time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.nextBookmark(tt.now, tt.deadline); !got.Equal(tt.want) {
				t.Errorf("nextBookmark = %v, want %v", got, tt.want)
			}
		})
	}
	cfg, err := Config{Prefix: suitePrefix}.withDefaults()
	if err != nil || cfg.BookmarkInterval != time.Minute {
		t.Fatalf("default BookmarkInterval %v (%v), want a minute", cfg.BookmarkInterval, err)
	}
}

// TestBookmarkCadence: with the default interval a watcher gets a bookmark
// a minute after it started, not before; one whose context ends within the
// minute gets one 2 seconds before its deadline and no other. Time is a
// manual clock; a fence event shows that a tick delivered nothing.
func TestBookmarkCadence(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	clock := &manualClock{now: t0}
	c := startCacher(t, openBolt(t, true), Config{Clock: clock.Now})
	if c.cfg.BookmarkInterval != time.Minute {
		t.Fatalf("default BookmarkInterval %v, want a minute", c.cfg.BookmarkInterval)
	}
	mustCreate(t, c, key("ns", "a"), object("ns", "a", "1"))
	from := storage.FormatResourceVersion(current(t, c))
	opts := storage.WatchOptions{ResourceVersion: from, Recursive: true, ProgressNotify: true}
	long := mustWatch(t, c, prefix("ns"), opts)
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(30*time.Second))
	defer cancel()
	short, err := c.Watch(ctx, prefix("ns"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Stop()

	bookmark := func(w storage.Watcher, what string) {
		t.Helper()
		if ev := next(t, w, 10*time.Second); ev.Type != storage.EventBookmark {
			t.Fatalf("%s: %s, want a bookmark", what, ev.Type)
		}
	}
	// fence creates an object; the watcher's next event must be its ADDED,
	// not a bookmark delivered by a tick before it.
	n := 0
	fence := func(ws ...storage.Watcher) {
		t.Helper()
		n++
		name := "fence-" + string(rune('a'+n))
		o := mustCreate(t, c, key("ns", name), object("ns", name, "1"))
		for _, w := range ws {
			if ev := next(t, w, 10*time.Second); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != o.ResourceVersion {
				t.Fatalf("%s: first event %s at %d, want the fence ADDED at %d", name, ev.Type, ev.Object.ResourceVersion, o.ResourceVersion)
			}
		}
	}

	// 27s in: nobody is due.
	clock.set(t0.Add(27 * time.Second))
	fence(long, short)

	// 28.5s: the short watcher's pre-deadline bookmark; the long one gets none.
	clock.set(t0.Add(28*time.Second + 500*time.Millisecond))
	bookmark(short, "2s before the deadline")
	fence(long, short)

	// 61s: the long watcher's first periodic bookmark; the short one, past
	// its pre-deadline bookmark, gets no more.
	clock.set(t0.Add(61 * time.Second))
	bookmark(long, "a minute after the start")
	fence(long, short)
}
