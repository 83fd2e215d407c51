package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// odSource is an event source over a map of node name -> cpu: it puts
// them all, calls Synced (unless quiet), then puts each change sent on
// changes, until ctx ends. It counts its runs and the puts it made.
type odSource struct {
	mu      sync.Mutex
	cpu     map[string]string
	changes chan string // a node name whose cpu was changed in cpu
	quiet   bool        // never call Synced
	runs    atomic.Int32
	running atomic.Int32
	puts    atomic.Int64
}

func newODSource(n int) *odSource {
	s := &odSource{cpu: map[string]string{}, changes: make(chan string, 16)}
	for i := range n {
		s.cpu[fmt.Sprintf("node-%d", i)] = "100m"
	}
	return s
}

func (s *odSource) put(feed *Feed, name string) error {
	s.mu.Lock()
	cpu := s.cpu[name]
	s.mu.Unlock()
	s.puts.Add(1)
	return feed.Put([]byte(`{"kind":"NodeMetrics","metadata":{"name":"` + name + `"},"usage":{"cpu":"` + cpu + `"}}`))
}

func (s *odSource) run(ctx context.Context, feed *Feed) error {
	s.runs.Add(1)
	s.running.Add(1)
	defer s.running.Add(-1)
	s.mu.Lock()
	var names []string
	for n := range s.cpu {
		names = append(names, n)
	}
	s.mu.Unlock()
	for _, n := range names {
		if err := s.put(feed, n); err != nil {
			return err
		}
	}
	if !s.quiet {
		feed.Synced()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-s.changes:
			if err := s.put(feed, n); err != nil {
				return err
			}
		}
	}
}

// change sets name's cpu and tells the running source.
func (s *odSource) change(name, cpu string) {
	s.mu.Lock()
	s.cpu[name] = cpu
	s.mu.Unlock()
	s.changes <- name
}

func startOnDemand(t *testing.T, src *odSource, linger time.Duration) *OnDemand {
	t.Helper()
	od, err := NewOnDemand(OnDemandConfig{Group: "metrics.k8s.io", Resource: "nodes", Source: src.run, Linger: linger,
		SyncWait: 200 * time.Millisecond, Cache: Config{BookmarkInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- od.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if n := src.running.Load(); n != 0 {
			t.Errorf("%d sources still running after Start returned", n)
		}
	})
	return od
}

var odPrefix = storage.ResourcePrefix("metrics.k8s.io", "nodes", "")

// waitUntil polls cond every 5ms for up to 5s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOnDemand_lifecycle: nothing runs before the first watch; the first
// watch primes a session from the source's state (ADDED events, then the
// changes); the session outlives its last watcher by Linger, then ends
// (the source's context ends); the next watch starts another session whose
// revisions follow the first's, so a watch from the first session's
// revision is 410 Expired while one from "0" gets the state again.
func TestOnDemand_lifecycle(t *testing.T) {
	src := newODSource(3)
	od := startOnDemand(t, src, 50*time.Millisecond)
	ctx := context.Background()
	time.Sleep(20 * time.Millisecond) // Start has run; nothing may start without a watch
	if n := src.runs.Load(); n != 0 {
		t.Fatalf("the source ran %d times before any watch", n)
	}
	if rev, _ := od.CurrentRevision(ctx); rev != 0 {
		t.Fatalf("revision %d before any watch", rev)
	}

	w, err := od.Watch(ctx, odPrefix, storage.WatchOptions{ResourceVersion: "", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 3 {
		ev := next(t, w, 5*time.Second)
		if ev.Type != storage.EventAdded {
			t.Fatalf("initial %s %s, want ADDED", ev.Type, ev.Object.Key)
		}
		last = max(last, ev.Object.ResourceVersion)
	}
	if last != 3 {
		t.Errorf("primed state at revision %d, want 3 (one per object)", last)
	}
	src.change("node-1", "250m")
	ev := next(t, w, 5*time.Second)
	if ev.Type != storage.EventModified || ev.Object.Meta.Name != "node-1" || ev.Object.ResourceVersion != 4 {
		t.Fatalf("change: %s %s %d, want MODIFIED node-1 4", ev.Type, ev.Object.Meta.Name, ev.Object.ResourceVersion)
	}

	// A second watcher from a revision of this session replays after it;
	// stopping the first leaves the session to the second.
	w2, err := od.Watch(ctx, odPrefix, storage.WatchOptions{ResourceVersion: "3", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, w2, 5*time.Second); ev.Type != storage.EventModified || ev.Object.ResourceVersion != 4 {
		t.Fatalf("replay from 3: %s %d", ev.Type, ev.Object.ResourceVersion)
	}
	w.Stop()
	time.Sleep(150 * time.Millisecond) // three lingers: w2 still holds the session
	if src.running.Load() != 1 || src.runs.Load() != 1 {
		t.Fatalf("with a watcher left: %d sources running, %d runs; want 1, 1", src.running.Load(), src.runs.Load())
	}
	w2.Stop()
	w2.Stop() // twice is once
	waitUntil(t, "the source stopped after the last watcher and Linger", func() bool { return src.running.Load() == 0 })
	if rev, _ := od.CurrentRevision(ctx); rev != 4 {
		t.Errorf("revision %d once the session ended, want 4", rev)
	}
	// No per-object work while nobody watches.
	puts := src.puts.Load()
	time.Sleep(20 * time.Millisecond)
	if src.puts.Load() != puts || src.runs.Load() != 1 {
		t.Fatalf("the source ran without watchers")
	}

	// From the old session's revision: 410, as kube's "too old resource
	// version", and no source keeps running for it.
	old, err := od.Watch(ctx, odPrefix, storage.WatchOptions{ResourceVersion: "4", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	ev = next(t, old, 5*time.Second)
	if ev.Type != storage.EventError || !errors.Is(ev.Err, storage.ErrExpired) {
		t.Fatalf("watch from the last session's revision: %s %v, want ERROR Expired", ev.Type, ev.Err)
	}
	old.Stop()
	// From "0": the state again, after the old revisions.
	w3, err := od.Watch(ctx, odPrefix, storage.WatchOptions{ResourceVersion: "0", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Stop()
	for range 3 {
		ev := next(t, w3, 5*time.Second)
		if ev.Type != storage.EventAdded || ev.Object.ResourceVersion <= 4 {
			t.Fatalf("new session: %s %s at %d, want ADDED after 4", ev.Type, ev.Object.Meta.Name, ev.Object.ResourceVersion)
		}
	}
	if n := src.runs.Load(); n != 2 {
		t.Errorf("%d source runs, want 2 (one per session)", n)
	}
	if od.sessions != 2 {
		t.Errorf("%d sessions, want 2", od.sessions)
	}
}

// TestOnDemand_watch_list: a watch-list of a fresh session gets the primed
// state, then the bookmark ending it at the state's revision.
func TestOnDemand_watch_list(t *testing.T) {
	src := newODSource(5)
	od := startOnDemand(t, src, time.Minute)
	w, err := od.Watch(context.Background(), odPrefix, storage.WatchOptions{Recursive: true, SendInitialEvents: true, ProgressNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range 5 {
		if ev := next(t, w, 5*time.Second); ev.Type != storage.EventAdded {
			t.Fatalf("initial %s", ev.Type)
		}
	}
	ev := next(t, w, 5*time.Second)
	if ev.Type != storage.EventBookmark || !ev.InitialEventsEnd || ev.Object.ResourceVersion != 5 {
		t.Fatalf("after the state: %s end=%v at %d, want the initial-events-end bookmark at 5", ev.Type, ev.InitialEventsEnd, ev.Object.ResourceVersion)
	}
}

// TestOnDemand_waits: a watch waits for the priming; one whose context ends
// meanwhile gives the session up (it then ends after Linger); a source that
// never calls Synced is served what it put after SyncWait.
func TestOnDemand_waits(t *testing.T) {
	src := newODSource(2)
	src.quiet = true
	od := startOnDemand(t, src, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := od.Watch(ctx, odPrefix, storage.WatchOptions{Recursive: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("watch while the source has not synced, its context ending first: %v", err)
	}
	waitUntil(t, "the abandoned session ended", func() bool { return src.running.Load() == 0 })

	t0 := time.Now()
	w, err := od.Watch(context.Background(), odPrefix, storage.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if d := time.Since(t0); d < 200*time.Millisecond {
		t.Errorf("served after %v, before SyncWait", d)
	}
	for range 2 {
		if ev := next(t, w, 5*time.Second); ev.Type != storage.EventAdded {
			t.Fatalf("initial %s", ev.Type)
		}
	}
}

// TestOnDemand_stopped: once Start has returned, a watch is ErrNotReady
// (429 and a retry for the client), and the session it ended is gone.
func TestOnDemand_stopped(t *testing.T) {
	src := newODSource(1)
	od, err := NewOnDemand(OnDemandConfig{Resource: "nodes", Group: "metrics.k8s.io", Source: src.run})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- od.Start(ctx) }()
	w, err := od.Watch(context.Background(), odPrefix, storage.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w, 5*time.Second); ev.Type != storage.EventAdded {
		t.Fatalf("initial %s", ev.Type)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := src.running.Load(); n != 0 {
		t.Errorf("%d sources running after Start returned", n)
	}
	if ev := next(t, w, 5*time.Second); ev.Type != storage.EventError || !errors.Is(ev.Err, ErrStopped) {
		t.Errorf("the watcher of the ended session: %s %v, want ERROR stopped", ev.Type, ev.Err)
	}
	if _, err := od.Watch(context.Background(), odPrefix, storage.WatchOptions{Recursive: true}); !errors.Is(err, storage.ErrNotReady) {
		t.Fatalf("watch after Start returned: %v", err)
	}
	if _, err := NewOnDemand(OnDemandConfig{Resource: "nodes"}); err == nil {
		t.Error("no Source: accepted")
	}
}
