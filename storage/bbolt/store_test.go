package bbolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

func openTest(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "annex.db")
	}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testObject(name, value string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Widget","metadata":{"name":%q,"namespace":"ns"},"spec":{"value":%q}}`, name, value))
}

func testKey(name string) string { return storage.ObjectKey("test.annex.dev", "widgets", "ns", name) }

const testPrefix = "/test.annex.dev/widgets/ns"

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv(t *testing.T, w storage.Watcher) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a watch event")
	}
	return storage.Event{}
}

func TestRestartKeepsRevisionAndHistory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "annex.db")
	s, err := Open(path, Options{UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Create(ctx, testKey("a"), testObject("a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, testKey("b"), testObject("b", "1")); err != nil {
		t.Fatal(err)
	}
	mid, _ := s.CurrentRevision(ctx)
	if _, err := s.Update(ctx, testKey("a"), storage.UpdateOptions{}, func(storage.Object) ([]byte, error) {
		return testObject("a", "2"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, testKey("b"), storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.CurrentRevision(ctx)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, path, Options{UnsafeNoSync: true})
	after, _ := s.CurrentRevision(ctx)
	if after != before || after != 5 {
		t.Fatalf("revision after restart = %d, want %d (5)", after, before)
	}
	// The snapshot at mid is still readable from the log.
	l, err := s.List(ctx, testPrefix, storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(mid), ResourceVersionMatch: storage.MatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 || l.ResourceVersion != mid || l.Items[0].ResourceVersion != a.ResourceVersion {
		t.Fatalf("list at %d after restart: rv %d, %d items %+v", mid, l.ResourceVersion, len(l.Items), l.Items)
	}
	// A watch from the first write replays the rest of the history.
	w, err := s.Watch(ctx, testPrefix, storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(a.ResourceVersion), Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []storage.EventType{storage.EventAdded, storage.EventModified, storage.EventDeleted}
	for i, typ := range want {
		ev := recv(t, w)
		if ev.Type != typ || ev.Object.ResourceVersion != uint64(i+3) {
			t.Fatalf("event %d = %s@%d, want %s@%d", i, ev.Type, ev.Object.ResourceVersion, typ, i+3)
		}
	}
	// New writes continue the revision sequence.
	c, err := s.Create(ctx, testKey("c"), testObject("c", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ResourceVersion != 6 {
		t.Fatalf("first write after restart got rv %d, want 6", c.ResourceVersion)
	}
	if ev := recv(t, w); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != 6 {
		t.Fatalf("live event after restart = %s@%d", ev.Type, ev.Object.ResourceVersion)
	}
}

func TestCompactionSchedule(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{UnsafeNoSync: true, CompactionInterval: 5 * time.Minute, HistoryRetention: 10 * time.Minute})
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(i int) {
		if _, err := s.Create(ctx, testKey(fmt.Sprint("o", i)), testObject("o", "1")); err != nil {
			t.Fatal(err)
		}
	}
	compacted := func() uint64 {
		c, err := s.compactedRevision()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	write(1)                                        // rev 2
	s.compactTick(ctx, t0, false)                   // sample (t0, 2), as Start does
	write(2)                                        // rev 3
	s.compactTick(ctx, t0.Add(5*time.Minute), true) // sample (5m, 3); nothing is 10m old
	if c := compacted(); c != 0 {
		t.Fatalf("compacted %d after 5m with 10m retention", c)
	}
	write(3)                                         // rev 4
	s.compactTick(ctx, t0.Add(10*time.Minute), true) // (t0, 2) is 10m old
	if c := compacted(); c != 2 {
		t.Fatalf("compacted %d after 10m, want 2", c)
	}
	write(4)
	s.compactTick(ctx, t0.Add(15*time.Minute), true) // (5m, 3) is 10m old
	if c := compacted(); c != 3 {
		t.Fatalf("compacted %d after 15m, want 3", c)
	}
	// History at and before the compacted revision is gone.
	_, err := s.List(ctx, testPrefix, storage.ListOptions{ResourceVersion: "3", ResourceVersionMatch: storage.MatchExact})
	var se *storage.Error
	if !errors.As(err, &se) || !errors.Is(err, storage.ErrExpired) || se.ResourceVersion != 3 {
		t.Fatalf("list at compacted rev: %v", err)
	}
	if _, err := s.List(ctx, testPrefix, storage.ListOptions{ResourceVersion: "4", ResourceVersionMatch: storage.MatchExact}); err != nil {
		t.Fatalf("list after compacted rev: %v", err)
	}
}

func TestStartCompactsPeriodically(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := openTest(t, "", Options{UnsafeNoSync: true, CompactionInterval: 5 * time.Millisecond, HistoryRetention: time.Millisecond})
	for i := range 3 {
		if _, err := s.Create(ctx, testKey(fmt.Sprint("o", i)), testObject("o", "1")); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	// The revision at Start (4) is compacted down to current-1 = 3 once a
	// tick sees it old enough.
	waitFor(t, "periodic compaction", func() bool { c, _ := s.compactedRevision(); return c == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start returned %v after ctx cancel", err)
	}
}

func TestGroupCommitBatches(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	s.commitHook = func(n int) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, n)
		mu.Unlock()
		if first {
			<-release
		}
	}
	const writers = 50
	var wg sync.WaitGroup
	revs := make(chan uint64, writers+1)
	create := func(i int) {
		defer wg.Done()
		o, err := s.Create(ctx, testKey(fmt.Sprint("w", i)), testObject("w", "1"))
		if err != nil {
			t.Error(err)
			return
		}
		revs <- o.ResourceVersion
	}
	wg.Add(1)
	go create(-1)
	waitFor(t, "first commit to start", func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	wg.Add(writers)
	for i := range writers {
		go create(i)
	}
	waitFor(t, "writers to queue", func() bool { return s.waiting.Load() == writers+1 })
	close(release)
	wg.Wait()
	close(revs)
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != writers {
		t.Fatalf("batch sizes %v, want [1 %d]", sizes, writers)
	}
	if c := s.commits.Load(); c != 2 {
		t.Fatalf("%d transactions committed, want 2", c)
	}
	seen := map[uint64]bool{}
	for r := range revs {
		seen[r] = true
	}
	for r := uint64(2); r <= writers+2; r++ {
		if !seen[r] {
			t.Fatalf("revision %d not assigned; got %v", r, seen)
		}
	}
}

// TestLoneWriterNotDelayed checks that a writer alone is committed at once:
// with a batch timer of bbolt's 10 ms, 200 sequential writes would take at
// least 2 s; without fsync each takes well under a millisecond here.
func TestLoneWriterNotDelayed(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{UnsafeNoSync: true})
	var sizes []int
	s.commitHook = func(n int) { sizes = append(sizes, n) }
	start := time.Now()
	for i := range 200 {
		if _, err := s.Create(ctx, testKey(fmt.Sprint("o", i)), testObject("o", "1")); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("200 sequential writes took %v: a lone writer waits for something", d)
	}
	for _, n := range sizes {
		if n != 1 {
			t.Fatalf("a lone writer shared a batch: sizes %v", sizes)
		}
	}
}

// TestSlowWatcherDoesNotBlock checks that a watcher whose consumer does not
// read blocks neither writers nor other watchers, catches up from the log
// afterwards, and ends with ErrExpired once compaction passes it.
func TestSlowWatcherDoesNotBlock(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{UnsafeNoSync: true})
	slow, err := s.Watch(ctx, testPrefix, storage.WatchOptions{ResourceVersion: "", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := s.Watch(ctx, testPrefix, storage.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	const n = 3 * watchBuffer
	for i := range n {
		if _, err := s.Create(ctx, testKey(fmt.Sprint("o", i)), testObject("o", "1")); err != nil {
			t.Fatal(err)
		}
		if ev := recv(t, fast); ev.Object.ResourceVersion != uint64(i+2) {
			t.Fatalf("fast watcher got rv %d, want %d", ev.Object.ResourceVersion, i+2)
		}
	}
	for i := range n {
		if ev := recv(t, slow); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != uint64(i+2) {
			t.Fatalf("slow watcher event %d: %s@%d", i, ev.Type, ev.Object.ResourceVersion)
		}
	}

	// A lagging watcher whose position gets compacted away ends with 410.
	lag, err := s.Watch(ctx, testPrefix, storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(n + 1), Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lag.Stop()
	// It reads the log in batches of at most watchReadBatch entries, so once
	// its buffer is full it has read at most watchBuffer+watchReadBatch of
	// these: compacting to the latest revision passes its position whatever
	// the timing.
	for i := range watchBuffer + 2*watchReadBatch {
		if _, err := s.Create(ctx, testKey(fmt.Sprint("p", i)), testObject("p", "1")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the lagging watcher's buffer to fill", func() bool { return len(lag.ResultChan()) == watchBuffer })
	cur, _ := s.CurrentRevision(ctx)
	if err := s.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	var last storage.Event
	for ev := range lag.ResultChan() {
		last = ev
	}
	if last.Type != storage.EventError || !errors.Is(last.Err, storage.ErrExpired) {
		t.Fatalf("lagging watcher ended with %s %v, want an ErrExpired error", last.Type, last.Err)
	}
}

func TestProgressBookmarkAfterEvents(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{UnsafeNoSync: true})
	w, err := s.Watch(ctx, testPrefix, storage.WatchOptions{ResourceVersion: "0", Recursive: true, ProgressNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 5 {
		if _, err := s.Create(ctx, testKey(fmt.Sprint("o", i)), testObject("o", "1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	var seen uint64
	for {
		ev := recv(t, w)
		if ev.Type == storage.EventBookmark {
			if seen != 6 || ev.Object.ResourceVersion != 6 {
				t.Fatalf("bookmark at %d after events up to %d, want 6 after 6", ev.Object.ResourceVersion, seen)
			}
			return
		}
		seen = ev.Object.ResourceVersion
	}
}

func TestPeriodicBookmark(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{UnsafeNoSync: true, ProgressInterval: 5 * time.Millisecond})
	if _, err := s.Create(ctx, testKey("a"), testObject("a", "1")); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, testPrefix, storage.WatchOptions{ResourceVersion: "2", Recursive: true, ProgressNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := recv(t, w); ev.Type != storage.EventBookmark || ev.Object.ResourceVersion != 2 {
		t.Fatalf("got %s@%d, want a bookmark at 2", ev.Type, ev.Object.ResourceVersion)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "annex.db"), Options{UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, testPrefix, storage.WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var last storage.Event
	for ev := range w.ResultChan() {
		last = ev
	}
	if last.Type != storage.EventError || !errors.Is(last.Err, storage.ErrClosed) {
		t.Fatalf("watch ended with %s %v, want ErrClosed", last.Type, last.Err)
	}
	if _, err := s.Create(ctx, testKey("a"), testObject("a", "1")); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Create after Close: %v", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Ready after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStoredBytesCarryRevision(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{Clock: func() time.Time { return time.Date(2024, 5, 6, 7, 8, 9, 500, time.FixedZone("x", 3600)) }})
	o, err := s.Create(ctx, testKey("a"), testObject("a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Get(ctx, testKey("a"), storage.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := storage.ParseMeta(g.Data)
	if err != nil {
		t.Fatal(err)
	}
	if m.ResourceVersion != "2" || g.ResourceVersion != 2 || string(g.Data) != string(o.Data) {
		t.Fatalf("stored %s (rv %d), created %s", g.Data, g.ResourceVersion, o.Data)
	}
	if m.CreationTimestamp != "2024-05-06T06:08:09Z" || m.UID == "" {
		t.Fatalf("metadata %+v", m)
	}
}

// TestFreshStoreStartsAtRevisionOne checks that an empty store, new or
// reopened, is at revision 1, so that an empty list never carries
// resourceVersion "0", and that the first write gets revision 2.
func TestFreshStoreStartsAtRevisionOne(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "annex.db")
	for _, reopen := range []bool{false, true} {
		s, err := Open(path, Options{UnsafeNoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if rev, err := s.CurrentRevision(ctx); err != nil || rev != 1 {
			t.Fatalf("reopen=%v: CurrentRevision = %d, %v; want 1", reopen, rev, err)
		}
		l, err := s.List(ctx, testPrefix, storage.ListOptions{})
		if err != nil || len(l.Items) != 0 || l.ResourceVersion != 1 {
			t.Fatalf("reopen=%v: empty list at rv %d with %d items, %v; want rv 1", reopen, l.ResourceVersion, len(l.Items), err)
		}
		// Compacting an empty store never compacts its only revision.
		if err := s.Compact(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.compactedRevision(); c != 0 {
			t.Fatalf("reopen=%v: compacted %d on an empty store", reopen, c)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s := openTest(t, path, Options{UnsafeNoSync: true})
	o, err := s.Create(ctx, testKey("a"), testObject("a", "1"))
	if err != nil || o.ResourceVersion != 2 {
		t.Fatalf("first write: rv %d, %v; want 2", o.ResourceVersion, err)
	}
	// The state before the first write is readable at revision 1.
	l, err := s.List(ctx, testPrefix, storage.ListOptions{ResourceVersion: "1", ResourceVersionMatch: storage.MatchExact})
	if err != nil || len(l.Items) != 0 || l.ResourceVersion != 1 {
		t.Fatalf("list at 1: rv %d, %d items, %v", l.ResourceVersion, len(l.Items), err)
	}
	if err := s.Compact(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.compactedRevision(); c != 1 {
		t.Fatalf("compacted %d after Compact(100) at revision 2, want 1", c)
	}
	if g, err := s.Get(ctx, testKey("a"), storage.GetOptions{}); err != nil || g.ResourceVersion != 2 {
		t.Fatalf("get after compaction: rv %d, %v", g.ResourceVersion, err)
	}
}

// TestGroupCommitAbandonAndClose checks the two ways a pending write ends
// without being committed: its writer's ctx ends before a leader takes it
// (it returns the ctx error and is never committed), and Close refuses it
// (ErrClosed), while the transaction under way still commits.
func TestGroupCommitAbandonAndClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "annex.db")
	s, err := Open(path, Options{UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	release := make(chan struct{})
	s.commitHook = func(int) { <-release }
	first := make(chan error, 1)
	go func() { _, err := s.Create(ctx, testKey("first"), testObject("first", "1")); first <- err }()
	waitFor(t, "the leader to commit", func() bool { return s.waiting.Load() == 1 })

	cctx, cancel := context.WithCancel(ctx)
	abandoned := make(chan error, 1)
	go func() { _, err := s.Create(cctx, testKey("abandoned"), testObject("abandoned", "1")); abandoned <- err }()
	waitFor(t, "the second writer to queue", func() bool { return s.waiting.Load() == 2 })
	cancel()
	if err := <-abandoned; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write returned %v", err)
	}
	refused := make(chan error, 1)
	go func() { _, err := s.Create(ctx, testKey("refused"), testObject("refused", "1")); refused <- err }()
	waitFor(t, "the third writer to queue", func() bool { return s.waiting.Load() == 2 })
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	waitFor(t, "Close to stop writes", func() bool { s.queueMu.Lock(); defer s.queueMu.Unlock(); return s.stopped })
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("write under way at Close: %v", err)
	}
	if err := <-refused; !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("write pending at Close returned %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c := s.commits.Load(); c != 1 {
		t.Fatalf("%d transactions, want 1", c)
	}
	s2 := openTest(t, path, Options{UnsafeNoSync: true})
	for key, want := range map[string]bool{"first": true, "abandoned": false, "refused": false} {
		_, err := s2.Get(ctx, testKey(key), storage.GetOptions{})
		if got := err == nil; got != want {
			t.Fatalf("%s stored = %v (%v), want %v", key, got, err, want)
		}
	}
}
