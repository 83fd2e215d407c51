// This file holds the Update (GuaranteedUpdate) cases.

package storagetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/annexapi/annex/storage"
)

func updateCases() []testCase {
	// setValue is an UpdateFunc that sets spec.value, counting its calls and
	// recording the revisions it saw.
	type recorder struct {
		calls int
		seen  []uint64
	}
	setValue := func(e *env, r *recorder, v string) storage.UpdateFunc {
		return func(cur storage.Object) ([]byte, error) {
			r.calls++
			r.seen = append(r.seen, cur.ResourceVersion)
			return withValue(e.t, cur.Data, v), nil
		}
	}
	// mustRemain asserts k still holds want.
	mustRemain := func(e *env, k string, want storage.Object) {
		e.t.Helper()
		got := e.get(k, "")
		if got.ResourceVersion != want.ResourceVersion || value(e.t, got) != value(e.t, want) {
			e.t.Errorf("object is %s value %q, want it untouched at %s value %q", describe(got), value(e.t, got), describe(want), value(e.t, want))
		}
	}
	// mustUpdate runs Update and checks the result.
	mustUpdate := func(e *env, k string, opts storage.UpdateOptions, try storage.UpdateFunc) storage.Object {
		e.t.Helper()
		o, err := e.s.Update(e.ctx, k, opts, try)
		if err != nil {
			e.t.Fatalf("Update(%q): %v", k, err)
		}
		checkObject(e.t, o, k)
		return o
	}
	return []testCase{
		{name: "delete_instead", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var calls int
			d, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
				calls++
				return nil, storage.ErrDeleteInstead
			})
			if err != nil {
				e.t.Fatalf("Update returning ErrDeleteInstead: %v", err)
			}
			if calls != 1 || value(e.t, d) != "2" || d.Meta.UID != u.Meta.UID || d.ResourceVersion <= u.ResourceVersion {
				e.t.Errorf("deleted object %s value %q after %d calls, want the last state (value 2, uid %s) at a revision after %d",
					describe(d), value(e.t, d), calls, u.Meta.UID, u.ResourceVersion)
			}
			_, err = e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{})
			storageError(e.t, err, storage.ErrNotFound)
			if n := e.create(key("ns", "b"), obj("ns", "b", "1")); n.ResourceVersion <= d.ResourceVersion {
				e.t.Errorf("the deletion returned revision %d, but a later write committed at %d", d.ResourceVersion, n.ResourceVersion)
			}
		}},
		{name: "delete_instead_after_concurrent_write", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			var seen []string
			d, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
				seen = append(seen, value(e.t, cur))
				if len(seen) == 1 { // someone else writes first: the delete must not win over it blindly
					e.update(key("ns", "a"), "2")
				}
				return nil, storage.ErrDeleteInstead
			})
			if err != nil {
				e.t.Fatalf("Update: %v", err)
			}
			if len(seen) != 2 || seen[1] != "2" || value(e.t, d) != "2" {
				e.t.Errorf("UpdateFunc saw %v, deleted value %q: want a retry on the concurrent write's state (1, 2) and 2 deleted", seen, value(e.t, d))
			}
			_, err = e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{})
			storageError(e.t, err, storage.ErrNotFound)
		}},
		{name: "delete_instead_missing_key", run: func(e *env) {
			_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{IgnoreNotFound: true}, func(storage.Object) ([]byte, error) {
				return nil, storage.ErrDeleteInstead
			})
			storageError(e.t, err, storage.ErrNotFound)
		}},
		{name: "missing_key", run: func(e *env) {
			e.create(key("ns", "b"), obj("ns", "b", "1"))
			var r recorder
			_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{}, setValue(e, &r, "2"))
			storageError(e.t, err, storage.ErrNotFound)
			if r.calls != 0 {
				e.t.Errorf("UpdateFunc called %d times for a missing key without IgnoreNotFound", r.calls)
			}
			_, err = e.s.Get(e.ctx, key("ns", "a"), storage.GetOptions{})
			storageError(e.t, err, storage.ErrNotFound)
		}},
		{name: "missing_key_ignore_not_found", run: func(e *env) {
			var calls int
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{IgnoreNotFound: true}, func(cur storage.Object) ([]byte, error) {
				calls++
				if cur.ResourceVersion != 0 || len(cur.Data) != 0 {
					e.t.Errorf("UpdateFunc for a missing key got %s with %d bytes, want the zero Object", describe(cur), len(cur.Data))
				}
				return obj("ns", "a", "1"), nil
			})
			e.seen(o.ResourceVersion)
			if calls != 1 {
				e.t.Errorf("UpdateFunc called %d times, want 1", calls)
			}
			got := e.get(key("ns", "a"), "")
			if got.ResourceVersion != o.ResourceVersion || value(e.t, got) != "1" {
				e.t.Errorf("Get after an Update that created = %s value %q, want %s value 1", describe(got), value(e.t, got), describe(o))
			}
		}},
		{name: "existing", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			var r recorder
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{}, setValue(e, &r, "2"))
			e.seen(o.ResourceVersion)
			if r.calls != 1 || r.seen[0] != c.ResourceVersion {
				e.t.Errorf("UpdateFunc saw revisions %v, want exactly [%d]", r.seen, c.ResourceVersion)
			}
			if value(e.t, o) != "2" || o.Meta.UID != c.Meta.UID {
				e.t.Errorf("Update returned value %q uid %s, want 2 uid %s", value(e.t, o), o.Meta.UID, c.Meta.UID)
			}
			got := e.get(key("ns", "a"), "")
			if got.ResourceVersion != o.ResourceVersion || value(e.t, got) != "2" {
				e.t.Errorf("Get after Update = %s value %q, want %s value 2", describe(got), value(e.t, got), describe(o))
			}
		}},
		{name: "labels", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1", "color", "red"))
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
				return withLabels(e.t, cur.Data, "color", "blue", "size", "xl"), nil
			})
			e.seen(o.ResourceVersion)
			if o.Meta.Labels.Get("color") != "blue" || o.Meta.Labels.Get("size") != "xl" || o.Meta.Labels.Len() != 2 {
				e.t.Errorf("Meta.Labels = %v after relabelling", o.Meta.Labels)
			}
		}},
		{name: "stale_resource_version_in_result_is_replaced", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			e.update(key("ns", "a"), "2")
			// The result carries the creation's resource version; the store
			// must write the new one.
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{}, func(storage.Object) ([]byte, error) {
				return withValue(e.t, c.Data, "3"), nil
			})
			e.seen(o.ResourceVersion)
			if value(e.t, o) != "3" {
				e.t.Errorf("value = %q, want 3", value(e.t, o))
			}
		}},
		{name: "same_data_writes_nothing", private: true, run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			before := e.current()
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) { return cur.Data, nil })
			if o.ResourceVersion != u.ResourceVersion || value(e.t, o) != "2" {
				e.t.Errorf("a no-op Update returned %s value %q, want the stored %s", describe(o), value(e.t, o), describe(u))
			}
			if after := e.current(); after != before {
				e.t.Errorf("a no-op Update moved the revision from %d to %d", before, after)
			}
			if n := e.create(key("ns", "b"), obj("ns", "b", "1")); !e.follows(u.ResourceVersion, n.ResourceVersion) {
				e.t.Errorf("the write after a no-op Update committed at %d, want %s: the no-op wrote", n.ResourceVersion, e.after(u.ResourceVersion))
			}
		}},
		{name: "same_data_against_stale_cached_state", run: func(e *env) {
			// The UpdateFunc returns what it is given. Against the stale
			// cached state that is the old bytes, which differ from the
			// stored ones; the store must notice and end on the current state
			// unchanged.
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{Cached: &c}, func(cur storage.Object) ([]byte, error) { return cur.Data, nil })
			if o.ResourceVersion != u.ResourceVersion || value(e.t, o) != "2" {
				e.t.Errorf("Update with a stale cached state returned %s value %q, want the current %s value 2 unchanged",
					describe(o), value(e.t, o), describe(u))
			}
			mustRemain(e, key("ns", "a"), u)
		}},
		{name: "uid_precondition_match", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			var r recorder
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{Preconditions: storage.Preconditions{UID: c.Meta.UID}}, setValue(e, &r, "2"))
			e.seen(o.ResourceVersion)
			if value(e.t, o) != "2" {
				e.t.Errorf("value = %q, want 2", value(e.t, o))
			}
		}},
		{name: "uid_precondition_mismatch", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			var r recorder
			_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{Preconditions: storage.Preconditions{UID: "not-" + c.Meta.UID}}, setValue(e, &r, "2"))
			storageError(e.t, err, storage.ErrConflict)
			mustRemain(e, key("ns", "a"), c)
		}},
		{name: "resource_version_precondition", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var r recorder
			_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{Preconditions: storage.Preconditions{ResourceVersion: rvs(c.ResourceVersion)}}, setValue(e, &r, "3"))
			storageError(e.t, err, storage.ErrConflict)
			mustRemain(e, key("ns", "a"), u)
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{Preconditions: storage.Preconditions{ResourceVersion: rvs(u.ResourceVersion)}}, setValue(e, &r, "3"))
			e.seen(o.ResourceVersion)
			if value(e.t, o) != "3" {
				e.t.Errorf("value = %q, want 3", value(e.t, o))
			}
		}},
		{name: "stale_cached_state_retried_from_fresh_read", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var calls int
			var seen []uint64
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{Cached: &c}, func(cur storage.Object) ([]byte, error) {
				calls++
				seen = append(seen, cur.ResourceVersion)
				return withValue(e.t, cur.Data, value(e.t, cur)+"+3"), nil
			})
			e.seen(o.ResourceVersion)
			if value(e.t, o) != "2+3" {
				e.t.Errorf("value = %q, want 2+3: the update must apply to the current state, not the cached one", value(e.t, o))
			}
			if calls > 2 || seen[len(seen)-1] != u.ResourceVersion {
				e.t.Errorf("UpdateFunc saw revisions %v; want at most 2 calls, the last at %d", seen, u.ResourceVersion)
			}
		}},
		{name: "stale_cached_state_with_current_precondition", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var r recorder
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{Cached: &c, Preconditions: storage.Preconditions{ResourceVersion: rvs(u.ResourceVersion)}}, setValue(e, &r, "3"))
			e.seen(o.ResourceVersion)
			if value(e.t, o) != "3" {
				e.t.Errorf("value = %q, want 3", value(e.t, o))
			}
		}},
		{name: "precondition_holding_only_on_cached_state", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			u := e.update(key("ns", "a"), "2")
			var r recorder
			_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{Cached: &c, Preconditions: storage.Preconditions{ResourceVersion: rvs(c.ResourceVersion)}}, setValue(e, &r, "3"))
			storageError(e.t, err, storage.ErrConflict)
			mustRemain(e, key("ns", "a"), u)
		}},
		{name: "conflict_retries_update_func", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			var calls int
			var seen []uint64
			var other storage.Object
			o := mustUpdate(e, key("ns", "a"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
				calls++
				seen = append(seen, cur.ResourceVersion)
				if calls == 1 {
					// Another writer commits between this read and our commit.
					var err error
					if other, err = e.updateWithin(key("ns", "a"), "other"); err != nil {
						return nil, err
					}
				}
				return withValue(e.t, cur.Data, value(e.t, cur)+"+mine"), nil
			})
			e.seen(other.ResourceVersion)
			e.seen(o.ResourceVersion)
			if calls != 2 || seen[0] != c.ResourceVersion || seen[1] != other.ResourceVersion {
				e.t.Errorf("UpdateFunc saw revisions %v, want [%d %d]", seen, c.ResourceVersion, other.ResourceVersion)
			}
			if value(e.t, o) != "other+mine" {
				e.t.Errorf("value = %q, want other+mine", value(e.t, o))
			}
		}},
		{name: "concurrent_updaters", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "0"))
			const writers, each = 6, 5
			var wg sync.WaitGroup
			var mu sync.Mutex
			revs := map[uint64]bool{}
			for range writers {
				wg.Go(func() {
					for range each {
						o, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
							n, err := strconv.Atoi(value(e.t, cur))
							if err != nil {
								return nil, err
							}
							return withValue(e.t, cur.Data, strconv.Itoa(n+1)), nil
						})
						if err != nil {
							e.t.Errorf("Update: %v", err)
							return
						}
						checkObject(e.t, o, key("ns", "a"))
						mu.Lock()
						if revs[o.ResourceVersion] {
							e.t.Errorf("two updates returned revision %d", o.ResourceVersion)
						}
						revs[o.ResourceVersion] = true
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			got := e.get(key("ns", "a"), "")
			if want := fmt.Sprint(writers * each); value(e.t, got) != want {
				e.t.Errorf("counter = %s after %d increments: updates were lost", value(e.t, got), writers*each)
			}
		}},
		{name: "update_func_error_aborts", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			var calls int
			_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{}, func(storage.Object) ([]byte, error) {
				calls++
				return nil, errRejected
			})
			if !errors.Is(err, errRejected) {
				e.t.Fatalf("Update error = %v, want the UpdateFunc's", err)
			}
			if calls != 1 {
				e.t.Errorf("UpdateFunc called %d times, want 1: an error is not retried", calls)
			}
			mustRemain(e, key("ns", "a"), c)
		}},
		{name: "update_func_error_with_current_cached_state", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			var calls int
			_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{Cached: &c}, func(storage.Object) ([]byte, error) {
				calls++
				return nil, errRejected
			})
			if !errors.Is(err, errRejected) {
				e.t.Fatalf("Update error = %v, want the UpdateFunc's", err)
			}
			if calls != 1 {
				e.t.Errorf("UpdateFunc called %d times against a current cached state, want 1", calls)
			}
			mustRemain(e, key("ns", "a"), c)
		}},
		{name: "invalid_result", run: func(e *env) {
			c := e.create(key("ns", "a"), obj("ns", "a", "1"))
			for _, data := range []string{`not json`, `[1]`, `{"metadata":{"name":1}}`} {
				_, err := e.s.Update(e.ctx, key("ns", "a"), storage.UpdateOptions{}, func(storage.Object) ([]byte, error) { return []byte(data), nil })
				storageError(e.t, err, storage.ErrInvalidObject)
			}
			mustRemain(e, key("ns", "a"), c)
		}},
		{name: "invalid_key", run: func(e *env) {
			var r recorder
			_, err := e.s.Update(e.ctx, "/a//b", storage.UpdateOptions{IgnoreNotFound: true}, setValue(e, &r, "1"))
			storageError(e.t, err, storage.ErrInvalidKey)
		}},
	}
}
