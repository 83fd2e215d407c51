// This file holds the Watch cases and the helpers that read a watcher with a
// deadline.

package storagetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// watcher reads one storage.Watcher on behalf of a case.
type watcher struct {
	e *env
	w storage.Watcher
}

// watch starts a watch that the case stops when it ends.
func (e *env) watch(k string, opts storage.WatchOptions) *watcher {
	e.t.Helper()
	w, err := e.s.Watch(e.ctx, k, opts)
	if err != nil {
		e.t.Fatalf("Watch(%q, %+v): %v", k, opts, err)
	}
	e.t.Cleanup(w.Stop)
	return &watcher{e: e, w: w}
}

// watchFrom watches p recursively after the current revision.
func (e *env) watchFrom(p string, opts storage.WatchOptions) *watcher {
	e.t.Helper()
	opts.Recursive = true
	opts.ResourceVersion = rvs(e.current())
	return e.watch(p, opts)
}

// nextAny returns the next event of any type, failing the case when none
// arrives in time or the channel closes.
func (w *watcher) nextAny() storage.Event {
	w.e.t.Helper()
	timer := time.NewTimer(w.e.timeout)
	defer timer.Stop()
	select {
	case ev, ok := <-w.w.ResultChan():
		if !ok {
			w.e.t.Fatal("watch channel closed, want another event")
		}
		checkEvent(w.e.t, ev)
		return ev
	case <-timer.C:
		w.e.t.Fatalf("no watch event within %v", w.e.timeout)
	}
	panic("unreachable")
}

// next returns the next event that is not a bookmark (a backend may send
// periodic bookmarks to watchers that asked for progress).
func (w *watcher) next() storage.Event {
	w.e.t.Helper()
	for {
		if ev := w.nextAny(); ev.Type != storage.EventBookmark {
			return ev
		}
	}
}

// expect reads the next event and asserts its type, key and revision.
func (w *watcher) expect(typ storage.EventType, k string, rev uint64) storage.Event {
	w.e.t.Helper()
	ev := w.next()
	if ev.Type != typ || ev.Object.Key != k || ev.Object.ResourceVersion != rev {
		w.e.t.Fatalf("event %s %s, want %s %s@%d (err %v)", ev.Type, describe(ev.Object), typ, k, rev, ev.Err)
	}
	return ev
}

// closed reads until the channel closes and returns what came before.
func (w *watcher) closed() []storage.Event {
	w.e.t.Helper()
	timer := time.NewTimer(w.e.timeout)
	defer timer.Stop()
	var evs []storage.Event
	for {
		select {
		case ev, ok := <-w.w.ResultChan():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timer.C:
			w.e.t.Fatalf("watch channel not closed within %v (%d events read)", w.e.timeout, len(evs))
		}
	}
}

// checkEvent asserts the invariants of an event: object events carry valid
// objects, a previous state older than the event, bookmarks only a
// revision, errors a storage error.
func checkEvent(t testing.TB, ev storage.Event) {
	t.Helper()
	switch ev.Type {
	case storage.EventAdded, storage.EventModified, storage.EventDeleted:
		if ev.Err != nil {
			t.Errorf("%s event carries error %v", ev.Type, ev.Err)
		}
	case storage.EventBookmark:
		if ev.Object.ResourceVersion == 0 || ev.Object.Key != "" || len(ev.Object.Data) != 0 {
			t.Errorf("bookmark %s with %d bytes: want only a revision", describe(ev.Object), len(ev.Object.Data))
		}
	case storage.EventError:
		if ev.Err == nil {
			t.Errorf("ERROR event without Err")
		}
	default:
		t.Errorf("unknown event type %q", ev.Type)
	}
}

// checkObjectEvent is checkEvent's object part, which needs a testing.TB.
func (w *watcher) checkObjectEvent(ev storage.Event) {
	w.e.t.Helper()
	switch ev.Type {
	case storage.EventAdded, storage.EventModified, storage.EventDeleted:
		checkObject(w.e.t, ev.Object, ev.Object.Key)
		if ev.Prev != nil {
			checkObject(w.e.t, *ev.Prev, ev.Object.Key)
			if ev.Prev.ResourceVersion >= ev.Object.ResourceVersion {
				w.e.t.Errorf("%s %s: Prev at %d is not older", ev.Type, describe(ev.Object), ev.Prev.ResourceVersion)
			}
		}
	}
}

// watchErr is the error a watch fails with, whether Watch returns it or the
// watcher's first event carries it.
func (e *env) watchErr(k string, opts storage.WatchOptions) error {
	e.t.Helper()
	w, err := e.s.Watch(e.ctx, k, opts)
	if err != nil {
		return err
	}
	defer w.Stop()
	ww := &watcher{e: e, w: w}
	ev := ww.nextAny()
	if ev.Type != storage.EventError {
		e.t.Fatalf("watch from %+v: first event %s %s, want an error", opts, ev.Type, describe(ev.Object))
	}
	return ev.Err
}

// expected is a change the case made, as a watcher must see it.
type expected struct {
	typ   storage.EventType
	key   string
	rev   uint64
	value string
}

// eventsAfter is the changes the case made under p after revision from.
func (e *env) eventsAfter(p string, from uint64) []expected {
	e.t.Helper()
	pr, err := backend.PrefixRange(p)
	if err != nil {
		e.t.Fatal(err)
	}
	exists := map[string]bool{}
	var out []expected
	for _, w := range e.hist {
		if len(w.o.Key) < len(pr) || w.o.Key[:len(pr)] != pr {
			continue
		}
		typ := storage.EventAdded
		switch {
		case w.deleted:
			typ = storage.EventDeleted
		case exists[w.o.Key]:
			typ = storage.EventModified
		}
		exists[w.o.Key] = !w.deleted
		if w.o.ResourceVersion > from {
			out = append(out, expected{typ, w.o.Key, w.o.ResourceVersion, value(e.t, w.o)})
		}
	}
	return out
}

// matches reports whether ev is the change x.
func (w *watcher) matches(ev storage.Event, x expected) bool {
	return ev.Type == x.typ && ev.Object.Key == x.key && ev.Object.ResourceVersion == x.rev && value(w.e.t, ev.Object) == x.value
}

// checkFromState asserts that evs are the synthetic ADDED events of the
// state under p at one of the revisions in from (any order), then exactly
// the case's changes after that revision.
func (w *watcher) checkFromState(p string, evs []storage.Event, from []uint64) {
	w.e.t.Helper()
	for _, r := range from {
		state := w.e.stateAt(p, r)
		if len(evs) < len(state) {
			continue
		}
		initial := slices.Clone(evs[:len(state)])
		slices.SortFunc(initial, func(a, b storage.Event) int {
			switch {
			case a.Object.Key < b.Object.Key:
				return -1
			case a.Object.Key > b.Object.Key:
				return 1
			}
			return 0
		})
		ok := true
		for i, o := range state {
			ok = ok && w.matches(initial[i], expected{storage.EventAdded, o.Key, o.ResourceVersion, value(w.e.t, o)})
		}
		if ok && w.sameChanges(evs[len(state):], w.e.eventsAfter(p, r)) {
			return
		}
	}
	w.e.t.Errorf("watch events %s are not the state at any of revisions %v followed by the later changes", w.describe(evs), from)
}

// checkAfter asserts that evs are exactly the case's changes under p after
// revision from.
func (w *watcher) checkAfter(p string, evs []storage.Event, from uint64) {
	w.e.t.Helper()
	if want := w.e.eventsAfter(p, from); !w.sameChanges(evs, want) {
		w.e.t.Errorf("watch events %s, want the changes after %d: %+v", w.describe(evs), from, want)
	}
}

func (w *watcher) sameChanges(evs []storage.Event, want []expected) bool {
	if len(evs) != len(want) {
		return false
	}
	for i := range want {
		if !w.matches(evs[i], want[i]) {
			return false
		}
	}
	return true
}

func (w *watcher) describe(evs []storage.Event) string {
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s %s=%s", ev.Type, describe(ev.Object), value(w.e.t, ev.Object)))
	}
	return fmt.Sprint(got)
}

// until reads events (skipping bookmarks) up to and including the one at
// revision rev.
func (w *watcher) until(rev uint64) []storage.Event {
	w.e.t.Helper()
	var evs []storage.Event
	for {
		ev := w.next()
		w.checkObjectEvent(ev)
		if ev.Type == storage.EventError {
			w.e.t.Fatalf("watch failed: %v", ev.Err)
		}
		evs = append(evs, ev)
		if ev.Object.ResourceVersion >= rev {
			return evs
		}
	}
}

func watchCases() []testCase {
	return []testCase{
		{name: "added_modified_deleted", private: true, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watchFrom(prefix("ns"), storage.WatchOptions{})
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			e.create(key("other", "y"), obj("other", "y", "1"))
			d := e.delete(key("ns", "a"))
			for _, x := range []struct {
				typ storage.EventType
				o   storage.Object
			}{{storage.EventAdded, c}, {storage.EventModified, u}, {storage.EventDeleted, d}} {
				ev := w.expect(x.typ, key("ns", "a"), x.o.ResourceVersion)
				w.checkObjectEvent(ev)
				if value(e.t, ev.Object) != value(e.t, x.o) {
					e.t.Errorf("%s event value %q, want %q", x.typ, value(e.t, ev.Object), value(e.t, x.o))
				}
			}
		}},
		{name: "deleted_event_carries_deletion_revision", private: true, run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			w := e.watchFrom(prefix("ns"), storage.WatchOptions{})
			one := e.watch(key("ns", "a"), storage.WatchOptions{ResourceVersion: rvs(e.current())})
			d := e.delete(key("ns", "a"))
			for _, ww := range []*watcher{w, one} {
				ev := ww.expect(storage.EventDeleted, key("ns", "a"), d.ResourceVersion)
				ww.checkObjectEvent(ev) // metadata.resourceVersion in the bytes is the deletion's
				if ev.Object.ResourceVersion <= u.ResourceVersion || value(e.t, ev.Object) != "2" || ev.Object.Meta.UID != u.Meta.UID {
					e.t.Errorf("DELETED %s value %q uid %s, want the last state (value 2, uid %s) at the deletion revision %d",
						describe(ev.Object), value(e.t, ev.Object), ev.Object.Meta.UID, u.Meta.UID, d.ResourceVersion)
				}
				if ev.Prev != nil && ev.Prev.ResourceVersion != u.ResourceVersion {
					e.t.Errorf("DELETED Prev at %d, want the last stored %d", ev.Prev.ResourceVersion, u.ResourceVersion)
				}
			}
		}},
		{name: "predicate_transitions", private: true, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watchFrom(prefix("ns"), storage.WatchOptions{Predicate: labelIs("color", "red")})
			c := e.create(key("ns", "a"), obj("ns", "a", "1", "color", "red"))
			w.expect(storage.EventAdded, key("ns", "a"), c.ResourceVersion)
			e.create(key("ns", "b"), obj("ns", "b", "1", "color", "blue"))
			e.update(key("ns", "b"), "2")
			u := e.update(key("ns", "a"), "2")
			w.expect(storage.EventModified, key("ns", "a"), u.ResourceVersion)
			out := e.relabel(key("ns", "a"), "color", "blue")
			ev := w.expect(storage.EventDeleted, key("ns", "a"), out.ResourceVersion)
			w.checkObjectEvent(ev)
			if ev.Object.Meta.Labels.Get("color") != "red" || value(e.t, ev.Object) != "2" {
				e.t.Errorf("DELETED for an object leaving the predicate: labels %v value %q, want its last matching state (color=red, value 2)",
					ev.Object.Meta.Labels, value(e.t, ev.Object))
			}
			e.delete(key("ns", "b"))
			back := e.relabel(key("ns", "a"), "color", "red")
			ev = w.expect(storage.EventAdded, key("ns", "a"), back.ResourceVersion)
			if ev.Object.Meta.Labels.Get("color") != "red" {
				e.t.Errorf("ADDED for an object entering the predicate has labels %v", ev.Object.Meta.Labels)
			}
			d := e.delete(key("ns", "a"))
			w.expect(storage.EventDeleted, key("ns", "a"), d.ResourceVersion)
		}},
		{name: "from_resource_version", run: func(e *env) {
			h := e.history("ns")
			w := e.watch(prefix("ns"), storage.WatchOptions{ResourceVersion: rvs(h[1]), Recursive: true})
			u := e.update(key("ns", "c"), "2")
			w.checkAfter(prefix("ns"), w.until(u.ResourceVersion), h[1])
		}},
		{name: "from_latest", private: true, run: func(e *env) {
			e.history("ns")
			e.create(key("other", "x"), obj("other", "x", "1"))
			at := e.current()
			w := e.watch(prefix("ns"), storage.WatchOptions{Recursive: true})
			e.update(key("ns", "c"), "2")
			f := e.create(key("ns", "d"), obj("ns", "d", "1"))
			w.checkFromState(prefix("ns"), w.until(f.ResourceVersion), []uint64{at})
		}},
		{name: "from_zero", run: func(e *env) {
			h := e.history("ns")
			w := e.watch(prefix("ns"), storage.WatchOptions{ResourceVersion: "0", Recursive: true})
			e.update(key("ns", "c"), "2")
			f := e.create(key("ns", "d"), obj("ns", "d", "1"))
			// "0" may start from any state the store has at hand.
			w.checkFromState(prefix("ns"), w.until(f.ResourceVersion), h[:])
		}},
		{name: "single_key", private: true, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watch(key("ns", "a"), storage.WatchOptions{ResourceVersion: rvs(e.current())})
			e.create(key("ns", "ab"), obj("ns", "ab", "1"))
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			e.create(key("ns", "a")+"/child", obj("ns", "child", "1"))
			e.create(key("ns", "0"), obj("ns", "0", "1"))
			u := e.update(key("ns", "a"), "2")
			e.update(key("ns", "ab"), "2")
			d := e.delete(key("ns", "a"))
			e.delete(key("ns", "ab"))
			again := e.create(key("ns", "a"), obj("ns", "a", "3"))
			w.expect(storage.EventAdded, key("ns", "a"), c.ResourceVersion)
			w.expect(storage.EventModified, key("ns", "a"), u.ResourceVersion)
			w.expect(storage.EventDeleted, key("ns", "a"), d.ResourceVersion)
			w.expect(storage.EventAdded, key("ns", "a"), again.ResourceVersion)
		}},
		{name: "single_key_from_zero", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			e.create(key("ns", "ab"), obj("ns", "ab", "1"))
			u := e.update(key("ns", "a"), "2")
			w := e.watch(key("ns", "a"), storage.WatchOptions{ResourceVersion: "0"})
			// Any state at hand: the creation (then the update follows) or the update.
			ev := w.next()
			if ev.Type != storage.EventAdded || ev.Object.Key != key("ns", "a") {
				e.t.Fatalf("first event %s %s, want ADDED %s", ev.Type, describe(ev.Object), key("ns", "a"))
			}
			if ev.Object.ResourceVersion != u.ResourceVersion {
				w.expect(storage.EventModified, key("ns", "a"), u.ResourceVersion)
			}
			f := e.update(key("ns", "a"), "3")
			w.expect(storage.EventModified, key("ns", "a"), f.ResourceVersion)
		}},
		{name: "recursive_prefix_matches_whole_segments", private: true, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watchFrom(prefix("foo"), storage.WatchOptions{})
			slash := e.watch(prefix("foo")+"/", storage.WatchOptions{ResourceVersion: rvs(e.current()), Recursive: true})
			e.create(key("foobar", "x"), obj("foobar", "x", "1"))
			e.create(key("", "foo"), obj("", "foo", "1"))
			e.create(key("fo", "x"), obj("fo", "x", "1"))
			a := e.create(key("foo", "a"), obj("foo", "a", "1"))
			for _, ww := range []*watcher{w, slash} {
				ww.expect(storage.EventAdded, key("foo", "a"), a.ResourceVersion)
			}
		}},
		{name: "ordered_without_gaps_under_concurrent_writers", private: true, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watchFrom(prefix(""), storage.WatchOptions{})
			// Each writer creates, updates then deletes three keys of its own.
			const writers, rounds = 6, 9
			var mu sync.Mutex
			acked := map[uint64]expected{}
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() {
					ns := fmt.Sprintf("ns%d", i)
					for j := range rounds {
						name := fmt.Sprintf("o%d", j%3)
						k := key(ns, name)
						var o storage.Object
						var typ storage.EventType
						var err error
						switch {
						case j < 3:
							typ = storage.EventAdded
							o, err = e.s.Create(e.ctx, k, obj(ns, name, "1"))
						case j < 6:
							typ = storage.EventModified
							o, err = e.s.Update(e.ctx, k, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
								return withValue(e.t, cur.Data, "2"), nil
							})
						default:
							typ = storage.EventDeleted
							o, err = e.s.Delete(e.ctx, k, storage.DeleteOptions{})
						}
						if err != nil {
							e.t.Errorf("%s %s: %v", typ, k, err)
							return
						}
						mu.Lock()
						if _, dup := acked[o.ResourceVersion]; dup {
							e.t.Errorf("two writes acknowledged at revision %d", o.ResourceVersion)
						}
						acked[o.ResourceVersion] = expected{typ, k, o.ResourceVersion, value(e.t, o)}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if e.t.Failed() {
				return
			}
			var last uint64
			for range writers * rounds {
				ev := w.next()
				w.checkObjectEvent(ev)
				if ev.Object.ResourceVersion <= last {
					e.t.Fatalf("event %s %s after revision %d: out of order or duplicated", ev.Type, describe(ev.Object), last)
				}
				last = ev.Object.ResourceVersion
				x, ok := acked[ev.Object.ResourceVersion]
				if !ok {
					e.t.Fatalf("event %s %s matches no acknowledged write", ev.Type, describe(ev.Object))
				}
				if !w.matches(ev, x) {
					e.t.Errorf("event %s %s=%s, acknowledged write %+v", ev.Type, describe(ev.Object), value(e.t, ev.Object), x)
				}
				delete(acked, ev.Object.ResourceVersion)
			}
			if len(acked) != 0 {
				e.t.Errorf("acknowledged writes never delivered: %v", acked)
			}
		}},
		{name: "stop_closes_channel", private: true, run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			w := e.watchFrom(prefix("ns"), storage.WatchOptions{})
			e.update(key("ns", "a"), "2")
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(w.w.Stop)
			}
			wg.Wait()
			for _, ev := range w.closed() {
				if ev.Type == storage.EventError {
					e.t.Errorf("Stop produced an ERROR event: %v", ev.Err)
				}
			}
			w.w.Stop() // again, after the close
		}},
		{name: "context_cancel_closes_channel", private: true, run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			ctx, cancel := context.WithCancel(e.ctx)
			ww, err := e.s.Watch(ctx, prefix("ns"), storage.WatchOptions{ResourceVersion: rvs(e.current()), Recursive: true})
			if err != nil {
				e.t.Fatal(err)
			}
			e.t.Cleanup(ww.Stop)
			w := &watcher{e: e, w: ww}
			u := e.update(key("ns", "a"), "2")
			w.expect(storage.EventModified, key("ns", "a"), u.ResourceVersion)
			cancel()
			for _, ev := range w.closed() {
				if ev.Type == storage.EventError {
					e.t.Errorf("cancelling the context produced an ERROR event: %v", ev.Err)
				}
			}
		}},
		{name: "non_reading_watcher_blocks_nobody", private: true, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			stuck := e.watchFrom(prefix(""), storage.WatchOptions{})
			reader := e.watchFrom(prefix(""), storage.WatchOptions{})
			const writers, each = 8, 40
			ctx, cancel := context.WithTimeout(e.ctx, e.timeout)
			defer cancel()
			// The reader reads concurrently with the writes.
			got := make(chan []storage.Event, 1)
			go func() {
				var evs []storage.Event
				defer func() { got <- evs }()
				for len(evs) < writers*each {
					select {
					case ev, ok := <-reader.w.ResultChan():
						if !ok {
							return
						}
						if ev.Type != storage.EventBookmark {
							evs = append(evs, ev)
						}
					case <-ctx.Done():
						return
					}
				}
			}()
			var mu sync.Mutex
			acked := map[uint64]string{} // revision -> key
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() {
					for j := range each {
						k := key(fmt.Sprintf("ns%d", i), fmt.Sprintf("o%d", j))
						o, err := e.s.Create(ctx, k, obj("", "x", "1"))
						if err != nil {
							e.t.Errorf("Create(%q) with a non-reading watcher open: %v", k, err)
							return
						}
						mu.Lock()
						acked[o.ResourceVersion] = k
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			evs := <-got
			if len(evs) != writers*each {
				e.t.Fatalf("the reading watcher got %d of %d events within %v", len(evs), writers*each, e.timeout)
			}
			// As many events as writes, in order, each an acknowledged
			// write's: every write delivered once.
			for i, ev := range evs {
				if ev.Type != storage.EventAdded || (i > 0 && !e.follows(evs[i-1].Object.ResourceVersion, ev.Object.ResourceVersion)) {
					e.t.Fatalf("reading watcher event %d: %s %s after %s, want ADDED at %s", i, ev.Type, describe(ev.Object), describe(evs[max(i-1, 0)].Object), e.after(evs[max(i-1, 0)].Object.ResourceVersion))
				}
				if k, ok := acked[ev.Object.ResourceVersion]; !ok || k != ev.Object.Key {
					e.t.Fatalf("reading watcher event %d: %s matches no acknowledged write", i, describe(ev.Object))
				}
			}
			// The stuck watcher either kept everything or was cut off with an
			// ERROR: what it did deliver is a gap-free prefix of the stream.
			for i := 0; ; i++ {
				ev := stuck.nextAny()
				if ev.Type == storage.EventBookmark {
					i--
					continue
				}
				if ev.Type == storage.EventError {
					stuck.closed()
					break
				}
				if i >= len(evs) || ev.Object.ResourceVersion != evs[i].Object.ResourceVersion || ev.Object.Key != evs[i].Object.Key {
					e.t.Fatalf("non-reading watcher event %d is %s %s, want %s", i, ev.Type, describe(ev.Object), describe(evs[min(i, len(evs)-1)].Object))
				}
				if i == len(evs)-1 {
					break
				}
			}
		}},
		{name: "from_compacted_resource_version", private: true, needs: needCompact, run: func(e *env) {
			h := e.history("ns")
			e.compact(h[2])
			for _, from := range []uint64{h[0], h[1]} {
				err := e.watchErr(prefix("ns"), storage.WatchOptions{ResourceVersion: rvs(from), Recursive: true})
				storageError(e.t, err, storage.ErrExpired)
			}
			w, err := e.s.Watch(e.ctx, prefix("ns"), storage.WatchOptions{ResourceVersion: rvs(h[0]), Recursive: true})
			if err == nil {
				ww := &watcher{e: e, w: w}
				if ev := ww.nextAny(); ev.Type != storage.EventError {
					e.t.Errorf("first event %s, want ERROR", ev.Type)
				}
				ww.closed() // the watch ends after its ERROR event
			}
			// After the compacted revision, watches still work.
			w2 := e.watch(prefix("ns"), storage.WatchOptions{ResourceVersion: rvs(h[3]), Recursive: true})
			w2.expect(storage.EventAdded, key("ns", "c"), h[4])
		}},
		{name: "from_zero_after_compaction", private: true, needs: needCompact, run: func(e *env) {
			h := e.history("ns")
			e.compact(e.current())
			w := e.watch(prefix("ns"), storage.WatchOptions{ResourceVersion: "0", Recursive: true})
			f := e.update(key("ns", "a"), "3")
			w.checkFromState(prefix("ns"), w.until(f.ResourceVersion), []uint64{h[4]})
		}},
		{name: "invalid_resource_version", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			err := e.watchErr(prefix("ns"), storage.WatchOptions{ResourceVersion: "abc", Recursive: true})
			storageError(e.t, err, storage.ErrInvalidResourceVersion)
		}},
		{name: "invalid_key", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			err := e.watchErr("/a//b", storage.WatchOptions{Recursive: true})
			storageError(e.t, err, storage.ErrInvalidKey)
		}},
		{name: "progress_notify_bookmark", private: true, needs: needProgress, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watchFrom(prefix("ns"), storage.WatchOptions{ProgressNotify: true})
			var last uint64
			for _, n := range []string{"a", "b", "c"} {
				last = e.create(key("ns", n), obj("ns", n, "1")).ResourceVersion
			}
			e.create(key("other", "y"), obj("other", "y", "1"))
			if err := e.s.(storage.ProgressRequester).RequestProgress(e.ctx); err != nil {
				e.t.Fatalf("RequestProgress: %v", err)
			}
			var seen uint64
			for {
				ev := w.nextAny()
				if ev.Type == storage.EventBookmark {
					if ev.Object.ResourceVersion < seen {
						e.t.Errorf("bookmark at %d after an event at %d", ev.Object.ResourceVersion, seen)
					}
					if ev.Object.ResourceVersion >= last {
						if seen != last {
							e.t.Errorf("bookmark at %d, but the event at %d was not delivered before it", ev.Object.ResourceVersion, last)
						}
						return
					}
					continue
				}
				w.checkObjectEvent(ev)
				seen = ev.Object.ResourceVersion
			}
		}},
		{name: "progress_on_filtered_watch", private: true, needs: needProgress, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watchFrom(prefix("ns"), storage.WatchOptions{ProgressNotify: true, Predicate: labelIs("color", "red")})
			for _, n := range []string{"a", "b"} {
				e.create(key("ns", n), obj("ns", n, "1", "color", "blue"))
			}
			if err := e.s.(storage.ProgressRequester).RequestProgress(e.ctx); err != nil {
				e.t.Fatalf("RequestProgress: %v", err)
			}
			for {
				ev := w.nextAny()
				if ev.Type != storage.EventBookmark {
					e.t.Fatalf("event %s %s on a watch whose predicate matches nothing", ev.Type, describe(ev.Object))
				}
				if ev.Object.ResourceVersion >= e.current() {
					return
				}
			}
		}},
		{name: "no_bookmark_without_progress_notify", private: true, needs: needProgress, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			w := e.watchFrom(prefix("ns"), storage.WatchOptions{})
			if err := e.s.(storage.ProgressRequester).RequestProgress(e.ctx); err != nil {
				e.t.Fatalf("RequestProgress: %v", err)
			}
			f := e.create(key("ns", "fence"), obj("ns", "fence", "1"))
			if ev := w.nextAny(); ev.Type != storage.EventAdded || ev.Object.ResourceVersion != f.ResourceVersion {
				e.t.Errorf("first event %s %s, want ADDED %s: no bookmark without ProgressNotify", ev.Type, describe(ev.Object), describe(f))
			}
		}},
	}
}

// relabel sets k's label l to v and records the write.
func (e *env) relabel(k, l, v string) storage.Object {
	e.t.Helper()
	o, err := e.s.Update(e.ctx, k, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
		return withLabels(e.t, cur.Data, l, v), nil
	})
	if err != nil {
		e.t.Fatalf("Update(%q): %v", k, err)
	}
	checkObject(e.t, o, k)
	e.seen(o.ResourceVersion)
	e.hist = append(e.hist, write{o: o})
	return o
}
