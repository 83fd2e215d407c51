// This file holds the reads served from memory (Get, List, Count), the waits
// that make them consistent, the writes (passed to the store with the cached
// state), and the capability interfaces.

package watch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// waitConsistent waits until the cache has caught up with the store's
// current revision. It reports false (serve from the store) when the store
// cannot tell its revision, the cache is not ready, or the wait timed out.
func (c *Cacher) waitConsistent(ctx context.Context) (bool, error) {
	rr, ok := c.store.(storage.RevisionReader)
	if !ok {
		return false, nil
	}
	cur, err := rr.CurrentRevision(ctx)
	if err != nil {
		return false, err
	}
	ok, err = c.waitFor(ctx, cur, true)
	c.m.consistentRead(err == nil && ok)
	return ok, err
}

// waitRevision waits until the cache has reached rev, for a read or watch
// "not older than rev". A rev beyond the store's revision fails with
// ErrTooLargeResourceVersion; false means serve from the store.
func (c *Cacher) waitRevision(ctx context.Context, rev uint64) (bool, error) {
	c.mu.RLock()
	have, ready := c.rev, c.ready
	c.mu.RUnlock()
	if !ready {
		return false, nil
	}
	if rev <= have {
		return true, nil
	}
	rr, ok := c.store.(storage.RevisionReader)
	if !ok {
		return false, nil
	}
	cur, err := rr.CurrentRevision(ctx)
	if err != nil {
		return false, err
	}
	if rev > cur {
		return false, backend.TooLargeError(rev, cur)
	}
	return c.waitFor(ctx, rev, true)
}

// waitOwnWrites waits for the cache to reflect every write made through the
// cacher, so that a "0" read sees the caller's own writes. Such a write is
// under the prefix, so its event is on its way: no progress request is
// needed and the wait is the time to apply events already in flight. After
// the wait the read is served from memory whatever happened ("0" allows any
// state).
func (c *Cacher) waitOwnWrites(ctx context.Context) {
	if lw := c.lastWrite.Load(); lw != 0 {
		_, _ = c.waitFor(ctx, lw, false)
	}
}

// wrote records the revision of a write made through the cacher.
func (c *Cacher) wrote(o storage.Object, err error) (storage.Object, error) {
	if err == nil && c.inPrefix(o.Key) {
		for {
			lw := c.lastWrite.Load()
			if o.ResourceVersion <= lw || c.lastWrite.CompareAndSwap(lw, o.ResourceVersion) {
				break
			}
		}
	}
	return o, err
}

// waitFor waits up to Config.ConsistentReadWait for the cache to reach rev,
// asking the store for a progress bookmark so an idle prefix catches up too.
func (c *Cacher) waitFor(ctx context.Context, rev uint64, progress bool) (bool, error) {
	c.mu.RLock()
	have, ready := c.rev, c.ready
	c.mu.RUnlock()
	if !ready {
		return false, nil
	}
	if have >= rev {
		return true, nil
	}
	start := c.cfg.Clock()
	defer func() { c.m.readWait.Observe(c.cfg.Clock().Sub(start).Seconds()) }()
	if pr, ok := c.store.(storage.ProgressRequester); ok && progress {
		if err := pr.RequestProgress(ctx); err != nil {
			return false, nil
		}
	}
	timer := time.NewTimer(c.cfg.ConsistentReadWait)
	defer timer.Stop()
	for {
		c.mu.RLock()
		have, ready, ch := c.rev, c.ready, c.revCh
		c.mu.RUnlock()
		switch {
		case !ready:
			return false, nil
		case have >= rev:
			return true, nil
		}
		select {
		case <-ch:
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// tooLargeNow is the error of a watch-list whose start the cache could not
// reach in time: the store's revision is its "current".
func (c *Cacher) tooLargeNow(ctx context.Context) error {
	c.mu.RLock()
	have := c.rev
	c.mu.RUnlock()
	return &storage.Error{Err: storage.ErrTooLargeResourceVersion, ResourceVersion: have,
		Msg: fmt.Sprintf("Timeout: Too large resource version: the watch cache is at %d and did not catch up within %v", have, c.cfg.ConsistentReadWait)}
}

// current returns the latest snapshot and its revision.
func (c *Cacher) current() (*tree, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.latest(), c.rev
}

// Get implements storage.Interface from memory: "" after a consistent wait,
// "0" at once, "N" once the cache has reached N. The store serves it when
// the key is outside the prefix, the cache is not ready, or a wait times out.
func (c *Cacher) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.Object, error) {
	rv, err := backend.ParseGetOptions(key, opts)
	if err != nil {
		return storage.Object{}, err
	}
	if !c.inPrefix(key) || !c.isReady() {
		return c.store.Get(ctx, key, opts)
	}
	var ok bool
	switch {
	case rv.Unset:
		ok, err = c.waitConsistent(ctx)
	case rv.Revision == 0:
		c.waitOwnWrites(ctx)
		ok = true
	default:
		ok, err = c.waitRevision(ctx, rv.Revision)
	}
	if err != nil {
		return storage.Object{}, err
	}
	if !ok {
		return c.store.Get(ctx, key, opts)
	}
	o, found, loaded, _, _ := c.lookup(key)
	if !loaded {
		return c.store.Get(ctx, key, opts)
	}
	if !found {
		return storage.Object{}, &storage.Error{Err: storage.ErrNotFound, Key: key}
	}
	return o, nil
}

// List implements storage.Interface. Latest, "0" and not-older-than lists are
// served from the current state; exact lists and continue tokens from the
// state at their revision, which the ring rebuilds (stateAfter). A
// revision the cache does not hold (before the ring, compacted, or not
// reached within the wait) is served by the store, which also answers
// ErrExpired for compacted ones.
// The options are validated and resolved as every backend does
// (backend.ParseListOptions).
func (c *Cacher) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	req, err := backend.ParseListOptions(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	if !c.inPrefix(req.Prefix) || !c.isReady() {
		return c.store.List(ctx, prefix, opts)
	}
	var ok bool
	switch {
	case req.At != 0:
		ok, err = c.waitRevision(ctx, req.At)
	case req.NotOlder != 0:
		ok, err = c.waitRevision(ctx, req.NotOlder)
	case req.AnyState:
		c.waitOwnWrites(ctx)
		ok = true
	default: // the latest state: "", or an inconsistent continue token
		ok, err = c.waitConsistent(ctx)
	}
	if err != nil {
		return storage.ListResult{}, err
	}
	if !ok {
		return c.store.List(ctx, prefix, opts)
	}
	var snap *tree
	var at uint64
	from := int64(-1) // objects from req.Start to the end of the prefix, when known
	span := int64(-1) // objects under the prefix, when the cache knows it for certain
	c.mu.RLock()
	if req.At != 0 {
		snap, ok = c.snapshotAt(req.At)
		at = req.At
	} else {
		snap, at = c.latest(), c.rev
		ok = snap != nil
	}
	latest := req.At == 0 || req.At == c.rev // the parents' counts are of the latest state
	if ok && req.Predicate == nil {
		from = c.countFrom(snap, latest, req)
	}
	if ok && req.Start == req.Prefix {
		span = c.spanOf(snap, latest, req.Prefix)
	}
	c.mu.RUnlock()
	if !ok {
		return c.store.List(ctx, prefix, opts)
	}
	if opts.Stream && req.Limit == 0 {
		return storage.ListResult{ResourceVersion: at, Each: each(c.cfg.Scans, snap, req.Prefix, req.Start, req.Predicate)}, nil
	}
	return page(c.cfg.Scans, snap, at, req.Prefix, req.Start, req.Limit, req.Predicate, from, span)
}

// each yields the objects of snap under prefix pr from start on that pred
// selects (all when nil): a whole list, never collected. A long walk takes
// turns on the scans' cores, and gives its core up before it hands an
// object to yield (which encodes it and may wait for the client).
func each(scans *Scans, snap *tree, pr, start string, pred storage.Predicate) func(yield func(*storage.Object) bool) {
	return func(yield func(*storage.Object) bool) {
		w := scan{s: scans}
		defer w.pause()
		all := allUnder(snap, pr)
		need := labelNeed(pred)
		ascendFrom(snap, start, func(el elem) bool {
			if !all && !strings.HasPrefix(el.key(), pr) {
				return false
			}
			w.visit()
			if pred != nil && (lacks(el.bits, need) || !pred.Matches(&el.en.obj)) {
				return true
			}
			w.pause()
			return yield(&el.en.obj)
		})
	}
}

// countFrom is how many objects of snap lie from req.Start to the end of
// req.Prefix, when that is known without walking them, or -1: on a first
// page, the size of the whole cache or, for the current snapshot, of a
// namespace (parents); on a next page, what the consistent continue token
// recorded (clamped to the snapshot's size: the token is the client's).
// latest says snap is the current state. Called with mu held for reading.
func (c *Cacher) countFrom(snap *tree, latest bool, req backend.ListRequest) int64 {
	if req.Start == req.Prefix {
		return c.spanOf(snap, latest, req.Prefix)
	}
	if req.Remaining != nil {
		return min(*req.Remaining, int64(snap.Len()))
	}
	return -1
}

// labelNeed is the labels fingerprint every object pred selects has
// (storage.Selection.Need), or 0 when pred does not say.
func labelNeed(pred storage.Predicate) uint64 {
	if s, ok := pred.(storage.Selection); ok {
		return s.Need
	}
	return 0
}

// lacks reports whether an object whose labels have the fingerprint bits
// cannot be selected by a predicate whose matches all have need: bits are
// known (not zero) and miss some of need.
func lacks(bits, need uint64) bool { return bits != 0 && bits&need != need }

// yieldEvery is how many objects a list walks before it takes a turn on
// the scans' cores, and between two looks at the time of its turn (some
// tens of microseconds of work).
const yieldEvery = 1024

// spanOf is how many objects of snap lie under prefix when the cache knows
// it from its own counts (the whole cache, or a namespace of the current
// snapshot, which latest says snap is), or -1. Called with mu held for
// reading.
func (c *Cacher) spanOf(snap *tree, latest bool, prefix string) int64 {
	switch {
	case prefix == c.prefix:
		return int64(snap.Len())
	case latest && parentPrefix(prefix[:len(prefix)-1]) == c.prefix:
		return c.parents[prefix]
	}
	return -1
}

// page reads one page of snap under pr from start. from is the number of
// objects from start to the end of pr when known (a list without a
// predicate), or -1: then, without a predicate, the objects after the page
// are walked to count them (remainingItemCount). span, when not -1, is the
// number of objects under pr, start being pr: the walk then stops after
// them without reading their keys (a selector's scan touches each
// object's labels only).
func page(scans *Scans, snap *tree, rev uint64, pr, start string, limit int64, pred storage.Predicate, from, span int64) (storage.ListResult, error) {
	res := storage.ListResult{ResourceVersion: rev}
	if from > 0 { // the page's size is known: no growing copies of it
		n := from
		if limit > 0 {
			n = min(n, limit)
		}
		res.Items = make([]storage.Object, 0, n)
	}
	more := false
	var remaining int64
	visited := int64(0)
	w := scan{s: scans}
	defer w.pause()
	all := span < 0 && allUnder(snap, pr)
	need := labelNeed(pred)
	ascendFrom(snap, start, func(el elem) bool {
		visited++
		if span >= 0 {
			if visited > span {
				return false
			}
		} else if !all && !strings.HasPrefix(el.key(), pr) {
			return false
		}
		// A long scan (a selector over a large cache) runs in turns on
		// fewer cores than Go has, so that a GET that arrives is read
		// at once (Scans).
		w.visit()
		if lacks(el.bits, need) {
			return true // pred cannot select it: no need to read it
		}
		full := limit > 0 && int64(len(res.Items)) == limit
		switch {
		case !full:
			if pred == nil || pred.Matches(&el.en.obj) {
				res.Items = append(res.Items, el.en.obj)
			}
			return true
		case pred == nil && from >= 0:
			more, remaining = true, max(from-limit, 1)
			return false
		case pred == nil:
			more = true
			remaining++
			return true
		case pred.Matches(&el.en.obj):
			more = true
			return false
		}
		return true
	})
	if more {
		last := res.Items[len(res.Items)-1].Key + "\x00"
		var tok string
		var err error
		if pred == nil {
			tok, err = backend.EncodeContinueRemaining(last, pr, rev, remaining)
			res.RemainingItemCount = &remaining
		} else {
			tok, err = backend.EncodeContinue(last, pr, rev)
		}
		if err != nil {
			return storage.ListResult{}, err
		}
		res.Continue = tok
	}
	return res, nil
}

// Count implements storage.Counter from memory, after a consistent wait;
// otherwise the store counts, if it can.
func (c *Cacher) Count(ctx context.Context, prefix string) (int64, error) {
	pr, err := backend.PrefixRange(prefix)
	if err != nil {
		return 0, err
	}
	if c.inPrefix(pr) && c.isReady() {
		ok, err := c.waitConsistent(ctx)
		if err != nil {
			return 0, err
		}
		if snap, _ := c.current(); ok && snap != nil {
			var n int64
			ascendFrom(snap, pr, func(el elem) bool {
				if !strings.HasPrefix(el.key(), pr) {
					return false
				}
				n++
				return true
			})
			return n, nil
		}
	}
	if cn, ok := c.store.(storage.Counter); ok {
		return cn.Count(ctx, prefix)
	}
	res, err := c.store.List(ctx, prefix, storage.ListOptions{})
	if err != nil {
		return 0, err
	}
	return int64(len(res.Items)), nil
}

// Create implements storage.Interface: the store writes.
func (c *Cacher) Create(ctx context.Context, key string, data []byte) (storage.Object, error) {
	return c.wrote(c.store.Create(ctx, key, data))
}

// Update implements storage.Interface: the store writes, starting from the
// cached state when the caller gave none (a stale one is retried from a fresh
// read by the store).
func (c *Cacher) Update(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.Object, error) {
	if opts.Cached == nil {
		opts.Cached = c.cached(key)
	}
	return c.wrote(c.store.Update(ctx, key, opts, tryUpdate))
}

// Delete implements storage.Interface, like Update.
func (c *Cacher) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.Object, error) {
	if opts.Cached == nil {
		opts.Cached = c.cached(key)
	}
	return c.wrote(c.store.Delete(ctx, key, opts))
}

// cached returns the cached state of key, or nil. It is nil too while the
// cache has not applied every write made through it: a state known to be
// stale would only make the store retry (and call Validate twice).
func (c *Cacher) cached(key string) *storage.Object {
	if !c.inPrefix(key) {
		return nil
	}
	o, found, loaded, ready, rev := c.lookup(key)
	if !loaded || !ready || !found || rev < c.lastWrite.Load() {
		return nil
	}
	return &o
}

// CurrentRevision implements storage.RevisionReader: the store's revision
// when it can tell, else the cache's.
func (c *Cacher) CurrentRevision(ctx context.Context) (uint64, error) {
	if rr, ok := c.store.(storage.RevisionReader); ok {
		return rr.CurrentRevision(ctx)
	}
	_, rev := c.current()
	return rev, nil
}

// MaxObjectSize implements storage.ObjectSizeLimiter: the store's limit
// (writes go through to it), zero when it states none.
func (c *Cacher) MaxObjectSize() int {
	if l, ok := c.store.(storage.ObjectSizeLimiter); ok {
		return l.MaxObjectSize()
	}
	return 0
}

// Compact implements storage.Compactor: the store compacts (when it can),
// and from then on the cache refuses watches and exact reads at or before the
// compacted revision as the store would.
func (c *Cacher) Compact(ctx context.Context, revision uint64) error {
	cp, ok := c.store.(storage.Compactor)
	if !ok {
		return nil
	}
	cur, err := c.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	if err := cp.Compact(ctx, revision); err != nil {
		return err
	}
	// The store never compacts its current revision: it lowers the target
	// to current-1. cur is a lower bound of the current revision then, so
	// this never claims more than the store compacted.
	if cur == 0 {
		return nil
	}
	revision = min(revision, cur-1)
	c.mu.Lock()
	c.compacted = max(c.compacted, revision)
	c.mu.Unlock()
	return nil
}

// RequestProgress implements storage.ProgressRequester: every watcher that
// asked for ProgressNotify gets a bookmark at the store's current revision
// (or later) once the cache has delivered every event up to it.
func (c *Cacher) RequestProgress(ctx context.Context) error {
	cur, err := c.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.rev >= cur {
		c.broadcastBookmark(c.rev, false)
		c.mu.Unlock()
		return nil
	}
	c.pendingProgress = max(c.pendingProgress, cur)
	c.mu.Unlock()
	if pr, ok := c.store.(storage.ProgressRequester); ok {
		return pr.RequestProgress(ctx)
	}
	return nil
}
