// This file tests what the conformance suite does not: encode-once fan-out,
// index routing, the ring's 410, watch-lists, bookmarks, readiness, slow
// watchers and metrics.

package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

const (
	testGroup    = "storagetest.annex.dev"
	testResource = "widgets"
)

func key(ns, name string) string { return storage.ObjectKey(testGroup, testResource, ns, name) }

func prefix(ns string) string { return storage.ResourcePrefix(testGroup, testResource, ns) }

// object is a widget's JSON; labels are name/value pairs.
func object(ns, name, value string, labels ...string) []byte {
	l := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	b, err := json.Marshal(map[string]any{
		"apiVersion": testGroup + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": l},
		"spec":     map[string]any{"value": value},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func labelIs(k, v string) storage.Predicate {
	return storage.PredicateFunc(func(o *storage.Object) bool { return o.Meta.Labels.Get(k) == v })
}

// fieldPred is a field selector f=v that says so (FieldMatcher).
type fieldPred struct {
	field, value string
	get          IndexFunc
}

func (p fieldPred) Matches(o *storage.Object) bool { return p.get(o) == p.value }

func (p fieldPred) RequiresExactMatch(f string) (string, bool) { return p.value, f == p.field }

var _ FieldMatcher = fieldPred{}

func mustCreate(t testing.TB, s storage.Interface, k string, data []byte) storage.Object {
	t.Helper()
	o, err := s.Create(context.Background(), k, data)
	if err != nil {
		t.Fatalf("Create(%q): %v", k, err)
	}
	return o
}

func mustRelabel(t testing.TB, s storage.Interface, k string, labels ...string) storage.Object {
	t.Helper()
	o, err := s.Update(context.Background(), k, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
		var m map[string]any
		if err := json.Unmarshal(cur.Data, &m); err != nil {
			return nil, err
		}
		l := map[string]any{}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		m["metadata"].(map[string]any)["labels"] = l
		return json.Marshal(m)
	})
	if err != nil {
		t.Fatalf("Update(%q): %v", k, err)
	}
	return o
}

func mustWatch(t testing.TB, c storage.Interface, k string, opts storage.WatchOptions) storage.Watcher {
	t.Helper()
	w, err := c.Watch(context.Background(), k, opts)
	if err != nil {
		t.Fatalf("Watch(%q, %+v): %v", k, opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// next returns w's next event, failing after timeout.
func next(t testing.TB, w storage.Watcher, timeout time.Duration) storage.Event {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-timer.C:
		t.Fatalf("no event within %v", timeout)
	}
	panic("unreachable")
}

func current(t testing.TB, c *Cacher) uint64 {
	t.Helper()
	rev, err := c.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestEncodeOncePerEventAndType(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{})
	mustCreate(t, c, key("ns", "a"), object("ns", "a", "1", "color", "red"))
	from := storage.FormatResourceVersion(current(t, c))
	// One change, three translations: red watchers see DELETED (the object
	// leaves), blue ones ADDED (it enters), unfiltered ones MODIFIED.
	const n = 10000
	preds := []struct {
		pred storage.Predicate
		want storage.EventType
	}{{labelIs("color", "red"), storage.EventDeleted}, {labelIs("color", "blue"), storage.EventAdded}, {nil, storage.EventModified}}
	ws := make([]storage.Watcher, n)
	for i := range ws {
		ws[i] = mustWatch(t, c, prefix(""), storage.WatchOptions{ResourceVersion: from, Recursive: true, Predicate: preds[i%3].pred})
	}
	u := mustRelabel(t, c, key("ns", "a"), "color", "blue")

	var encodes sync.Map // type → *atomic.Int32
	var memos sync.Map   // *EventMemo seen
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				ev := next(t, ws[i], 10*time.Second)
				if ev.Type != preds[i%3].want || ev.Object.ResourceVersion != u.ResourceVersion {
					errs <- fmt.Errorf("watcher %d: %s at %d, want %s at %d", i, ev.Type, ev.Object.ResourceVersion, preds[i%3].want, u.ResourceVersion)
					continue
				}
				memos.Store(ev.Memo, true)
				cnt, _ := encodes.LoadOrStore(ev.Type, new(atomic.Int32))
				frame := ev.Memo.Get("json/"+string(ev.Type), func() []byte {
					cnt.(*atomic.Int32).Add(1)
					return fmt.Appendf(nil, `{"type":%q,"object":%s}`+"\n", ev.Type, ev.Object.Data)
				})
				if !strings.Contains(string(frame), string(ev.Type)) {
					errs <- fmt.Errorf("watcher %d got frame %s", i, frame)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	nMemos := 0
	memos.Range(func(k, _ any) bool { nMemos++; return k.(*storage.EventMemo) != nil })
	if nMemos != 1 {
		t.Errorf("%d watchers saw %d EventMemos for one event, want 1", n, nMemos)
	}
	for _, p := range preds {
		cnt, ok := encodes.Load(p.want)
		if !ok || cnt.(*atomic.Int32).Load() != 1 {
			t.Errorf("%s frame encoded %v times for %d watchers, want 1", p.want, cnt, n/3)
		}
	}
}

func TestIndexRouting(t *testing.T) {
	t.Parallel()
	node := func(o *storage.Object) string { return o.Meta.Labels.Get("node") }
	c := startCacher(t, openBolt(t, true), Config{IndexFields: map[string]IndexFunc{"spec.nodeName": node}})
	name := func(o *storage.Object) string { return o.Meta.Name }
	from := storage.FormatResourceVersion(current(t, c))
	type group struct {
		what  string
		n     int
		key   string
		opts  storage.WatchOptions
		wants bool // receives the event
		ws    []storage.Watcher
	}
	groups := []*group{
		{what: "namespace a", n: 100, key: prefix("a"), opts: storage.WatchOptions{Recursive: true}, wants: true},
		{what: "namespace b", n: 100, key: prefix("b"), opts: storage.WatchOptions{Recursive: true}},
		{what: "namespace ab", n: 10, key: prefix("ab"), opts: storage.WatchOptions{Recursive: true}},
		{what: "key a/x", n: 1, key: key("a", "x"), wants: true},
		{what: "key a/y", n: 50, key: key("a", "y")},
		{what: "all", n: 1, key: prefix(""), opts: storage.WatchOptions{Recursive: true}, wants: true},
		{what: "name x", n: 5, key: prefix(""), opts: storage.WatchOptions{Recursive: true, Predicate: fieldPred{nameField, "x", name}}, wants: true},
		{what: "name y", n: 50, key: prefix(""), opts: storage.WatchOptions{Recursive: true, Predicate: fieldPred{nameField, "y", name}}},
		{what: "node n1", n: 5, key: prefix(""), opts: storage.WatchOptions{Recursive: true, Predicate: fieldPred{"spec.nodeName", "n1", node}}, wants: true},
		{what: "node n2", n: 50, key: prefix(""), opts: storage.WatchOptions{Recursive: true, Predicate: fieldPred{"spec.nodeName", "n2", node}}},
	}
	candidates := 0
	for _, g := range groups {
		g.opts.ResourceVersion = from
		for range g.n {
			g.ws = append(g.ws, mustWatch(t, c, g.key, g.opts))
		}
		if g.wants {
			candidates += g.n
		}
	}
	var visits atomic.Int64
	visit := func(*watcher) { visits.Add(1) }
	c.visit.Store(&visit)
	o := mustCreate(t, c, key("a", "x"), object("a", "x", "1", "node", "n1"))
	for _, g := range groups {
		if !g.wants {
			continue
		}
		for _, w := range g.ws {
			if ev := next(t, w, 5*time.Second); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != o.ResourceVersion {
				t.Fatalf("%s watcher: %s at %d, want ADDED at %d", g.what, ev.Type, ev.Object.ResourceVersion, o.ResourceVersion)
			}
		}
	}
	total := 0
	for _, g := range groups {
		total += g.n
	}
	if got := visits.Load(); got != int64(candidates) {
		t.Errorf("the event visited %d of %d watchers, want only the %d that can match", got, total, candidates)
	}
	// A change of the indexed value visits the watchers of the old and the
	// new value: the n1 watchers see the object leave, the n2 ones see it enter.
	visits.Store(0)
	u := mustRelabel(t, c, key("a", "x"), "node", "n2")
	for _, g := range groups {
		switch g.what {
		case "node n1":
			for _, w := range g.ws {
				if ev := next(t, w, 5*time.Second); ev.Type != storage.EventDeleted || ev.Object.ResourceVersion != u.ResourceVersion {
					t.Fatalf("node n1 watcher: %s at %d, want DELETED at %d", ev.Type, ev.Object.ResourceVersion, u.ResourceVersion)
				}
			}
		case "node n2":
			for _, w := range g.ws {
				if ev := next(t, w, 5*time.Second); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != u.ResourceVersion {
					t.Fatalf("node n2 watcher: %s at %d, want ADDED at %d", ev.Type, ev.Object.ResourceVersion, u.ResourceVersion)
				}
			}
		}
	}
	if got, want := visits.Load(), int64(candidates+50); got != want {
		t.Errorf("the relabel visited %d watchers, want %d", got, want)
	}
}

func TestTooOldResourceVersion(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{RingSize: 4})
	var revs []uint64
	for i := range 10 {
		revs = append(revs, mustCreate(t, c, key("ns", fmt.Sprint(i)), object("ns", fmt.Sprint(i), "1")).ResourceVersion)
	}
	// The ring holds the last 4 events: a watch may start after revs[5].
	if _, err := c.Get(context.Background(), key("ns", "9"), storage.GetOptions{}); err != nil {
		t.Fatal(err) // also waits for the cache to catch up
	}
	for _, from := range []uint64{revs[0], revs[4]} {
		w := mustWatch(t, c, prefix("ns"), storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(from), Recursive: true})
		ev := next(t, w, 5*time.Second)
		var se *storage.Error
		if ev.Type != storage.EventError || !errors.As(ev.Err, &se) || !errors.Is(ev.Err, storage.ErrExpired) {
			t.Fatalf("watch from %d: %s %v, want an ERROR with ErrExpired", from, ev.Type, ev.Err)
		}
		if want := fmt.Sprintf("too old resource version: %d (%d)", from, revs[5]); se.Msg != want || se.ResourceVersion != revs[5] {
			t.Errorf("watch from %d: error %q at %d, want %q at %d", from, se.Msg, se.ResourceVersion, want, revs[5])
		}
		if _, ok := <-w.ResultChan(); ok {
			t.Errorf("watch from %d: channel not closed after the ERROR", from)
		}
	}
	w := mustWatch(t, c, prefix("ns"), storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(revs[5]), Recursive: true})
	for _, rev := range revs[6:] {
		if ev := next(t, w, 5*time.Second); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != rev {
			t.Fatalf("watch from the ring's start: %s at %d, want ADDED at %d", ev.Type, ev.Object.ResourceVersion, rev)
		}
	}
}

func TestWatchListEndBookmark(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{})
	for _, n := range []string{"c", "a", "b"} {
		mustCreate(t, c, key("ns", n), object("ns", n, "1"))
	}
	mustCreate(t, c, key("other", "x"), object("other", "x", "1"))
	cur := current(t, c)
	w := mustWatch(t, c, prefix("ns"), storage.WatchOptions{Recursive: true, SendInitialEvents: true, ProgressNotify: true})
	var got []string
	for range 3 {
		ev := next(t, w, 5*time.Second)
		if ev.Type != storage.EventAdded {
			t.Fatalf("initial event %s, want ADDED", ev.Type)
		}
		got = append(got, ev.Object.Key)
	}
	if want := []string{key("ns", "a"), key("ns", "b"), key("ns", "c")}; !slices.Equal(got, want) {
		t.Errorf("initial events %v, want %v (key order)", got, want)
	}
	ev := next(t, w, 5*time.Second)
	if ev.Type != storage.EventBookmark || !ev.InitialEventsEnd || ev.Object.ResourceVersion != cur {
		t.Fatalf("after the initial events: %s end=%v at %d, want the initial-events-end BOOKMARK at %d", ev.Type, ev.InitialEventsEnd, ev.Object.ResourceVersion, cur)
	}
	o := mustCreate(t, c, key("ns", "d"), object("ns", "d", "1"))
	for {
		ev = next(t, w, 5*time.Second)
		if ev.Type == storage.EventBookmark && !ev.InitialEventsEnd {
			continue
		}
		if ev.Type != storage.EventAdded || ev.Object.ResourceVersion != o.ResourceVersion {
			t.Fatalf("after the bookmark: %s at %d, want ADDED at %d", ev.Type, ev.Object.ResourceVersion, o.ResourceVersion)
		}
		break
	}
}

func TestBookmarksCarryCacheRevision(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{BookmarkInterval: 20 * time.Millisecond})
	mustCreate(t, c, key("other", "x"), object("other", "x", "1"))
	from := storage.FormatResourceVersion(current(t, c))
	w := mustWatch(t, c, prefix("ns"), storage.WatchOptions{ResourceVersion: from, Recursive: true, ProgressNotify: true})
	quiet := mustWatch(t, c, prefix("ns"), storage.WatchOptions{ResourceVersion: from, Recursive: true})
	// A write the watcher does not see still advances the cache's revision,
	// and the bookmarks follow it.
	o := mustCreate(t, c, key("other", "y"), object("other", "y", "1"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		ev := next(t, w, 5*time.Second)
		if ev.Type != storage.EventBookmark {
			t.Fatalf("event %s, want only bookmarks", ev.Type)
		}
		c.mu.RLock()
		rev := c.rev
		c.mu.RUnlock()
		if ev.Object.ResourceVersion > rev {
			t.Fatalf("bookmark at %d beyond the cache's revision %d", ev.Object.ResourceVersion, rev)
		}
		if ev.Object.ResourceVersion == o.ResourceVersion {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no bookmark at %d within 5s (last at %d)", o.ResourceVersion, ev.Object.ResourceVersion)
		}
	}
	f := mustCreate(t, c, key("ns", "fence"), object("ns", "fence", "1"))
	if ev := next(t, quiet, 5*time.Second); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != f.ResourceVersion {
		t.Errorf("watcher without ProgressNotify: first event %s at %d, want the fence ADDED at %d", ev.Type, ev.Object.ResourceVersion, f.ResourceVersion)
	}
}

func TestReadiness(t *testing.T) {
	t.Parallel()
	store := openBolt(t, true)
	mustCreate(t, store, key("ns", "a"), object("ns", "a", "1"))
	c, err := New(store, Config{Prefix: prefix("")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(context.Background()); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Ready before Start = %v, want ErrNotReady", err)
	}
	// Not ready: reads are served by the store.
	if o, err := c.Get(context.Background(), key("ns", "a"), storage.GetOptions{ResourceVersion: "0"}); err != nil || o.Meta.Name != "a" {
		t.Fatalf("Get before ready = %v, %v", o.Key, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	waitReady(t, c)
	c.mu.RLock()
	n := c.tree.Len()
	c.mu.RUnlock()
	if n != 1 {
		t.Errorf("ready with %d objects in memory, want the 1 listed", n)
	}
	w := mustWatch(t, c, prefix(""), storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(current(t, c)), Recursive: true})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start = %v", err)
	}
	if err := c.Ready(context.Background()); !errors.Is(err, ErrNotReady) {
		t.Errorf("Ready after Start returned = %v, want ErrNotReady", err)
	}
	ev := next(t, w, 5*time.Second)
	if ev.Type != storage.EventError || !errors.Is(ev.Err, ErrStopped) || !errors.Is(ev.Err, storage.ErrClosed) {
		t.Errorf("watcher after Start returned: %s %v, want an ERROR with ErrStopped", ev.Type, ev.Err)
	}
}

func TestSlowWatcherCutOff(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	const maxLag = 300 * time.Millisecond
	c := startCacher(t, openBolt(t, true), Config{MaxLag: maxLag, WatcherBuffer: 100000, Registerer: reg})
	mustCreate(t, c, key("other", "x"), object("other", "x", "1"))
	from := storage.FormatResourceVersion(current(t, c))
	stuck := mustWatch(t, c, prefix(""), storage.WatchOptions{ResourceVersion: from, Recursive: true})
	reader := mustWatch(t, c, prefix(""), storage.WatchOptions{ResourceVersion: from, Recursive: true})
	stuckW := stuck.(*watcher)

	const writes = 200
	var acked sync.Map // rev → time
	type got struct {
		rev uint64
		lat time.Duration
	}
	results := make(chan []got, 1)
	go func() {
		var gs []got
		defer func() { results <- gs }()
		for len(gs) < writes {
			select {
			case ev, ok := <-reader.ResultChan():
				if !ok || ev.Type == storage.EventError {
					return
				}
				now := time.Now()
				var at time.Time
				// The ack may be recorded just after the event arrives.
				for {
					if v, ok := acked.Load(ev.Object.ResourceVersion); ok {
						at = v.(time.Time)
						break
					}
					if time.Since(now) > time.Second {
						return
					}
					time.Sleep(50 * time.Microsecond) // polling the writer's record, bounded
				}
				gs = append(gs, got{ev.Object.ResourceVersion, max(now.Sub(at), 0)})
			case <-time.After(10 * time.Second):
				return
			}
		}
	}()
	// Paced writes (every 5ms), so the stuck watcher's lag grows with time.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var fullAt, cutAt time.Time
	for i := range writes {
		<-tick.C
		o := mustCreate(t, c, key("ns", fmt.Sprint(i)), object("ns", fmt.Sprint(i), "1"))
		acked.Store(o.ResourceVersion, time.Now())
		stuckW.mu.Lock()
		behind, term := stuckW.pumping || len(stuckW.queue) > 0, stuckW.terminated
		stuckW.mu.Unlock()
		if behind && fullAt.IsZero() {
			fullAt = time.Now()
		}
		if term && cutAt.IsZero() {
			cutAt = time.Now()
		}
	}
	gs := <-results
	if len(gs) != writes {
		t.Fatalf("the reading watcher got %d of %d events", len(gs), writes)
	}
	if fullAt.IsZero() || cutAt.IsZero() {
		t.Fatalf("the stuck watcher was never behind (%v) or never cut off (%v)", fullAt, cutAt)
	}
	if d := cutAt.Sub(fullAt); d > maxLag+200*time.Millisecond {
		t.Errorf("the stuck watcher was cut off %v after it fell behind, want about MaxLag (%v)", d, maxLag)
	}
	lats := make([]time.Duration, len(gs))
	for i, g := range gs {
		lats[i] = g.lat
		if i > 0 && g.rev <= gs[i-1].rev {
			t.Fatalf("reader events out of order: %d after %d", g.rev, gs[i-1].rev)
		}
	}
	slices.Sort(lats)
	p99 := lats[len(lats)*99/100]
	t.Logf("reader latency while a watcher was stuck and cut off: p50 %v p99 %v max %v; cut off %v after falling behind",
		lats[len(lats)/2], p99, lats[len(lats)-1], cutAt.Sub(fullAt))
	if p99 > 250*time.Millisecond {
		t.Errorf("reader p99 latency %v while another watcher was stuck, want < 250ms", p99)
	}
	// The stuck watcher delivers what it had, then its ERROR, then closes.
	var last storage.Event
	for ev := range stuck.ResultChan() {
		last = ev
	}
	if last.Type != storage.EventError || !errors.Is(last.Err, ErrSlowWatcher) || !errors.Is(last.Err, storage.ErrExpired) {
		t.Errorf("stuck watcher ended with %s %v, want ERROR with ErrSlowWatcher", last.Type, last.Err)
	}
	if got := testutil.ToFloat64(c.m.terminated); got != 1 {
		t.Errorf("apiserver_terminated_watchers_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(c.m.watchers); got != 1 {
		t.Errorf("apiserver_registered_watchers = %v, want 1 (the reader)", got)
	}
	if got := testutil.ToFloat64(c.m.dispatched); got < writes {
		t.Errorf("apiserver_watch_cache_events_dispatched_total = %v, want at least %d", got, writes)
	}
	if got := testutil.ToFloat64(c.m.objects); got != writes+1 {
		t.Errorf("apiserver_watch_cache_objects = %v, want %d", got, writes+1)
	}
	if n, err := testutil.GatherAndCount(reg, "apiserver_watch_cache_read_wait_seconds", "apiserver_watch_cache_resource_version"); err != nil || n != 2 {
		t.Errorf("gathered %d series of the wait and revision metrics (%v), want 2", n, err)
	}
}

// TestListStream checks that a streamed list (ListOptions.Stream) yields
// the objects a collected one returns, at the same revision, every time it
// is iterated, with a predicate and from a continue token alike, and that a
// page (a Limit) is still collected.
func TestListStream(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{})
	for i := range 20 {
		mustCreate(t, c, key("ns", fmt.Sprintf("o%02d", i)), object("ns", fmt.Sprintf("o%02d", i), fmt.Sprint(i%3)))
	}
	mustCreate(t, c, key("other", "x"), object("other", "x", "1"))
	ctx := context.Background()
	odd := storage.PredicateFunc(func(o *storage.Object) bool { return o.Meta.Name[2]%2 == 1 })
	first, err := c.List(ctx, prefix("ns"), storage.ListOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []storage.ListOptions{{}, {Predicate: odd}, {Continue: first.Continue}} {
		collected, err := c.List(ctx, prefix("ns"), opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Stream = true
		streamed, err := c.List(ctx, prefix("ns"), opts)
		if err != nil {
			t.Fatal(err)
		}
		if streamed.Each == nil || streamed.Items != nil || streamed.ResourceVersion != collected.ResourceVersion {
			t.Fatalf("streamed list: Each set %v, %d items, at %d; want Each alone at %d", streamed.Each != nil, len(streamed.Items),
				streamed.ResourceVersion, collected.ResourceVersion)
		}
		for pass := range 2 {
			var keys []string
			for o := range streamed.Each {
				keys = append(keys, o.Key)
			}
			var want []string
			for _, o := range collected.Items {
				want = append(want, o.Key)
			}
			if !slices.Equal(keys, want) {
				t.Errorf("pass %d: streamed %v, collected %v", pass, keys, want)
			}
		}
	}
	page, err := c.List(ctx, prefix("ns"), storage.ListOptions{Limit: 5, Stream: true})
	if err != nil || page.Each != nil || len(page.Items) != 5 || page.Continue == "" {
		t.Errorf("a page with Stream: Each set %v, %d items, continue %q, %v; want 5 items collected", page.Each != nil, len(page.Items), page.Continue, err)
	}
}

// TestListSpanFromCounts: a first page of a namespace walks exactly the
// namespace's objects by the cache's own count, without reading keys; the
// namespaces around it (one whose name extends it) stay out, after creates
// and deletes, with and without a predicate and a limit.
func TestListSpanFromCounts(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{})
	ctx := context.Background()
	for _, ns := range []string{"a", "ns", "ns-2", "nt"} {
		for i := range 12 {
			mustCreate(t, c, key(ns, fmt.Sprintf("o%02d", i)), object(ns, fmt.Sprintf("o%02d", i), fmt.Sprint(i%3)))
		}
	}
	for _, i := range []int{0, 5, 11} {
		if _, err := c.Delete(ctx, key("ns", fmt.Sprintf("o%02d", i)), storage.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all := storage.PredicateFunc(func(*storage.Object) bool { return true })
	none := storage.PredicateFunc(func(*storage.Object) bool { return false })
	for _, tc := range []struct {
		name string
		opts storage.ListOptions
		want int
	}{
		{"everything", storage.ListOptions{}, 9},
		{"predicate matching all", storage.ListOptions{Predicate: all}, 9},
		{"predicate matching none", storage.ListOptions{Predicate: none}, 0},
		{"predicate with a limit", storage.ListOptions{Predicate: all, Limit: 20}, 9},
	} {
		res, err := c.List(ctx, prefix("ns"), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != tc.want {
			t.Errorf("%s: %d items, want %d", tc.name, len(res.Items), tc.want)
		}
		for _, o := range res.Items {
			if !strings.HasPrefix(o.Key, prefix("ns")) {
				t.Errorf("%s: %s is not under %s", tc.name, o.Key, prefix("ns"))
			}
		}
	}
	res, err := c.List(ctx, suitePrefix, storage.ListOptions{Predicate: all})
	if err != nil || len(res.Items) != 45 {
		t.Errorf("whole cache: %d items, %v; want 45", len(res.Items), err)
	}
}

// TestListSkipsByFingerprint: a storage.Selection's predicate is called
// only for objects whose labels' fingerprint has its Need or is unknown
// (no labels), on every way the cache reads a collection (a whole list, a
// page, the paged remainder, streamed); the others are not read, and what
// the list answers is what the predicate alone selects.
func TestListSkipsByFingerprint(t *testing.T) {
	t.Parallel()
	c := startCacher(t, openBolt(t, true), Config{})
	for i := range 30 {
		name := fmt.Sprintf("o%02d", i)
		var labels []string
		switch i % 3 {
		case 0:
			labels = []string{"app", "a"}
		case 1:
			labels = []string{"app", "b", "tier", "x"}
		} // and none for i%3 == 2
		mustCreate(t, c, key("ns", name), object("ns", name, "1", labels...))
	}
	sel, err := meta.ParseLabelSelector("app=a")
	if err != nil {
		t.Fatal(err)
	}
	if sel.Need() == 0 {
		t.Fatal("app=a needs no bits")
	}
	var mu sync.Mutex
	read := map[string]int{}
	pred := storage.Selection{Need: sel.Need(), Match: func(o *storage.Object) bool {
		mu.Lock()
		read[o.Meta.Labels.Get("app")]++
		mu.Unlock()
		return sel.MatchesSet(&o.Meta.Labels)
	}}
	ctx := context.Background()
	for _, opts := range []storage.ListOptions{{Predicate: pred}, {Predicate: pred, Limit: 4}, {Predicate: pred, Stream: true}} {
		clear(read)
		res, err := c.List(ctx, prefix("ns"), opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if res.Each != nil {
			for o := range res.Each {
				got = append(got, o.Meta.Name)
			}
		}
		for _, o := range res.Items {
			got = append(got, o.Meta.Name)
		}
		for res.Continue != "" {
			if res, err = c.List(ctx, prefix("ns"), storage.ListOptions{Predicate: pred, Limit: opts.Limit, Continue: res.Continue}); err != nil {
				t.Fatal(err)
			}
			for _, o := range res.Items {
				got = append(got, o.Meta.Name)
			}
		}
		var want []string
		for i := 0; i < 30; i += 3 {
			want = append(want, fmt.Sprintf("o%02d", i))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: listed %v, want %v", opts, got, want)
		}
		// A page that is full reads on to the next match to tell whether
		// there are more, and the next page reads it again.
		want10 := func(n int) bool { return n == 10 || opts.Limit > 0 && n > 10 }
		if read["b"] != 0 || !want10(read["a"]) || !want10(read[""]) {
			t.Errorf("%+v: the predicate read %d objects labelled app=b (want 0: their fingerprint lacks app=a), %d app=a (want 10), %d unlabelled (want 10: unknown fingerprint)",
				opts, read["b"], read["a"], read[""])
		}
	}
}
