// This file holds the property test: random sequences of operations run
// against a store and against a small in-memory model (a map plus a revision
// counter), compared after every operation and, for watches, at the end.

package storagetest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// PropertySeeds is how many seeds RunProperty runs, each on a fresh store.
const PropertySeeds = 4

// PropertyOps is how many random operations each seed runs.
const PropertyOps = 250

// RunProperty runs PropertySeeds random sequences of PropertyOps operations
// (create, update with and without a resource version precondition or a
// stale cached state, relabel, delete, get, paginated list with writes
// between pages) against stores from newStore, checking each result against
// an in-memory model. Three watches (recursive, filtered by a label, single
// key) run through each sequence; the events they delivered must equal the
// model's history. Seeds are fixed, so a failure reproduces.
//
// Every sequence checks the revision of each write, so with
// caps.SharedRevision the sequences run one at a time.
func RunProperty(t *testing.T, newStore func(t *testing.T) storage.Interface, caps Capabilities) {
	var turns turns
	for seed := range uint64(PropertySeeds) {
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) {
			t.Parallel()
			defer turns.take(caps, true)()
			e := newEnv(t, newStore(t), caps)
			e.private = true
			p := &prop{env: e, rng: rand.New(rand.NewPCG(seed, 0x5eed)), cur: map[string]mstate{}}
			p.run()
		})
	}
}

// mstate is one state of one key in the model.
type mstate struct {
	rev   uint64
	value string
	color string
	uid   string
}

// mwrite is one committed write in the model.
type mwrite struct {
	key     string
	rev     uint64
	deleted bool
	state   mstate // the new state; for a delete, the last state at rev
}

type prop struct {
	*env
	rng   *rand.Rand
	rev   uint64 // the model's revision: the last committed write's
	cur   map[string]mstate
	log   []mwrite
	seen  map[string]storage.Object // the last object read per key, for Cached
	n     int                       // operation counter, for unique values
	pages int                       // list pages read
}

// randKey picks one of 8 keys: namespaces n1, n2 × names a to d.
func (p *prop) randKey() (ns, name string) {
	return fmt.Sprintf("n%d", 1+p.rng.IntN(2)), string(rune('a' + p.rng.IntN(4)))
}

func (p *prop) color() string { return []string{"red", "blue"}[p.rng.IntN(2)] }

// watchSpec is one of the watches that run through the sequence.
type watchSpec struct {
	name      string
	key       string
	recursive bool
	pred      func(s mstate) bool
}

// propWatches are the watches open through each sequence.
func propWatches() []watchSpec {
	return []watchSpec{
		{name: "all", key: prefix(""), recursive: true},
		{name: "n1_red", key: prefix("n1"), recursive: true, pred: func(s mstate) bool { return s.color == "red" }},
		{name: "n2_a", key: key("n2", "a")},
	}
}

func (p *prop) run() {
	t := p.t
	p.seen = map[string]storage.Object{}
	if rr, ok := p.s.(storage.RevisionReader); ok {
		// Without one, the model learns the revision from the first write.
		r, err := rr.CurrentRevision(p.ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.rev = r
	}
	// Collect every watch's events concurrently, so no backend buffer limit
	// cuts them off; compare at the end.
	watches := propWatches()
	cols := make([]*collector, len(watches))
	var wg sync.WaitGroup
	var watchers []storage.Watcher
	t.Cleanup(func() {
		for _, w := range watchers {
			w.Stop()
		}
		wg.Wait()
	})
	for i, ws := range watches {
		w, err := p.s.Watch(p.ctx, ws.key, storage.WatchOptions{Recursive: ws.recursive, Predicate: ws.predicate()})
		if err != nil {
			t.Fatalf("Watch(%q): %v", ws.key, err)
		}
		watchers = append(watchers, w)
		c := &collector{more: make(chan struct{}, 1)}
		cols[i] = c
		wg.Go(func() { c.collect(w) })
	}
	for p.n = 0; p.n < PropertyOps && !t.Failed(); p.n++ {
		p.step()
	}
	// Fences: a last write that every watch sees.
	p.fence("n1", "zz")
	p.fence("n2", "a")
	counts := make([]int, len(watches))
	for i, ws := range watches {
		want := p.expectedEvents(ws)
		counts[i] = len(want)
		p.compareEvents(ws.name, cols[i].wait(len(want), p.timeout), want)
	}
	t.Logf("%d operations, %d writes, %d list pages; watch events %v", p.n, len(p.log), p.pages, counts)
}

// collector gathers a watch's events (bookmarks left out) as they come.
type collector struct {
	mu   sync.Mutex
	evs  []storage.Event
	done bool
	more chan struct{} // poked after every change
}

func (c *collector) collect(w storage.Watcher) {
	for ev := range w.ResultChan() {
		if ev.Type == storage.EventBookmark {
			continue
		}
		c.mu.Lock()
		c.evs = append(c.evs, ev)
		c.mu.Unlock()
		c.poke()
	}
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	c.poke()
}

func (c *collector) poke() {
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// wait returns the events once there are n, the watch ended, or timeout
// passed.
func (c *collector) wait(n int, timeout time.Duration) []storage.Event {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		evs, done := slices.Clone(c.evs), c.done
		c.mu.Unlock()
		if len(evs) >= n || done {
			return evs
		}
		select {
		case <-c.more:
		case <-timer.C:
			return evs
		}
	}
}

// fence writes k unconditionally, creating it when missing.
func (p *prop) fence(ns, name string) {
	p.t.Helper()
	k := key(ns, name)
	v := fmt.Sprintf("fence%d", p.n)
	p.n++
	o, err := p.s.Update(p.ctx, k, storage.UpdateOptions{IgnoreNotFound: true}, func(cur storage.Object) ([]byte, error) {
		if len(cur.Data) == 0 {
			return obj(ns, name, v, "color", "red"), nil
		}
		return withLabels(p.t, withValue(p.t, cur.Data, v), "color", "red"), nil
	})
	if err != nil {
		p.t.Fatalf("fence Update(%s): %v", k, err)
	}
	p.commit(k, o, false)
}

func (ws watchSpec) predicate() storage.Predicate {
	if ws.pred == nil {
		return nil
	}
	return storage.PredicateFunc(func(o *storage.Object) bool { return ws.pred(mstate{color: o.Meta.Labels.Get("color")}) })
}

func nonBookmarks(evs []storage.Event) []storage.Event {
	var out []storage.Event
	for _, ev := range evs {
		if ev.Type != storage.EventBookmark {
			out = append(out, ev)
		}
	}
	return out
}

// step runs one random operation.
func (p *prop) step() {
	ns, name := p.randKey()
	switch r := p.rng.IntN(100); {
	case r < 20:
		p.create(ns, name, p.color())
	case r < 35:
		p.update(ns, name, false, false)
	case r < 45:
		p.update(ns, name, true, false)
	case r < 52:
		p.update(ns, name, false, true)
	case r < 64:
		p.delete(ns, name)
	case r < 82:
		p.get(ns, name)
	default:
		p.list()
	}
}

// commit records a write the store acknowledged at rev, which must be the
// one after the model's (any after it with Capabilities.RevisionGaps).
func (p *prop) commit(k string, o storage.Object, deleted bool) {
	p.t.Helper()
	checkObject(p.t, o, k)
	if p.rev != 0 && !p.follows(p.rev, o.ResourceVersion) {
		p.t.Fatalf("op %d: write to %s committed at %d, want %s", p.n, k, o.ResourceVersion, p.after(p.rev))
	}
	p.rev = o.ResourceVersion
	p.last = p.rev
	st := mstate{rev: o.ResourceVersion, value: value(p.t, o), color: o.Meta.Labels.Get("color"), uid: o.Meta.UID}
	p.log = append(p.log, mwrite{key: k, rev: o.ResourceVersion, deleted: deleted, state: st})
	if deleted {
		delete(p.cur, k)
		delete(p.seen, k)
	} else {
		p.cur[k] = st
		p.seen[k] = o
	}
}

func (p *prop) create(ns, name, color string) {
	p.t.Helper()
	k := key(ns, name)
	v := fmt.Sprintf("v%d", p.n)
	o, err := p.s.Create(p.ctx, k, obj(ns, name, v, "color", color))
	if _, exists := p.cur[k]; exists {
		p.wantErr("Create", k, err, storage.ErrAlreadyExists)
		return
	}
	if err != nil {
		p.t.Fatalf("op %d: Create(%s): %v", p.n, k, err)
	}
	p.commit(k, o, false)
	if o.ResourceVersion != p.rev || value(p.t, o) != v || o.Meta.Labels.Get("color") != color {
		p.t.Errorf("op %d: Create(%s) returned %s value %q labels %v", p.n, k, describe(o), value(p.t, o), o.Meta.Labels)
	}
}

// update rewrites k: a new value (or the same bytes when noop), a flipped
// color when relabel; half the time with a resource version precondition,
// which is stale half of those times; sometimes from a cached, possibly
// stale, state.
func (p *prop) update(ns, name string, noop, relabel bool) {
	p.t.Helper()
	k := key(ns, name)
	old, exists := p.cur[k]
	var opts storage.UpdateOptions
	stale := false
	if p.rng.IntN(2) == 0 && exists {
		opts.Preconditions.ResourceVersion = rvs(old.rev)
		if p.rng.IntN(2) == 0 && old.rev > 1 {
			opts.Preconditions.ResourceVersion = rvs(old.rev - 1 - uint64(p.rng.IntN(int(min(old.rev-1, 5)))))
			stale = true
		}
	}
	if c, ok := p.seen[k]; ok && p.rng.IntN(3) == 0 {
		opts.Cached = &c
	}
	v := fmt.Sprintf("v%d", p.n)
	var sawRev []uint64
	o, err := p.s.Update(p.ctx, k, opts, func(cur storage.Object) ([]byte, error) {
		sawRev = append(sawRev, cur.ResourceVersion)
		switch {
		case noop:
			return cur.Data, nil
		case relabel:
			c := "red"
			if cur.Meta.Labels.Get("color") == "red" {
				c = "blue"
			}
			return withLabels(p.t, cur.Data, "color", c), nil
		}
		return withValue(p.t, cur.Data, v), nil
	})
	switch {
	case !exists:
		p.wantErr("Update", k, err, storage.ErrNotFound)
		return
	case stale:
		p.wantErr("Update", k, err, storage.ErrConflict)
		return
	case err != nil:
		p.t.Fatalf("op %d: Update(%s): %v", p.n, k, err)
	}
	if last := sawRev[len(sawRev)-1]; last != old.rev {
		p.t.Errorf("op %d: Update(%s): the UpdateFunc that won saw revision %d, the current is %d", p.n, k, last, old.rev)
	}
	if noop {
		checkObject(p.t, o, k)
		if o.ResourceVersion != old.rev || value(p.t, o) != old.value {
			p.t.Errorf("op %d: no-op Update(%s) returned %s value %q, want the stored state at %d", p.n, k, describe(o), value(p.t, o), old.rev)
		}
		p.seen[k] = o
		return
	}
	p.commit(k, o, false)
	if relabel && p.cur[k].color == old.color {
		p.t.Errorf("op %d: relabel of %s kept color %s", p.n, k, old.color)
	}
	if !relabel && p.cur[k].value != v {
		p.t.Errorf("op %d: Update(%s) stored value %q, want %q", p.n, k, p.cur[k].value, v)
	}
}

// delete removes k, sometimes with a (possibly stale) resource version or
// uid precondition, sometimes from a cached state.
func (p *prop) delete(ns, name string) {
	p.t.Helper()
	k := key(ns, name)
	old, exists := p.cur[k]
	var opts storage.DeleteOptions
	conflict := false
	if c, ok := p.seen[k]; ok && p.rng.IntN(3) == 0 {
		opts.Cached = &c
	}
	if exists {
		switch p.rng.IntN(4) {
		case 0:
			opts.Preconditions.UID = old.uid
		case 1:
			opts.Preconditions.UID = "not-" + old.uid
			conflict = true
		case 2:
			opts.Preconditions.ResourceVersion = rvs(old.rev)
		}
	}
	o, err := p.s.Delete(p.ctx, k, opts)
	switch {
	case !exists:
		p.wantErr("Delete", k, err, storage.ErrNotFound)
		return
	case conflict:
		p.wantErr("Delete", k, err, storage.ErrConflict)
		return
	case err != nil:
		p.t.Fatalf("op %d: Delete(%s): %v", p.n, k, err)
	}
	if value(p.t, o) != old.value || o.Meta.UID != old.uid {
		p.t.Errorf("op %d: Delete(%s) returned value %q uid %s, want the last state %q uid %s", p.n, k, value(p.t, o), o.Meta.UID, old.value, old.uid)
	}
	p.commit(k, o, true)
}

func (p *prop) get(ns, name string) {
	p.t.Helper()
	k := key(ns, name)
	want, exists := p.cur[k]
	rv := ""
	if exists && p.rng.IntN(2) == 0 {
		rv = rvs(want.rev)
	}
	o, err := p.s.Get(p.ctx, k, storage.GetOptions{ResourceVersion: rv})
	if !exists {
		p.wantErr("Get", k, err, storage.ErrNotFound)
		return
	}
	if err != nil {
		p.t.Fatalf("op %d: Get(%s, rv %q): %v", p.n, k, rv, err)
	}
	checkObject(p.t, o, k)
	if o.ResourceVersion != want.rev || value(p.t, o) != want.value || o.Meta.UID != want.uid {
		p.t.Errorf("op %d: Get(%s, rv %q) = %s value %q, model has rev %d value %q", p.n, k, rv, describe(o), value(p.t, o), want.rev, want.value)
	}
	p.seen[k] = o
}

// list pages through a random prefix with a random limit and predicate,
// sometimes writing between pages, and compares the union of the pages with
// the model's state at the first page's revision.
func (p *prop) list() {
	p.t.Helper()
	pfx := []string{prefix(""), prefix("n1"), prefix("n2")}[p.rng.IntN(3)]
	opts := storage.ListOptions{Limit: int64(p.rng.IntN(4))}
	red := p.rng.IntN(3) == 0
	if red {
		opts.Predicate = labelIs("color", "red")
	}
	var items []storage.Object
	var first storage.ListResult
	for page := 0; ; page++ {
		r, err := p.s.List(p.ctx, pfx, opts)
		if err != nil {
			p.t.Fatalf("op %d: List(%s, %+v) page %d: %v", p.n, pfx, opts, page, err)
		}
		p.env.checkList(r)
		p.pages++
		if page == 0 {
			first = r
			if r.ResourceVersion != p.rev && p.rev != 0 {
				p.t.Errorf("op %d: latest List read at %d, model is at %d", p.n, r.ResourceVersion, p.rev)
			}
		} else if r.ResourceVersion != first.ResourceVersion {
			p.t.Errorf("op %d: page %d read at %d, first page at %d", p.n, page, r.ResourceVersion, first.ResourceVersion)
		}
		if opts.Limit > 0 && int64(len(r.Items)) > opts.Limit {
			p.t.Errorf("op %d: page of %d items with limit %d", p.n, len(r.Items), opts.Limit)
		}
		items = append(items, r.Items...)
		if r.Continue == "" {
			break
		}
		if page > 20 {
			p.t.Fatalf("op %d: more than 20 pages for at most 8 objects", p.n)
		}
		if p.rng.IntN(3) == 0 {
			ns, name := p.randKey()
			p.update(ns, name, false, false)
		}
		opts = storage.ListOptions{Limit: opts.Limit, Predicate: opts.Predicate, Continue: r.Continue}
	}
	want := p.stateAt(pfx, first.ResourceVersion)
	var got []string
	for _, o := range items {
		got = append(got, fmt.Sprintf("%s@%d=%s", o.Key, o.ResourceVersion, value(p.t, o)))
	}
	var exp []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if s := want[k]; !red || s.color == "red" {
			exp = append(exp, fmt.Sprintf("%s@%d=%s", k, s.rev, s.value))
		}
	}
	if !slices.Equal(got, exp) {
		p.t.Errorf("op %d: List(%s, limit %d, red %v) at %d =\n %v\nmodel:\n %v", p.n, pfx, opts.Limit, red, first.ResourceVersion, got, exp)
	}
}

// stateAt replays the model's log up to rev under prefix pfx.
func (p *prop) stateAt(pfx string, rev uint64) map[string]mstate {
	pr, _ := backend.PrefixRange(pfx)
	st := map[string]mstate{}
	for _, w := range p.log {
		if w.rev > rev || !strings.HasPrefix(w.key, pr) {
			continue
		}
		if w.deleted {
			delete(st, w.key)
		} else {
			st[w.key] = w.state
		}
	}
	return st
}

// mevent is a watch event the model predicts.
type mevent struct {
	typ storage.EventType
	key string
	rev uint64
	val string
}

// expectedEvents is what watch ws must have delivered: the model's log
// filtered by key and predicate, with predicate transitions as ADDED and
// DELETED (the latter carrying the last matching state at the event's
// revision).
func (p *prop) expectedEvents(ws watchSpec) []mevent {
	match := func(k string) bool {
		if !ws.recursive {
			return k == ws.key
		}
		pr, _ := backend.PrefixRange(ws.key)
		return strings.HasPrefix(k, pr)
	}
	pass := func(s mstate) bool { return ws.pred == nil || ws.pred(s) }
	prev := map[string]mstate{}
	var out []mevent
	for _, w := range p.log {
		if !match(w.key) {
			continue
		}
		old, had := prev[w.key]
		oldOK := had && pass(old)
		if w.deleted {
			delete(prev, w.key)
			if oldOK {
				out = append(out, mevent{storage.EventDeleted, w.key, w.rev, old.value})
			}
			continue
		}
		prev[w.key] = w.state
		switch newOK := pass(w.state); {
		case newOK && oldOK:
			out = append(out, mevent{storage.EventModified, w.key, w.rev, w.state.value})
		case newOK:
			out = append(out, mevent{storage.EventAdded, w.key, w.rev, w.state.value})
		case oldOK:
			out = append(out, mevent{storage.EventDeleted, w.key, w.rev, old.value})
		}
	}
	return out
}

func (p *prop) compareEvents(name string, got []storage.Event, want []mevent) {
	p.t.Helper()
	g := make([]string, len(got))
	for i, ev := range got {
		if ev.Type == storage.EventError {
			g[i] = fmt.Sprintf("ERROR %v", ev.Err)
			continue
		}
		checkObject(p.t, ev.Object, ev.Object.Key)
		g[i] = fmt.Sprintf("%s %s@%d=%s", ev.Type, ev.Object.Key, ev.Object.ResourceVersion, value(p.t, ev.Object))
	}
	w := make([]string, len(want))
	for i, ev := range want {
		w[i] = fmt.Sprintf("%s %s@%d=%s", ev.typ, ev.key, ev.rev, ev.val)
	}
	if !slices.Equal(g, w) {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		p.t.Errorf("watch %s: %d events, model %d; first difference at %d:\n got  %v\n want %v", name, len(g), len(w), i, g[i:min(i+5, len(g))], w[i:min(i+5, len(w))])
	}
}

func (p *prop) wantErr(op, k string, err, sentinel error) {
	p.t.Helper()
	if !errors.Is(err, sentinel) {
		p.t.Fatalf("op %d: %s(%s) error = %v, model says %v", p.n, op, k, err, sentinel)
	}
}
