// This file holds the Delete cases: unconditional, with preconditions, with a
// validation callback, and with a possibly stale cached state.

package storagetest

import (
	"errors"
	"time"

	"github.com/annexapi/annex/storage"
)

// errRejected is what the suite's callbacks return to reject a change.
var errRejected = errors.New("storagetest: rejected by the callback")

func deleteCases() []testCase {
	// mustRemain asserts k still holds the object want.
	mustRemain := func(e *env, k string, want storage.Object) {
		e.t.Helper()
		got := e.get(k, "")
		if got.ResourceVersion != want.ResourceVersion || got.Meta.UID != want.Meta.UID {
			e.t.Errorf("object is %s uid %s, want it untouched at %s uid %s", describe(got), got.Meta.UID, describe(want), want.Meta.UID)
		}
	}
	return []testCase{
		{name: "unconditional", private: true, run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			d := e.delete(key("ns", "a")) // checks d's revision is after u's
			if value(e.t, d) != "2" || d.Meta.UID != u.Meta.UID {
				e.t.Errorf("Delete returned value %q uid %s, want the last state: value 2 uid %s", value(e.t, d), d.Meta.UID, u.Meta.UID)
			}
			// The returned revision is the deletion's: the next write is the one after it.
			if n := e.create(key("ns", "b"), obj("ns", "b", "1")); !e.follows(d.ResourceVersion, n.ResourceVersion) {
				e.t.Errorf("Delete returned revision %d, but the next write committed at %d, want %s", d.ResourceVersion, n.ResourceVersion, e.after(d.ResourceVersion))
			}
			_, err := e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{})
			storageError(e.t, err, storage.ErrNotFound)
			_, err = e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{})
			storageError(e.t, err, storage.ErrNotFound)
		}},
		{name: "not_found", private: true, run: func(e *env) {
			e.create(key("ns", "b"), obj("ns", "b", "1"))
			before := e.current()
			_, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{})
			storageError(e.t, err, storage.ErrNotFound)
			if after := e.current(); after != before {
				e.t.Errorf("a failed Delete moved the revision from %d to %d", before, after)
			}
		}},
		{name: "invalid_key", run: func(e *env) {
			_, err := e.s.Delete(e.ctx, "/a/../b", storage.DeleteOptions{})
			storageError(e.t, err, storage.ErrInvalidKey)
		}},
		{name: "uid_precondition_match", run: func(e *env) {
			a := e.create(key("ns", "a"), obj("ns", "a", "1"))
			d, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Preconditions: storage.Preconditions{UID: a.Meta.UID}})
			if err != nil {
				e.t.Fatalf("Delete with the object's uid: %v", err)
			}
			checkObject(e.t, d, key("ns", "a"))
			e.seen(d.ResourceVersion)
		}},
		{name: "uid_precondition_mismatch", run: func(e *env) {
			a := e.create(key("ns", "a"), obj("ns", "a", "1"))
			_, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Preconditions: storage.Preconditions{UID: "not-" + a.Meta.UID}})
			storageError(e.t, err, storage.ErrConflict)
			mustRemain(e, key("ns", "a"), a)
		}},
		{name: "resource_version_precondition", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			_, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Preconditions: storage.Preconditions{ResourceVersion: rvs(c.ResourceVersion)}})
			storageError(e.t, err, storage.ErrConflict)
			mustRemain(e, key("ns", "a"), u)
			d, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Preconditions: storage.Preconditions{ResourceVersion: rvs(u.ResourceVersion)}})
			if err != nil {
				e.t.Fatalf("Delete with the current resource version: %v", err)
			}
			checkObject(e.t, d, key("ns", "a"))
			e.seen(d.ResourceVersion)
		}},
		{name: "validate_sees_current_state", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var calls int
			d, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Validate: func(cur storage.Object) error {
				calls++
				checkObject(e.t, cur, key("ns", "a"))
				if cur.ResourceVersion != u.ResourceVersion || value(e.t, cur) != "2" {
					e.t.Errorf("Validate saw %s value %q, want %s value 2", describe(cur), value(e.t, cur), describe(u))
				}
				return nil
			}})
			if err != nil {
				e.t.Fatalf("Delete: %v", err)
			}
			e.seen(d.ResourceVersion)
			if calls != 1 {
				e.t.Errorf("Validate called %d times without any concurrent write, want 1", calls)
			}
		}},
		{name: "validate_error_aborts", private: true, run: func(e *env) {
			a := e.create(key("ns", "a"), obj("ns", "a", "1"))
			before := e.current()
			_, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Validate: func(storage.Object) error { return errRejected }})
			if !errors.Is(err, errRejected) {
				e.t.Fatalf("Delete error = %v, want the Validate error", err)
			}
			mustRemain(e, key("ns", "a"), a)
			if after := e.current(); after != before {
				e.t.Errorf("a rejected Delete moved the revision from %d to %d", before, after)
			}
		}},
		{name: "concurrent_update_during_validate", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			var calls int
			var updated storage.Object
			var seenRV []uint64
			d, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Validate: func(cur storage.Object) error {
				calls++
				seenRV = append(seenRV, cur.ResourceVersion)
				if calls == 1 {
					// A write that lands between Delete's read and its commit.
					o, err := e.updateWithin(key("ns", "a"), "2")
					if err != nil {
						return err
					}
					updated = o
				}
				return nil
			}})
			if err != nil {
				e.t.Fatalf("Delete: %v", err)
			}
			checkObject(e.t, d, key("ns", "a"))
			e.seen(updated.ResourceVersion)
			e.seen(d.ResourceVersion)
			if calls != 2 {
				e.t.Errorf("Validate called %d times (saw revisions %v), want 2: once per state", calls, seenRV)
			} else if seenRV[1] != updated.ResourceVersion {
				e.t.Errorf("second Validate saw revision %d, want the concurrent update's %d", seenRV[1], updated.ResourceVersion)
			}
			if value(e.t, d) != "2" {
				e.t.Errorf("Delete returned value %q, want the concurrently updated 2", value(e.t, d))
			}
		}},
		{name: "stale_cached_state", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var seen []uint64
			d, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Cached: &c, Validate: func(cur storage.Object) error {
				seen = append(seen, cur.ResourceVersion)
				return nil
			}})
			if err != nil {
				e.t.Fatalf("Delete with a stale cached state: %v", err)
			}
			checkObject(e.t, d, key("ns", "a"))
			e.seen(d.ResourceVersion)
			if len(seen) == 0 || len(seen) > 2 || seen[len(seen)-1] != u.ResourceVersion {
				e.t.Errorf("Validate saw revisions %v; want at most 2 calls, the last at the current %d", seen, u.ResourceVersion)
			}
			if value(e.t, d) != "2" {
				e.t.Errorf("Delete returned value %q, want the current 2 (not the cached 1)", value(e.t, d))
			}
		}},
		{name: "stale_cached_state_rejected_by_validate", run: func(e *env) {
			// Validate accepts the stale cached state but rejects the current
			// one: the current one decides.
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var calls int
			_, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Cached: &c, Validate: func(cur storage.Object) error {
				calls++
				if value(e.t, cur) == "2" {
					return errRejected
				}
				return nil
			}})
			if !errors.Is(err, errRejected) {
				e.t.Fatalf("Delete error = %v, want the Validate error for the current state", err)
			}
			if calls > 2 {
				e.t.Errorf("Validate called %d times, want at most 2", calls)
			}
			mustRemain(e, key("ns", "a"), u)
		}},
		{name: "preconditions_checked_against_current_state", run: func(e *env) {
			old := e.create(key("ns", "a"), obj("ns", "a", "1"))
			e.delete(key("ns", "a"))
			cur := e.create(key("ns", "a"), obj("ns", "a", "2"))
			// The precondition fails against the stale cached state but holds
			// on the current one.
			d, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Cached: &old, Preconditions: storage.Preconditions{UID: cur.Meta.UID}})
			if err != nil {
				e.t.Fatalf("Delete with a precondition that holds on the current state: %v", err)
			}
			checkObject(e.t, d, key("ns", "a"))
			e.seen(d.ResourceVersion)
			if d.Meta.UID != cur.Meta.UID {
				e.t.Errorf("deleted uid %s, want %s", d.Meta.UID, cur.Meta.UID)
			}
		}},
		{name: "precondition_holding_only_on_cached_state", run: func(e *env) {
			old := e.create(key("ns", "a"), obj("ns", "a", "1"))
			e.delete(key("ns", "a"))
			cur := e.create(key("ns", "a"), obj("ns", "a", "2"))
			_, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Cached: &old, Preconditions: storage.Preconditions{UID: old.Meta.UID}})
			storageError(e.t, err, storage.ErrConflict)
			mustRemain(e, key("ns", "a"), cur)
		}},
		{name: "cached_object_already_deleted", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			e.delete(key("ns", "a"))
			_, err := e.s.Delete(e.ctx, key("ns", "a"), storage.DeleteOptions{Cached: &c})
			storageError(e.t, err, storage.ErrNotFound)
		}},
	}
}

// updateWithin sets k's value from inside another operation's callback. It
// runs the update on its own goroutine so that a backend that holds a lock
// across the callback fails the case instead of deadlocking it.
func (e *env) updateWithin(k, v string) (storage.Object, error) {
	type result struct {
		o   storage.Object
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := e.s.Update(e.ctx, k, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
			return withValue(e.t, cur.Data, v), nil
		})
		done <- result{o, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			e.t.Errorf("concurrent Update(%q): %v", k, r.err)
			return storage.Object{}, r.err
		}
		checkObject(e.t, r.o, k)
		return r.o, nil
	case <-time.After(e.timeout):
		e.t.Errorf("concurrent Update(%q) blocked for %v while another operation's callback ran", k, e.timeout)
		return storage.Object{}, errRejected
	}
}
