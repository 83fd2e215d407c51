// This file holds the pagination cases: limit and continue, snapshot
// semantics, predicates, remaining item counts, and expired tokens.

package storagetest

import (
	"fmt"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// next fetches the page after r with the same limit and predicate.
func (e *env) next(p string, r storage.ListResult, opts storage.ListOptions) storage.ListResult {
	e.t.Helper()
	if r.Continue == "" {
		e.t.Fatal("no continue token for a next page")
	}
	return e.list(p, storage.ListOptions{Limit: opts.Limit, Predicate: opts.Predicate, Continue: r.Continue})
}

// allPages lists p page by page from opts until the last page.
func (e *env) allPages(p string, opts storage.ListOptions) []storage.ListResult {
	e.t.Helper()
	pages := []storage.ListResult{e.list(p, opts)}
	for pages[len(pages)-1].Continue != "" {
		if len(pages) > 100 {
			e.t.Fatalf("more than 100 pages: continue tokens do not progress")
		}
		pages = append(pages, e.next(p, pages[len(pages)-1], opts))
	}
	return pages
}

// checkPages asserts the page shape: every page at the first page's
// revision and at most limit items; a page short of the limit ends the list
// (later pages, if any, are empty); the union of pages is want.
func (e *env) checkPages(pages []storage.ListResult, limit int64, want []storage.Object) {
	e.t.Helper()
	var all []storage.Object
	short := false
	for i, pg := range pages {
		if pg.ResourceVersion != pages[0].ResourceVersion {
			e.t.Errorf("page %d read at revision %d, the first at %d: pages must share a snapshot", i, pg.ResourceVersion, pages[0].ResourceVersion)
		}
		if int64(len(pg.Items)) > limit {
			e.t.Errorf("page %d has %d items, more than the limit %d", i, len(pg.Items), limit)
		}
		if short && len(pg.Items) > 0 {
			e.t.Errorf("page %d has items after a page short of the limit: pages must fill up", i)
		}
		if int64(len(pg.Items)) < limit {
			short = true
		}
		all = append(all, pg.Items...)
	}
	sameObjects(e.t, "items of all pages", all, want)
}

func paginationCases() []testCase {
	// objs creates n objects o00…, with label even=true on every other one.
	objs := func(e *env, n int) {
		for i := range n {
			name := fmt.Sprintf("o%02d", i)
			e.create(key("ns", name), obj("ns", name, "1", "even", fmt.Sprint(i%2 == 0), "third", fmt.Sprint(i%3 == 0)))
		}
	}
	return []testCase{
		{name: "snapshot_across_writes", run: func(e *env) {
			objs(e, 5)
			opts := storage.ListOptions{Limit: 2}
			p1 := e.list(prefix("ns"), opts)
			snap := p1.ResourceVersion
			if p1.Continue == "" {
				e.t.Fatal("first page of 5 with limit 2 has no continue token")
			}
			// Writes between pages: an update, a delete, creates before and
			// after the cursor. None may show in later pages.
			e.update(key("ns", "o02"), "2")
			e.delete(key("ns", "o03"))
			e.create(key("ns", "o01a"), obj("ns", "o01a", "1"))
			e.create(key("ns", "o09"), obj("ns", "o09", "1"))
			p2 := e.next(prefix("ns"), p1, opts)
			p3 := e.next(prefix("ns"), p2, opts)
			if p3.Continue != "" {
				e.t.Errorf("third page of 5 with limit 2 has a continue token")
			}
			e.checkPages([]storage.ListResult{p1, p2, p3}, 2, e.stateAt(prefix("ns"), snap))
		}},
		{name: "remaining_item_count", run: func(e *env) {
			objs(e, 7)
			opts := storage.ListOptions{Limit: 3}
			pages := e.allPages(prefix("ns"), opts)
			want := []int64{4, 1}
			if len(pages) != 3 {
				e.t.Fatalf("7 objects with limit 3 gave %d pages, want 3", len(pages))
			}
			for i, w := range want {
				if c := pages[i].RemainingItemCount; c == nil || *c != w {
					e.t.Errorf("page %d: RemainingItemCount = %v, want %d", i, c, w)
				}
			}
			if pages[2].RemainingItemCount != nil {
				e.t.Errorf("last page: RemainingItemCount = %d, want unset", *pages[2].RemainingItemCount)
			}
			e.checkPages(pages, 3, e.stateAt(prefix("ns"), pages[0].ResourceVersion))
		}},
		{name: "full_last_page", run: func(e *env) {
			objs(e, 4)
			p1 := e.list(prefix("ns"), storage.ListOptions{Limit: 2})
			p2 := e.next(prefix("ns"), p1, storage.ListOptions{Limit: 2})
			if p2.Continue != "" || p2.RemainingItemCount != nil {
				e.t.Errorf("the page holding the last object has continue %q, remaining %v; want neither", p2.Continue, p2.RemainingItemCount)
			}
			e.checkPages([]storage.ListResult{p1, p2}, 2, e.stateAt(prefix("ns"), p1.ResourceVersion))
		}},
		{name: "limit_above_count", run: func(e *env) {
			objs(e, 3)
			r := e.list(prefix("ns"), storage.ListOptions{Limit: 10})
			if r.Continue != "" || r.RemainingItemCount != nil {
				e.t.Errorf("limit above the count: continue %q, remaining %v; want neither", r.Continue, r.RemainingItemCount)
			}
			sameObjects(e.t, "list", r.Items, e.stateAt(prefix("ns"), r.ResourceVersion))
		}},
		{name: "exact_resource_version", private: true, run: func(e *env) {
			objs(e, 5)
			snap := e.current()
			e.update(key("ns", "o00"), "2")
			e.delete(key("ns", "o04"))
			for _, opts := range []storage.ListOptions{
				{Limit: 2, ResourceVersion: rvs(snap), ResourceVersionMatch: storage.MatchExact},
				{Limit: 2, ResourceVersion: rvs(snap)}, // legacy exact
			} {
				pages := e.allPages(prefix("ns"), opts)
				if pages[0].ResourceVersion != snap {
					e.t.Errorf("List(%+v) read at %d, want %d", opts, pages[0].ResourceVersion, snap)
				}
				e.checkPages(pages, 2, e.stateAt(prefix("ns"), snap))
			}
		}},
		{name: "continue_with_resource_version_zero", run: func(e *env) {
			objs(e, 3)
			p1 := e.list(prefix("ns"), storage.ListOptions{Limit: 2})
			p2 := e.list(prefix("ns"), storage.ListOptions{Limit: 2, Continue: p1.Continue, ResourceVersion: "0"})
			e.checkPages([]storage.ListResult{p1, p2}, 2, e.stateAt(prefix("ns"), p1.ResourceVersion))
		}},
		{name: "inconsistent_continue_token", private: true, run: func(e *env) {
			objs(e, 4)
			e.update(key("ns", "o02"), "2")
			pr, _ := backend.PrefixRange(prefix("ns"))
			tok, err := backend.EncodeContinue(key("ns", "o01")+"\x00", pr, 0)
			if err != nil {
				e.t.Fatal(err)
			}
			r := e.list(prefix("ns"), storage.ListOptions{Continue: tok, Limit: 10})
			if r.ResourceVersion != e.current() {
				e.t.Errorf("inconsistent continue read at %d, want the latest %d", r.ResourceVersion, e.current())
			}
			sameObjects(e.t, "inconsistent continuation", r.Items, e.stateAt(prefix("ns"), e.current())[2:])
		}},
		{name: "rare_objects_with_predicate", run: func(e *env) {
			objs(e, 30)
			// Only o07 and o23 match: pages scan past many non-matching objects.
			rare := storage.PredicateFunc(func(o *storage.Object) bool {
				return o.Meta.Name == "o07" || o.Meta.Name == "o23"
			})
			for _, limit := range []int64{1, 2, 5} {
				opts := storage.ListOptions{Limit: limit, Predicate: rare}
				pages := e.allPages(prefix("ns"), opts)
				var want []storage.Object
				for _, o := range e.stateAt(prefix("ns"), pages[0].ResourceVersion) {
					if rare(&o) {
						want = append(want, o)
					}
				}
				e.checkPages(pages, limit, want)
				if max := (2+limit-1)/limit + 1; int64(len(pages)) > max {
					e.t.Errorf("limit %d: %d pages for 2 matching objects, want at most %d", limit, len(pages), max)
				}
				for i, pg := range pages {
					if pg.RemainingItemCount != nil {
						e.t.Errorf("limit %d page %d: RemainingItemCount = %d with a predicate, want unset", limit, i, *pg.RemainingItemCount)
					}
				}
			}
		}},
		{name: "predicate_fills_pages", run: func(e *env) {
			objs(e, 12) // o00 o03 o06 o09 have third=true
			opts := storage.ListOptions{Limit: 3, Predicate: labelIs("third", "true")}
			p1 := e.list(prefix("ns"), opts)
			if len(p1.Items) != 3 {
				e.t.Errorf("first page has %d items, want 3: matching objects exist beyond it", len(p1.Items))
			}
			// Relabel a matching object past the cursor: the snapshot still shows it.
			o, err := e.s.Update(e.ctx, key("ns", "o09"), storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
				return withLabels(e.t, cur.Data, "third", "false"), nil
			})
			if err != nil {
				e.t.Fatal(err)
			}
			e.seen(o.ResourceVersion)
			e.hist = append(e.hist, write{o: o})
			pages := []storage.ListResult{p1}
			for pages[len(pages)-1].Continue != "" && len(pages) < 10 {
				pages = append(pages, e.next(prefix("ns"), pages[len(pages)-1], opts))
			}
			var want []storage.Object
			for _, o := range e.stateAt(prefix("ns"), p1.ResourceVersion) {
				if o.Meta.Labels.Get("third") == "true" {
					want = append(want, o)
				}
			}
			e.checkPages(pages, 3, want)
			for i, pg := range pages {
				if pg.RemainingItemCount != nil {
					e.t.Errorf("page %d: RemainingItemCount = %d with a predicate, want unset", i, *pg.RemainingItemCount)
				}
			}
		}},
		{name: "expired_continue_token", private: true, needs: needCompact, run: func(e *env) {
			objs(e, 4)
			opts := storage.ListOptions{Limit: 2}
			p1 := e.list(prefix("ns"), opts)
			e.update(key("ns", "o02"), "2")
			e.update(key("ns", "o03"), "2")
			compacted := e.current() - 1
			e.compact(compacted)
			_, err := e.s.List(e.ctx, prefix("ns"), storage.ListOptions{Limit: 2, Continue: p1.Continue})
			se := storageError(e.t, err, storage.ErrExpired)
			if se == nil {
				e.t.Fatalf("expired continue error %v is no *storage.Error", err)
			}
			if se.ResourceVersion != compacted {
				e.t.Errorf("expired continue error carries revision %d, want the compacted %d", se.ResourceVersion, compacted)
			}
			if se.Continue == "" {
				e.t.Fatal("expired continue error carries no inconsistent continue token")
			}
			r := e.list(prefix("ns"), storage.ListOptions{Limit: 2, Continue: se.Continue})
			if r.ResourceVersion != e.current() {
				e.t.Errorf("inconsistent continuation read at %d, want the latest %d", r.ResourceVersion, e.current())
			}
			sameObjects(e.t, "inconsistent continuation", r.Items, e.stateAt(prefix("ns"), e.current())[2:])
			if r.Continue != "" {
				e.t.Errorf("inconsistent continuation of the last 2 objects has a continue token")
			}
		}},
	}
}
