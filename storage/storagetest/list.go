// This file holds the List cases: option validation, every resource version
// mode, prefixes, and compaction.

package storagetest

import (
	"encoding/base64"
	"slices"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// history writes a small history under namespace ns and returns the
// revision after each step:
//
//	r[0] create a=1   r[1] create b=1   r[2] update a=2
//	r[3] delete b     r[4] create c=1
func (e *env) history(ns string) [5]uint64 {
	e.t.Helper()
	var r [5]uint64
	r[0] = e.create(key(ns, "a"), obj(ns, "a", "1")).ResourceVersion
	r[1] = e.create(key(ns, "b"), obj(ns, "b", "1")).ResourceVersion
	r[2] = e.update(key(ns, "a"), "2").ResourceVersion
	r[3] = e.delete(key(ns, "b")).ResourceVersion
	r[4] = e.create(key(ns, "c"), obj(ns, "c", "1")).ResourceVersion
	return r
}

func listCases() []testCase {
	return []testCase{
		{name: "invalid_options", private: true, run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1"))
			e.create(key("ns", "b"), obj("ns", "b", "1"))
			pr, _ := backend.PrefixRange(prefix("ns"))
			tok, err := backend.EncodeContinue(key("ns", "a")+"\x00", pr, e.current())
			if err != nil {
				e.t.Fatal(err)
			}
			traversal := base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"../../x"}`))
			for _, c := range []struct {
				name string
				opts storage.ListOptions
				want error
			}{
				{"not_a_number", storage.ListOptions{ResourceVersion: "abc"}, storage.ErrInvalidResourceVersion},
				{"negative", storage.ListOptions{ResourceVersion: "-1"}, storage.ErrInvalidResourceVersion},
				{"exact_without_rv", storage.ListOptions{ResourceVersionMatch: storage.MatchExact}, storage.ErrInvalidResourceVersion},
				{"exact_zero", storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: storage.MatchExact}, storage.ErrInvalidResourceVersion},
				{"not_older_than_without_rv", storage.ListOptions{ResourceVersionMatch: storage.MatchNotOlderThan}, storage.ErrInvalidResourceVersion},
				{"continue_with_rv", storage.ListOptions{Continue: tok, ResourceVersion: "1"}, storage.ErrInvalidResourceVersion},
				{"continue_with_match", storage.ListOptions{Continue: tok, ResourceVersion: "1", ResourceVersionMatch: storage.MatchExact}, storage.ErrInvalidResourceVersion},
				{"garbage_continue", storage.ListOptions{Continue: "not a token!"}, storage.ErrInvalidContinue},
				{"continue_leaving_prefix", storage.ListOptions{Continue: traversal}, storage.ErrInvalidContinue},
			} {
				_, err := e.s.List(e.ctx, prefix("ns"), c.opts)
				if err == nil {
					e.t.Errorf("%s: List(%+v) succeeded", c.name, c.opts)
					continue
				}
				storageError(e.t, err, c.want)
			}
			for _, p := range []string{"", "widgets", "/a//b", "/a/../b"} {
				_, err := e.s.List(e.ctx, p, storage.ListOptions{})
				storageError(e.t, err, storage.ErrInvalidKey)
			}
		}},
		{name: "latest", private: true, run: func(e *env) {
			e.history("ns")
			e.create(key("other", "x"), obj("other", "x", "1"))
			r := e.list(prefix("ns"), storage.ListOptions{})
			if r.ResourceVersion != e.current() {
				e.t.Errorf("list revision = %d, want the current %d (a consistent read)", r.ResourceVersion, e.current())
			}
			sameObjects(e.t, "list", r.Items, e.stateAt(prefix("ns"), e.current()))
			if r.Continue != "" || r.RemainingItemCount != nil {
				e.t.Errorf("unpaginated list has continue %q, remaining %v", r.Continue, r.RemainingItemCount)
			}
		}},
		{name: "resource_version_zero", private: true, run: func(e *env) {
			e.history("ns")
			r := e.list(prefix("ns"), storage.ListOptions{ResourceVersion: "0"})
			if r.ResourceVersion > e.current() {
				e.t.Errorf("list revision %d is after the current %d", r.ResourceVersion, e.current())
			}
			sameObjects(e.t, "list at rv 0", r.Items, e.stateAt(prefix("ns"), r.ResourceVersion))
		}},
		{name: "exact", run: func(e *env) {
			h := e.history("ns")
			for _, rev := range h {
				for _, opts := range []storage.ListOptions{
					{ResourceVersion: rvs(rev), ResourceVersionMatch: storage.MatchExact},
					{ResourceVersion: rvs(rev), ResourceVersionMatch: storage.MatchExact, Limit: 100},
					{ResourceVersion: rvs(rev), Limit: 100}, // legacy: N with a limit is exact
				} {
					r := e.list(prefix("ns"), opts)
					if r.ResourceVersion != rev {
						e.t.Errorf("List(%+v) read at revision %d, want exactly %d", opts, r.ResourceVersion, rev)
					}
					sameObjects(e.t, "exact list at "+rvs(rev), r.Items, e.stateAt(prefix("ns"), rev))
				}
			}
		}},
		{name: "not_older_than", private: true, run: func(e *env) {
			h := e.history("ns")
			for _, rev := range []uint64{h[0], h[2], h[4]} {
				for _, opts := range []storage.ListOptions{
					{ResourceVersion: rvs(rev), ResourceVersionMatch: storage.MatchNotOlderThan},
					{ResourceVersion: rvs(rev)}, // legacy: N without a limit is not older than
				} {
					r := e.list(prefix("ns"), opts)
					if r.ResourceVersion < rev || r.ResourceVersion > e.current() {
						e.t.Errorf("List(%+v) read at revision %d, want between %d and %d", opts, r.ResourceVersion, rev, e.current())
					}
					sameObjects(e.t, "list not older than "+rvs(rev), r.Items, e.stateAt(prefix("ns"), r.ResourceVersion))
				}
			}
		}},
		{name: "too_large_resource_version", private: true, run: func(e *env) {
			e.history("ns")
			cur := e.current()
			for _, opts := range []storage.ListOptions{
				{ResourceVersion: rvs(cur + 1)},
				{ResourceVersion: rvs(cur + 1), Limit: 2},
				{ResourceVersion: rvs(cur + 1), ResourceVersionMatch: storage.MatchExact},
				{ResourceVersion: rvs(cur + 100), ResourceVersionMatch: storage.MatchNotOlderThan},
			} {
				_, err := e.s.List(e.ctx, prefix("ns"), opts)
				se := storageError(e.t, err, storage.ErrTooLargeResourceVersion)
				if se == nil || se.ResourceVersion != cur {
					e.t.Errorf("List(%+v): error %#v does not carry the current revision %d", opts, se, cur)
				}
			}
		}},
		{name: "before_first_write_under_prefix", run: func(e *env) {
			first := e.create(key("other", "x"), obj("other", "x", "1")).ResourceVersion
			e.history("ns")
			r := e.list(prefix("ns"), storage.ListOptions{ResourceVersion: rvs(first), ResourceVersionMatch: storage.MatchExact})
			if r.ResourceVersion != first || len(r.Items) != 0 {
				e.t.Errorf("exact list at %d, before any write under the prefix: revision %d, items %v", first, r.ResourceVersion, keysOf(r.Items))
			}
			r = e.list(prefix("ns"), storage.ListOptions{ResourceVersion: rvs(first), ResourceVersionMatch: storage.MatchNotOlderThan})
			sameObjects(e.t, "list not older than the first write", r.Items, e.stateAt(prefix("ns"), r.ResourceVersion))
		}},
		{name: "empty_prefix", private: true, run: func(e *env) {
			e.create(key("other", "x"), obj("other", "x", "1"))
			r := e.list(prefix("ns"), storage.ListOptions{})
			if len(r.Items) != 0 || r.Continue != "" || r.ResourceVersion != e.current() {
				e.t.Errorf("list of an empty prefix: items %v, continue %q, revision %d (current %d)", keysOf(r.Items), r.Continue, r.ResourceVersion, e.current())
			}
		}},
		{name: "recursive_prefix_matches_whole_segments", run: func(e *env) {
			for _, k := range []string{key("foo", "a"), key("foobar", "b"), key("", "foo"), key("fo", "c"), key("foo", "z")} {
				e.create(k, obj("", "x", "1"))
			}
			for _, c := range []struct {
				prefix string
				want   []string
			}{
				{prefix("foo"), []string{key("foo", "a"), key("foo", "z")}},
				{prefix("foo") + "/", []string{key("foo", "a"), key("foo", "z")}},
				{prefix("fo"), []string{key("fo", "c")}},
				{prefix("foobar"), []string{key("foobar", "b")}},
				{prefix(""), []string{key("fo", "c"), key("", "foo"), key("foo", "a"), key("foo", "z"), key("foobar", "b")}},
			} {
				r := e.list(c.prefix, storage.ListOptions{})
				if got := keysOf(r.Items); !slices.Equal(got, c.want) {
					e.t.Errorf("List(%q) = %v, want %v", c.prefix, got, c.want)
				}
			}
		}},
		{name: "key_order", run: func(e *env) {
			for _, n := range []string{"m", "b", "z", "a", "k"} {
				e.create(key("ns", n), obj("ns", n, "1"))
			}
			r := e.list(prefix("ns"), storage.ListOptions{})
			want := []string{key("ns", "a"), key("ns", "b"), key("ns", "k"), key("ns", "m"), key("ns", "z")}
			if got := keysOf(r.Items); !slices.Equal(got, want) {
				e.t.Errorf("List = %v, want key order %v", got, want)
			}
		}},
		{name: "predicate", run: func(e *env) {
			e.create(key("ns", "a"), obj("ns", "a", "1", "color", "red"))
			e.create(key("ns", "b"), obj("ns", "b", "1", "color", "blue"))
			e.create(key("ns", "c"), obj("ns", "c", "1", "color", "red"))
			r := e.list(prefix("ns"), storage.ListOptions{Predicate: labelIs("color", "red")})
			if got, want := keysOf(r.Items), []string{key("ns", "a"), key("ns", "c")}; !slices.Equal(got, want) {
				e.t.Errorf("List(color=red) = %v, want %v", got, want)
			}
		}},
		{name: "compacted_resource_version", private: true, needs: needCompact, run: func(e *env) {
			h := e.history("ns")
			e.compact(h[2])
			for _, opts := range []storage.ListOptions{
				{ResourceVersion: rvs(h[2]), ResourceVersionMatch: storage.MatchExact},
				{ResourceVersion: rvs(h[0]), ResourceVersionMatch: storage.MatchExact},
				{ResourceVersion: rvs(h[1]), Limit: 1}, // legacy exact
			} {
				_, err := e.s.List(e.ctx, prefix("ns"), opts)
				se := storageError(e.t, err, storage.ErrExpired)
				if se == nil || se.ResourceVersion != h[2] {
					e.t.Errorf("List(%+v): error %#v does not carry the compacted revision %d", opts, se, h[2])
				}
			}
			// After the compacted revision, and not-older-than reads, still work.
			r := e.list(prefix("ns"), storage.ListOptions{ResourceVersion: rvs(h[3]), ResourceVersionMatch: storage.MatchExact})
			sameObjects(e.t, "exact list after the compacted revision", r.Items, e.stateAt(prefix("ns"), h[3]))
			r = e.list(prefix("ns"), storage.ListOptions{ResourceVersion: rvs(h[0]), ResourceVersionMatch: storage.MatchNotOlderThan})
			sameObjects(e.t, "not-older-than list from a compacted revision", r.Items, e.stateAt(prefix("ns"), r.ResourceVersion))
			r = e.list(prefix("ns"), storage.ListOptions{})
			sameObjects(e.t, "latest list after compaction", r.Items, e.stateAt(prefix("ns"), e.current()))
		}},
	}
}

// labelIs selects objects whose label k is v.
func labelIs(k, v string) storage.Predicate {
	return storage.PredicateFunc(func(o *storage.Object) bool { return o.Meta.Labels.Get(k) == v })
}
