// This file holds the Cacher: its state (current objects in a B-tree with an
// immutable snapshot per event, the ring of recent events), New, Start (the
// upstream list and watch), how an upstream event is applied and handed to
// the dispatch shards, and how a watcher sees it (translate).

package watch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// entry is one current object in the cache. It keeps no encodings of the
// object: the frames a watch event's memo holds live as long as the event
// stays in the ring, not as long as the object, which would double the
// cache's memory once watchers have seen each object (initial events are
// written from the stored bytes; see rest's watch loop).
type entry struct {
	obj storage.Object
}

// elem is what the tree holds for an object: its key and its labels'
// fingerprint (storage.Labels.LabelBits) beside a pointer to it. A walk
// reads the tree's nodes, whose elems lie side by side in memory, and an
// object only when it may be selected: a selector's scan that rejects
// objects by their fingerprint reads no object at all (the objects lie
// scattered over the heap, and reading each one's labels was most of such
// a scan), and searches compare keys without reading objects.
type elem struct {
	en   *entry
	bits uint64
}

// elemOf is o's elem, with a new entry.
func elemOf(o storage.Object) elem {
	return elem{bits: o.Meta.Labels.LabelBits(), en: &entry{obj: o}}
}

// probe is the elem a search for key compares with.
func probe(key string) elem { return elem{en: &entry{obj: storage.Object{Key: key}}} }

func elemLess(a, b elem) bool { return a.en.obj.Key < b.en.obj.Key }

// key is the object's key.
func (el elem) key() string { return el.en.obj.Key }

// ascendFrom calls fn on the entries of t from key on, in order, until fn
// returns false. google/btree's AscendGreaterOrEqual searches for its start
// in every node it descends into, all through the walk: a fifth of a
// selector's walk over 50,000 objects, comparing keys that share a long
// prefix. When key is at or before the tree's first entry (a list of a
// whole collection: the cache holds one resource) it walks from the start
// with no search at all, which visits the same entries.
func ascendFrom(t *tree, key string, fn func(elem) bool) {
	if first, ok := t.Min(); !ok || key <= first.key() {
		t.Ascend(fn)
		return
	}
	t.AscendGreaterOrEqual(probe(key), fn)
}

// allUnder reports whether every key of t starts with pr: its first and
// last do (keys between two that share a prefix share it too). A walk of a
// whole collection then needs no prefix check per object.
func allUnder(t *tree, pr string) bool {
	first, ok := t.Min()
	if !ok {
		return true
	}
	last, _ := t.Max()
	return strings.HasPrefix(first.key(), pr) && strings.HasPrefix(last.key(), pr)
}

// tree is the ordered set of current objects. The cacher mutates one tree
// and publishes an immutable clone of it when a reader needs one (btree
// clones are copy-on-write, so a clone costs a few node copies at the next
// write); GETs read the tree itself, under mu.
type tree = btree.BTreeG[elem]

// event is one change under the prefix, as the cacher keeps it in its ring
// (RingSize of them, whatever the number of objects: it is kept small, one
// copy of the object's metadata rather than one per form).
type event struct {
	// asIs is the change as stored, and as watchers see it, built once and
	// shared (a shard copies it into each channel it sends to): its Object
	// is the new state (for DELETED the last state at the deletion's
	// revision), its Prev the state before (MODIFIED and DELETED), its Memo
	// the event's encodings.
	asIs storage.Event
	// snap is the state after this event once a reader has needed it (see
	// Cacher.stateAfter), else nil: a clone kept with every event of the
	// ring held the node copies of each write, about 2 KiB per event.
	// Guarded by Cacher.snapMu while mu is held for reading.
	snap *tree
	// mod holds the other forms of a MODIFIED event; nil for the others.
	mod *modified
}

// modified holds what watchers of a MODIFIED event may see besides the
// change itself, each built on first use (by whichever shard needs it
// first) and shared: most changes have none of these watchers.
type modified struct {
	// added is ADDED: the object starts matching.
	addedOnce sync.Once
	added     *storage.Event
	// gone is DELETED with prev at this event's revision: the object stops
	// matching. Nil when it cannot be built.
	goneOnce sync.Once
	gone     *storage.Event
}

// newEvent returns the event for an upstream change; prev is the state
// before it, as the cache had it.
func newEvent(typ storage.EventType, obj storage.Object, prev *storage.Object) *event {
	e := &event{asIs: storage.Event{Type: typ, Object: obj, Memo: &storage.EventMemo{}}}
	switch typ {
	case storage.EventModified:
		e.asIs.Prev = prev
		e.mod = &modified{}
	case storage.EventDeleted:
		e.asIs.Prev = prev
	}
	return e
}

// Cacher is a watch cache in front of a storage.Interface, and a
// storage.Interface itself. See the package doc.
type Cacher struct {
	// Set by New, read-only after.
	store  storage.Interface
	cfg    Config
	prefix string // Config.Prefix as backend.PrefixRange returns it
	m      *metrics
	// fields are the names of cfg.IndexFields, sorted, so a watcher is always
	// indexed by the same field.
	fields []string
	// shards deliver to the watchers; each has its own lock (see shard).
	shards []*shard

	mu    sync.RWMutex // guards the fields from here to the next blank line
	ready bool
	tree  *tree // the current state; written only by the dispatch loop
	// snap is an immutable clone of tree at rev, or nil when no reader has
	// needed one since the last change (see latest). Set under snapMu
	// while mu is held for reading (atomic: readers find it without
	// snapMu once it is set).
	snap atomic.Pointer[tree]
	// parents counts the objects of snap by parent prefix (a namespace's
	// "/<group>/<resource>/<ns>/", or the resource's own prefix for
	// cluster-scoped objects), so that a page of a namespace's LIST knows how
	// many objects follow it without walking them (see page).
	parents map[string]int64
	rev     uint64 // the revision the cache has caught up with
	revCh   chan struct{}
	// ring holds the last events in revision order: ring[(head+i)%len] for i
	// in [0, n). Every event after ringStart is in it; base is the state at
	// ringStart.
	ring      []*event
	head, n   int
	ringStart uint64
	base      *tree // nil until a reader needs it (see stateAfter); guarded like snap
	compacted uint64
	// pendingProgress is a RequestProgress revision not reached yet: every
	// ProgressNotify watcher gets a bookmark once rev reaches it.
	pendingProgress uint64
	started         bool
	nextShard       int // the shard the next watcher goes to (round robin)

	// Not guarded by mu.
	//
	// snapMu guards snap, base and the events' snap, which readers holding
	// mu for reading fill in on first use (with mu held for writing, nobody
	// else touches them).
	snapMu sync.Mutex
	// workers are the shards' goroutines, running during Start: added once
	// (under mu, in Start), waited for by shutdown.
	workers sync.WaitGroup
	// queued counts the events queued across all watchers (the dispatch
	// budget); it is atomic, and changed under each watcher's own lock.
	queued queueCounter
	// lastWrite is the highest revision of a write made through the cacher
	// under its prefix (atomic).
	lastWrite atomic.Uint64
	// visit, when set (tests), is called with every watcher an event visits,
	// from the shards' goroutines.
	visit atomic.Pointer[func(w *watcher)]
	// building, when set (tests), is called by a starting watch once it has
	// built its initial events outside mu, before it takes mu again.
	building atomic.Pointer[func()]
}

// Interfaces the Cacher implements. The capability interfaces are always
// present; each falls back to what the store offers (see their docs).
var (
	_ storage.Interface         = (*Cacher)(nil)
	_ storage.RevisionReader    = (*Cacher)(nil)
	_ storage.Compactor         = (*Cacher)(nil)
	_ storage.ProgressRequester = (*Cacher)(nil)
	_ storage.Counter           = (*Cacher)(nil)
	_ storage.ReadinessChecker  = (*Cacher)(nil)
	_ storage.ObjectSizeLimiter = (*Cacher)(nil)
)

// New returns a Cacher for the objects under cfg.Prefix in store. It serves
// nothing from memory until Start has loaded the initial list.
func New(store storage.Interface, cfg Config) (*Cacher, error) {
	if store == nil {
		return nil, errors.New("watch: nil store")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pr, err := backend.PrefixRange(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer, cfg.Resource)
	if err != nil {
		return nil, fmt.Errorf("watch: metrics: %w", err)
	}
	c := &Cacher{store: store, cfg: cfg, prefix: pr, m: m, revCh: make(chan struct{}), parents: map[string]int64{}}
	for f := range cfg.IndexFields {
		c.fields = append(c.fields, f)
	}
	slices.Sort(c.fields)
	for range cfg.DispatchWorkers {
		c.shards = append(c.shards, newShard(c))
	}
	c.ring = make([]*event, cfg.RingSize)
	c.m.capacity.Set(float64(cfg.RingSize))
	return c, nil
}

// Start lists the prefix, then watches it and applies every change, until ctx
// is done; it then ends every watcher and returns nil. When the upstream watch
// fails (for example ErrExpired after a compaction), Start re-lists. Start
// may be called once.
func (c *Cacher) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("watch: Start called twice")
	}
	c.started = true
	for _, s := range c.shards {
		c.workers.Go(s.run)
	}
	c.mu.Unlock()
	defer c.shutdown()
	for {
		err := c.listAndWatch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.cfg.Logger.Warn("watch cache lost its upstream watch; re-listing",
			zap.String("resource", c.cfg.Resource), zap.Error(err))
		c.setNotReady()
		t := time.NewTimer(relistBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Ready reports ErrNotReady until the initial list is loaded (and while the
// cache re-lists), then nil: the store's own readiness is its check's (a
// full disk fails /readyz's storage check, not the caches above it, which
// go on serving).
func (c *Cacher) Ready(ctx context.Context) error {
	if !c.isReady() {
		return ErrNotReady
	}
	return nil
}

func (c *Cacher) isReady() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// listAndWatch loads the state and applies the upstream watch until it
// fails or ctx is done.
func (c *Cacher) listAndWatch(ctx context.Context) error {
	res, err := c.store.List(ctx, c.prefix, storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	up, err := c.store.Watch(wctx, c.prefix, storage.WatchOptions{
		ResourceVersion: storage.FormatResourceVersion(res.ResourceVersion),
		Recursive:       true,
		ProgressNotify:  true,
	})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer up.Stop()
	c.replace(res)

	// Every ~second (with jitter, as Kubernetes' cacher) the shards look for
	// the watchers whose bookmark is due: each has its own schedule.
	var (
		tick   <-chan time.Time
		timer  *time.Timer
		period = min(time.Second, c.cfg.BookmarkInterval)
	)
	if c.cfg.BookmarkInterval > 0 {
		timer = time.NewTimer(jitter(period))
		defer timer.Stop()
		tick = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			c.mu.Lock()
			c.broadcastBookmark(c.rev, true)
			c.mu.Unlock()
			timer.Reset(jitter(period))
		case ev, ok := <-up.ResultChan():
			if !ok {
				return errors.New("upstream watch closed")
			}
			if ev.Type == storage.EventError {
				return ev.Err
			}
			c.apply(ev)
		}
	}
}

// replace installs a fresh state read at res.ResourceVersion. Watchers
// registered before (a re-list) are ended: events may be missing between.
func (c *Cacher) replace(res storage.ListResult) {
	t := btree.NewG(32, elemLess)
	parents := map[string]int64{}
	for _, o := range res.Items {
		if _, had := t.ReplaceOrInsert(elemOf(o)); !had {
			parents[parentPrefix(o.Key)]++
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parents = parents
	c.endAll(&storage.Error{Err: storage.ErrExpired, Msg: ErrRelisted.Error()}, ErrRelisted)
	c.tree = t
	c.base = t.Clone()
	c.snap.Store(c.base)
	clear(c.ring)
	c.head, c.n = 0, 0
	c.ringStart = res.ResourceVersion
	c.ready = true
	c.m.initialized.Inc()
	c.m.objects.Set(float64(t.Len()))
	c.m.stored.Set(float64(t.Len()))
	c.advance(res.ResourceVersion)
	c.notify()
}

func (c *Cacher) setNotReady() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready = false
	c.notify()
}

// shutdown ends every watcher and the shards' goroutines when Start
// returns.
func (c *Cacher) shutdown() {
	c.mu.Lock()
	c.ready = false
	c.endAll(&storage.Error{Err: storage.ErrClosed, Msg: ErrStopped.Error()}, ErrStopped)
	for _, s := range c.shards {
		s.enqueue(item{kind: itemStop})
	}
	c.notify()
	c.mu.Unlock()
	c.workers.Wait()
}

// advance moves the cache's revision forward and wakes the readers waiting
// for it. Called with mu held for writing.
func (c *Cacher) advance(rev uint64) {
	if rev > c.rev {
		c.rev = rev
		c.m.rv.Set(float64(rev))
		c.notify()
	}
	if c.pendingProgress != 0 && c.rev >= c.pendingProgress {
		c.pendingProgress = 0
		c.broadcastBookmark(c.rev, false)
	}
}

// notify wakes everyone waiting on revCh. Called with mu held for writing.
func (c *Cacher) notify() {
	close(c.revCh)
	c.revCh = make(chan struct{})
}

// apply applies one upstream event: to the state, to the ring, and to the
// watchers it concerns.
func (c *Cacher) apply(ev storage.Event) {
	c.m.received.Inc()
	if ev.Type == storage.EventBookmark {
		c.mu.Lock()
		c.advance(ev.Object.ResourceVersion)
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	c.applyLocked(ev)
	c.mu.Unlock()
	c.waitShards()
}

// applyLocked applies a change. Called with mu held for writing.
func (c *Cacher) applyLocked(ev storage.Event) {
	if ev.Object.ResourceVersion <= c.rev {
		return // already seen (cannot happen with a gap-free upstream)
	}
	at := probe(ev.Object.Key)
	prev := ev.Prev
	if prev == nil && ev.Type != storage.EventAdded {
		// Only an upstream that does not say what it replaced costs a
		// second search of the tree (a feed says it for every change).
		if old, had := c.tree.Get(at); had {
			prev = &old.en.obj
		}
	}
	e := newEvent(ev.Type, ev.Object, prev)
	if e.asIs.Type == storage.EventDeleted {
		if _, ok := c.tree.Delete(at); ok {
			c.countParent(e.asIs.Object.Key, -1)
		}
	} else if _, replaced := c.tree.ReplaceOrInsert(elemOf(e.asIs.Object)); !replaced {
		c.countParent(e.asIs.Object.Key, 1)
	}
	c.snap.Store(nil) // cloned when a reader needs it
	c.m.objects.Set(float64(c.tree.Len()))
	c.m.stored.Set(float64(c.tree.Len()))
	c.push(e)
	c.dispatch(e)
	c.advance(e.asIs.Object.ResourceVersion)
}

// countParent adds d to the count of key's parent prefix. Called with mu
// held for writing.
func (c *Cacher) countParent(key string, d int64) {
	p := parentPrefix(key)
	if n := c.parents[p] + d; n > 0 {
		c.parents[p] = n
	} else {
		delete(c.parents, p)
	}
}

// parentPrefix is key up to and including its last '/'.
func parentPrefix(key string) string { return key[:strings.LastIndexByte(key, '/')+1] }

// shardBacklog is how many events a shard may have queued before apply
// waits for it: a fan-out that cannot keep up slows the intake (the
// upstream watch buffers) instead of holding events without bound.
const shardBacklog = 256

// waitShards waits until every shard has room. Called by apply, without mu.
func (c *Cacher) waitShards() {
	for _, s := range c.shards {
		s.waitRoom(shardBacklog)
	}
}

// push appends e to the ring, dropping the oldest event when it is full.
func (c *Cacher) push(e *event) {
	size := len(c.ring)
	if c.n == size {
		old := c.ring[c.head]
		c.ringStart, c.base = old.asIs.Object.ResourceVersion, old.snap
		c.ring[c.head] = e
		c.head = (c.head + 1) % size
		return
	}
	c.ring[(c.head+c.n)%size] = e
	c.n++
}

// at returns the i-th oldest event of the ring.
func (c *Cacher) at(i int) *event { return c.ring[(c.head+i)%len(c.ring)] }

// firstAfter is the ring index of the first event after rev (c.n if none).
func (c *Cacher) firstAfter(rev uint64) int {
	lo, hi := 0, c.n
	for lo < hi {
		mid := (lo + hi) / 2
		if c.at(mid).asIs.Object.ResourceVersion <= rev {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// snapshotAt returns the state at exactly rev, when the cache has it: rev
// is not compacted, not before the ring's window, and not after the cache's
// revision. Called with mu held (for reading or writing).
func (c *Cacher) snapshotAt(rev uint64) (*tree, bool) {
	if !c.ready || rev <= c.compacted || rev < c.ringStart || rev > c.rev {
		return nil, false
	}
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	return c.stateAfter(c.firstAfter(rev)), true
}

// latest returns an immutable snapshot of the current state (nil before the
// first list), cloning the tree when no reader has needed one since the
// last change. Called with mu held (for reading or writing).
func (c *Cacher) latest() *tree {
	if snap := c.snap.Load(); snap != nil {
		return snap
	}
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	return c.latestLocked()
}

// latestLocked is latest with snapMu held. Cloning writes only the tree's
// copy-on-write context, which no reader of the tree (Get, Len) looks at.
func (c *Cacher) latestLocked() *tree {
	snap := c.snap.Load()
	if snap == nil && c.tree != nil {
		snap = c.tree.Clone()
		c.snap.Store(snap)
		if c.n > 0 {
			c.at(c.n - 1).snap = snap
		} else {
			c.base = snap
		}
	}
	return snap
}

// stateAfter returns the state after the first i events of the ring (the
// state at ringStart for 0), kept with the i-th event once built: the
// current state with the events after it undone, newest first (each knows
// the state it replaced). Exact and continued lists of a past revision are
// rare, and a page of one asks for the same state as the page before it.
// Called with mu held and snapMu held.
func (c *Cacher) stateAfter(i int) *tree {
	if i == c.n {
		return c.latestLocked()
	}
	slot := &c.base
	if i > 0 {
		slot = &c.at(i - 1).snap
	}
	if *slot == nil {
		t := c.latestLocked().Clone()
		for k := c.n - 1; k >= i; k-- {
			undo(t, c.at(k))
		}
		*slot = t
	}
	return *slot
}

// undo reverts e in t: the state e replaced goes back, or the key goes
// away when e added it.
func undo(t *tree, e *event) {
	if e.asIs.Type != storage.EventAdded && e.asIs.Prev != nil {
		t.ReplaceOrInsert(elemOf(*e.asIs.Prev))
		return
	}
	t.Delete(probe(e.asIs.Object.Key))
}

// lookup returns key's current object and whether the cache has it, and
// whether the cache has loaded its state at all; it takes mu for reading
// (the tree changes only under mu held for writing). ready is the cache's
// readiness as of the same moment, and rev its revision.
func (c *Cacher) lookup(key string) (o storage.Object, found, loaded, ready bool, rev uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.tree == nil {
		return storage.Object{}, false, false, c.ready, c.rev
	}
	if el, ok := c.tree.Get(probe(key)); ok {
		o, found = el.en.obj, true
	}
	return o, found, true, c.ready, c.rev
}

// dispatch hands e to every shard. Called with mu held for writing, so
// events, bookmarks and new watchers reach every shard in one order.
func (c *Cacher) dispatch(e *event) {
	for _, s := range c.shards {
		s.enqueue(item{kind: itemEvent, e: e})
	}
	c.m.dispatched.Inc()
}

// translate returns the event w sees for e, or nil: it applies w's key and
// predicate to the old and new states (the key check is skipped when
// keyMatched). The result is shared: callers copy it.
func (c *Cacher) translate(w *watcher, e *event, keyMatched bool) *storage.Event {
	if !keyMatched && !w.matchesKey(e.asIs.Object.Key) {
		return nil
	}
	switch e.asIs.Type {
	case storage.EventAdded:
		if w.matches(&e.asIs.Object) {
			return &e.asIs
		}
	case storage.EventDeleted:
		old := e.asIs.Prev
		if old == nil {
			old = &e.asIs.Object
		}
		if w.matches(old) {
			return &e.asIs
		}
	case storage.EventModified:
		newM := w.matches(&e.asIs.Object)
		oldM := e.asIs.Prev != nil && w.matches(e.asIs.Prev)
		switch {
		case newM && oldM:
			return &e.asIs
		case newM:
			return e.addedEvent()
		case oldM:
			return c.goneEvent(e)
		}
	}
	return nil
}

// addedEvent returns e's ADDED form for watchers that start matching.
func (e *event) addedEvent() *storage.Event {
	e.mod.addedOnce.Do(func() {
		e.mod.added = &storage.Event{Type: storage.EventAdded, Object: e.asIs.Object, Memo: e.asIs.Memo}
	})
	return e.mod.added
}

// goneEvent returns e's DELETED form for watchers that stop matching, built
// on first use (by whichever shard needs it first).
func (c *Cacher) goneEvent(e *event) *storage.Event {
	e.mod.goneOnce.Do(func() {
		g, err := goneObject(e.asIs.Prev, e.asIs.Object.ResourceVersion)
		if err != nil {
			c.cfg.Logger.Error("watch cache: cannot set the resource version of a stored object",
				zap.String("key", e.asIs.Object.Key), zap.Error(err))
			return
		}
		e.mod.gone = &storage.Event{Type: storage.EventDeleted, Object: g, Prev: e.asIs.Prev, Memo: e.asIs.Memo}
	})
	return e.mod.gone
}

// goneObject is prev with its resource version set to rev.
func goneObject(prev *storage.Object, rev uint64) (storage.Object, error) {
	data, err := backend.SetResourceVersion(prev.Data, rev)
	if err != nil {
		return storage.Object{}, err
	}
	o := *prev
	o.Data = data
	o.ResourceVersion = rev
	o.Meta.ResourceVersion = storage.FormatResourceVersion(rev)
	return o, nil
}

// broadcastBookmark sends a bookmark at rev to every watcher that asked for
// progress or, when scheduled, to those whose next bookmark is due (see
// nextBookmark). One EventMemo serves them all. Called with mu held for
// writing.
func (c *Cacher) broadcastBookmark(rev uint64, scheduled bool) {
	if rev == 0 {
		return
	}
	ev := &storage.Event{Type: storage.EventBookmark, Object: storage.Object{ResourceVersion: rev}, Memo: &storage.EventMemo{}}
	for _, s := range c.shards {
		s.enqueue(item{kind: itemBookmark, ev: ev, scheduled: scheduled})
	}
}

// nextBookmark is when a watcher that got a bookmark (or started) at now
// gets its next one, as Kubernetes' cacheWatcher.nextBookmarkTime: after
// BookmarkInterval, or 2 seconds before its deadline if that is sooner; the
// zero time (never) once that moment has passed.
func (c *Cacher) nextBookmark(now, deadline time.Time) time.Time {
	next := now.Add(c.cfg.BookmarkInterval)
	if !deadline.IsZero() {
		if pre := deadline.Add(-2 * time.Second); pre.Before(next) {
			next = pre
		}
	}
	if next.Before(now) {
		return time.Time{}
	}
	return next
}

// jitter is d plus up to a quarter of it, so that servers started together
// do not tick together.
func jitter(d time.Duration) time.Duration { return d + rand.N(d/4+1) }

// endAll ends every registered watcher with an EventError, once the shards
// have delivered what is queued before. Called with mu held for writing.
func (c *Cacher) endAll(serr *storage.Error, why error) {
	err := fmt.Errorf("%w: %w", why, serr)
	for _, s := range c.shards {
		s.enqueue(item{kind: itemEndAll, err: err})
	}
}

// watcherGone counts a watcher a shard stopped delivering to.
func (c *Cacher) watcherGone() { c.m.watchers.Dec() }

// inPrefix reports whether key (a prefix when recursive) lies in the cached
// prefix.
func (c *Cacher) inPrefix(key string) bool { return strings.HasPrefix(key, c.prefix) }
