// This file holds the cases of the optional capability interfaces:
// RevisionReader, Counter, Compactor, ReadinessChecker and ObjectSizeLimiter.

package storagetest

import (
	"errors"
	"strings"

	"github.com/annexapi/annex/storage"
)

func capabilityCases() []testCase {
	return []testCase{
		{name: "object_size_limit", needs: needSizeLimit, run: func(e *env) {
			limit := e.s.(storage.ObjectSizeLimiter).MaxObjectSize()
			// sized returns base with spec.value padded so that the whole
			// is n bytes long.
			sized := func(base func(v string) []byte, n int) []byte {
				e.t.Helper()
				pad := n - len(base(""))
				if pad < 0 {
					e.t.Fatalf("limit %d is below an empty widget", limit)
				}
				b := base(strings.Repeat("x", pad))
				if len(b) != n {
					e.t.Fatalf("padded widget is %d bytes, want %d", len(b), n)
				}
				return b
			}
			newWidget := func(name string) func(string) []byte {
				return func(v string) []byte { return obj("ns", name, v) }
			}
			k := key("ns", "big")
			_, err := e.s.Create(e.ctx, k, sized(newWidget("big"), limit+1))
			storageError(e.t, err, storage.ErrTooLarge)
			if _, err := e.s.Get(e.ctx, k, storage.GetOptions{}); !errors.Is(err, storage.ErrNotFound) {
				e.t.Fatalf("Get after a too large Create: error = %v, want not found", err)
			}
			// An object of exactly the limit fits, with what the store adds.
			c := e.create(k, sized(newWidget("big"), limit))
			if got := len(value(e.t, c)); got != limit-len(obj("ns", "big", "")) {
				e.t.Errorf("stored value is %d bytes", got)
			}
			upd := func(n int) (storage.Object, error) {
				return e.s.Update(e.ctx, k, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
					return sized(func(v string) []byte { return withValue(e.t, cur.Data, v) }, n), nil
				})
			}
			_, err = upd(limit + 1)
			storageError(e.t, err, storage.ErrTooLarge)
			if got := e.get(k, ""); got.ResourceVersion != c.ResourceVersion {
				e.t.Errorf("a too large Update changed the object: resourceVersion %d, want %d", got.ResourceVersion, c.ResourceVersion)
			}
			u, err := upd(limit - 1)
			if err != nil {
				e.t.Fatalf("Update to limit-1 bytes: %v", err)
			}
			e.seen(u.ResourceVersion)
		}},
		{name: "revision_advances_once_per_write", private: true, needs: needRevision, run: func(e *env) {
			// Each write moves CurrentRevision to its own revision, the one
			// after the previous write's (with RevisionGaps, any after it);
			// a failed or no-op write leaves it where it was.
			rr := e.s.(storage.RevisionReader)
			rev := func() uint64 {
				r, err := rr.CurrentRevision(e.ctx)
				if err != nil {
					e.t.Fatalf("CurrentRevision: %v", err)
				}
				return r
			}
			last := rev()
			wrote := func(what string, o storage.Object) {
				e.t.Helper()
				if !e.follows(last, o.ResourceVersion) {
					e.t.Errorf("%s committed at %d, want %s", what, o.ResourceVersion, e.after(last))
				}
				last = o.ResourceVersion
				if got := rev(); got != last {
					e.t.Errorf("after %s: CurrentRevision = %d, want its revision %d", what, got, last)
				}
			}
			wroteNothing := func(what string) {
				e.t.Helper()
				if got := rev(); got != last {
					e.t.Errorf("after %s: CurrentRevision = %d, want %d", what, got, last)
				}
			}
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			wrote("a create", c)
			_, err := e.s.Create(e.ctx, key("ns", "a"), obj("ns", "a", "1"))
			storageError(e.t, err, storage.ErrAlreadyExists)
			wroteNothing("a failed create")
			wrote("an update", e.update(key("ns", "a"), "2"))
			if _, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) { return cur.Data, nil }); err != nil {
				e.t.Fatal(err)
			}
			wroteNothing("a no-op update")
			_, err = e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{Preconditions: storage.Preconditions{ResourceVersion: rvs(c.ResourceVersion)}},
				func(cur storage.Object) ([]byte, error) { return withValue(e.t, cur.Data, "3"), nil })
			storageError(e.t, err, storage.ErrConflict)
			wroteNothing("a failed update")
			wrote("a delete", e.delete(key("ns", "a")))
			_, err = e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{})
			storageError(e.t, err, storage.ErrNotFound)
			wroteNothing("a failed delete")
			if r := e.list(prefix("ns"), storage.ListOptions{}); r.ResourceVersion != last {
				e.t.Errorf("latest list read at %d, CurrentRevision is %d", r.ResourceVersion, last)
			}
		}},
		{name: "count", needs: needCount, run: func(e *env) {
			cn := e.s.(storage.Counter)
			count := func(p string, want int64) {
				e.t.Helper()
				n, err := cn.Count(e.ctx, p)
				if err != nil {
					e.t.Fatalf("Count(%q): %v", p, err)
				}
				if n != want {
					e.t.Errorf("Count(%q) = %d, want %d", p, n, want)
				}
			}
			count(prefix("ns"), 0)
			for _, n := range []string{"a", "b", "c"} {
				e.create(key("ns", n), obj("ns", n, "1"))
			}
			e.create(key("nsx", "a"), obj("nsx", "a", "1"))
			e.create(key("", "ns"), obj("", "ns", "1"))
			count(prefix("ns"), 3)
			count(prefix("nsx"), 1)
			count(prefix(""), 5)
			e.update(key("ns", "a"), "2")
			e.delete(key("ns", "b"))
			count(prefix("ns"), 2)
			count(prefix(""), 4)
		}},
		{name: "compaction_keeps_latest_state", private: true, needs: needCompact, run: func(e *env) {
			h := e.history("ns")
			e.create(key("ns", "d"), obj("ns", "d", "1"))
			cur := e.current()
			e.compact(cur)
			e.compact(cur)  // again: nothing to do
			e.compact(h[1]) // below the compacted revision: nothing to do
			for _, o := range e.stateAt(prefix("ns"), cur) {
				for _, rv := range []string{"", "0"} {
					if got := e.get(o.Key, rv); got.ResourceVersion != o.ResourceVersion {
						e.t.Errorf("after compaction Get(%q, rv %q) = %s, want %s", o.Key, rv, describe(got), describe(o))
					}
				}
			}
			r := e.list(prefix("ns"), storage.ListOptions{})
			sameObjects(e.t, "latest list after compaction", r.Items, e.stateAt(prefix("ns"), cur))
			r = e.list(prefix("ns"), storage.ListOptions{ResourceVersion: "0"})
			sameObjects(e.t, "rv 0 list after compaction", r.Items, e.stateAt(prefix("ns"), cur))
			// Writes go on, one revision after the other.
			if u := e.update(key("ns", "a"), "3"); !e.follows(cur, u.ResourceVersion) {
				e.t.Errorf("first write after compaction at %d, want %s", u.ResourceVersion, e.after(cur))
			}
		}},
		{name: "ready", needs: needReady, run: func(e *env) {
			if err := e.s.(storage.ReadinessChecker).Ready(e.ctx); err != nil {
				e.t.Errorf("a fresh store is not ready: %v", err)
			}
		}},
	}
}
