// This file holds the watchers: how a watch starts (initial events or a
// replay of the ring), how an event reaches a watcher without ever blocking
// its shard, and how a watcher that falls behind is cut off.

package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// queueCounter counts the events queued across all watchers.
type queueCounter struct{ n atomic.Int64 }

// watcher is one watch served from the cache. Its shard sends to its result
// channel without blocking; when the channel is full, events wait in queue
// and a pump goroutine (running only while the queue is not empty) moves
// them to the channel. An idle watcher is thus its struct and a small
// channel, and no goroutine.
//
// The fast path of a delivery takes no lock: while slow is false nobody but
// the shard's goroutine sends to out and nobody closes it, so that goroutine
// tries a non-blocking send and is done. Everything that changes this
// (a pump, Stop, a cut-off) sets slow first, under mu; out is closed only by
// the pump or by the shard's goroutine (see closeStopped).
type watcher struct {
	c         *Cacher
	sh        *shard // nil for a watcher that failed at once
	key       string // the key, or the prefix range when recursive
	recursive bool
	pred      storage.Predicate
	progress  bool
	// field and value: the indexed field the watcher is registered under,
	// when its predicate requires one.
	field, value string
	out          chan storage.Event

	// deadline is the watch context's deadline (zero: none).
	deadline time.Time

	// Owned by the shard's goroutine.
	registered bool
	slots      slots
	// nextBookmark is when the watcher's next scheduled bookmark is due;
	// zero means none (see Cacher.nextBookmark).
	nextBookmark time.Time

	// slow is written under mu and read without it: deliver must take mu
	// (the watcher is behind, stopped or terminated).
	slow atomic.Bool

	mu      sync.Mutex  // guards everything below
	stopCtx func() bool // unregisters the context.AfterFunc
	// queue holds the events not yet in out, in order. limit caps it (the
	// initial events plus Config.WatcherBuffer).
	queue []storage.Event
	limit int
	// starting is how many events at the head of queue are the watch's
	// starting events (its initial state and the changes since it was
	// taken). They are not counted in the dispatch budget, and MaxLag does
	// not run while any is left: a watch-list over many objects is read at
	// the consumer's pace, bounded by limit alone, as kube's cacher sends
	// initial events before it takes live ones. The lag clock starts when
	// the last of them is taken.
	starting    int
	pumping     bool
	done        chan struct{} // closed by Stop; made when a pump first starts
	stopped     bool          // Stop was called
	terminated  bool          // cut off: only the ERROR event is left to deliver
	closed      bool          // out is closed
	behindSince time.Time
}

var _ storage.Watcher = (*watcher)(nil)

func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

// Stop ends the watch: its shard forgets it and its channel is closed
// promptly (once the shard's goroutine reaches the request, which may be
// sending to it right now, or as soon as its pump notices).
func (w *watcher) Stop() {
	w.mu.Lock()
	if w.stopCtx != nil {
		w.stopCtx()
	}
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.syncSlowLocked()
	w.dropQueueLocked()
	if w.pumping {
		close(w.done) // the pump closes out
	}
	w.mu.Unlock()
	if w.sh == nil || !w.sh.enqueue(item{kind: itemRemove, w: w}) {
		w.closeStopped() // no shard goroutine sends any more
	}
}

// closeStopped closes out unless a pump runs (it closes out when it ends).
// Called by the shard's goroutine, or once it has ended.
func (w *watcher) closeStopped() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.pumping && !w.closed {
		w.closed = true
		close(w.out)
	}
}

// syncSlowLocked updates slow from the state. Called with w.mu held.
func (w *watcher) syncSlowLocked() {
	w.slow.Store(w.pumping || len(w.queue) > 0 || w.stopped || w.terminated)
}

func (w *watcher) matches(o *storage.Object) bool { return w.pred == nil || w.pred.Matches(o) }

// deliver hands ev to the watcher without blocking. It reports whether the
// watcher was cut off by this call (it fell too far behind). Bookmarks never
// cut a watcher off; a bookmark behind a queued one replaces it. Called only
// by the watcher's shard goroutine.
func (w *watcher) deliver(ev *storage.Event, now time.Time, bookmark bool) (cut bool) {
	if !w.slow.Load() {
		select {
		case w.out <- *ev:
			return false
		default:
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.terminated {
		return false
	}
	if len(w.queue) == 0 && !w.pumping {
		select {
		case w.out <- *ev:
			return false
		default:
		}
		w.behindSince = now
	}
	if bookmark {
		if n := len(w.queue); n > 0 && w.queue[n-1].Type == storage.EventBookmark && !w.queue[n-1].InitialEventsEnd {
			w.queue[n-1] = *ev
			return false
		}
	} else if len(w.queue) >= w.limit || (w.starting == 0 && now.Sub(w.behindSince) > w.c.cfg.MaxLag) ||
		w.c.queued.n.Load() >= int64(w.c.cfg.DispatchBudget) {
		w.terminateLocked(fmt.Errorf("%w: %w", ErrSlowWatcher, &storage.Error{Err: storage.ErrExpired,
			Msg: fmt.Sprintf("watcher fell behind (%d events queued, behind for %v)", len(w.queue), now.Sub(w.behindSince).Round(time.Millisecond))}))
		return true
	}
	w.enqueueLocked(*ev)
	return false
}

// enqueueLocked queues ev and makes sure a pump runs. Called with w.mu held.
func (w *watcher) enqueueLocked(ev storage.Event) {
	w.queue = append(w.queue, ev)
	w.c.queued.n.Add(1)
	w.startPumpLocked()
}

func (w *watcher) startPumpLocked() {
	if w.pumping || len(w.queue) == 0 {
		return
	}
	if w.done == nil {
		w.done = make(chan struct{})
	}
	w.pumping = true
	w.syncSlowLocked()
	go w.pump()
}

// terminate ends the watcher with an EventError carrying err.
func (w *watcher) terminate(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.terminated {
		return
	}
	w.terminateLocked(err)
}

// terminateLocked drops the queue and leaves only the ERROR event to
// deliver, after which the channel is closed. Called with w.mu held.
func (w *watcher) terminateLocked(err error) {
	w.terminated = true
	w.syncSlowLocked()
	w.dropQueueLocked()
	w.enqueueLocked(storage.Event{Type: storage.EventError, Err: err})
}

// dropQueueLocked empties the queue, taking its live events off the
// dispatch budget. Called with w.mu held.
func (w *watcher) dropQueueLocked() {
	w.c.queued.n.Add(-int64(len(w.queue) - w.starting))
	w.queue = nil
	w.starting = 0
}

// pump moves queued events to out, blocking on the consumer, until the
// queue is empty or the watch is stopped.
func (w *watcher) pump() {
	for {
		w.mu.Lock()
		if w.stopped || len(w.queue) == 0 {
			w.pumping = false
			w.syncSlowLocked()
			if (w.stopped || w.terminated) && !w.closed {
				w.closed = true
				close(w.out)
			}
			w.mu.Unlock()
			return
		}
		ev := w.queue[0]
		w.queue[0] = storage.Event{}
		w.queue = w.queue[1:]
		if len(w.queue) == 0 {
			w.queue = nil
		}
		switch {
		case w.starting == 0:
			w.c.queued.n.Add(-1)
		case w.starting == 1:
			// The last starting event: from now on the watcher is behind
			// only by what it has not taken of the live events.
			w.starting = 0
			w.behindSince = w.c.cfg.Clock()
		default:
			w.starting--
		}
		done := w.done
		w.mu.Unlock()
		select {
		case w.out <- ev:
		case <-done:
		}
	}
}

// Watch implements storage.Interface. Keys outside the cached prefix, and
// every watch while the cache is not ready, are served by the store. See the
// package doc for the resource version rules.
func (c *Cacher) Watch(ctx context.Context, key string, opts storage.WatchOptions) (storage.Watcher, error) {
	wkey := key
	if opts.Recursive {
		pr, err := backend.PrefixRange(key)
		if err != nil {
			return nil, err
		}
		wkey = pr
	} else if err := backend.ValidateKey(key); err != nil {
		return nil, err
	}
	rv, err := backend.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if !c.inPrefix(wkey) {
		return c.store.Watch(ctx, key, opts)
	}
	if !c.isReady() {
		if opts.SendInitialEvents {
			return nil, ErrNotReady
		}
		return c.store.Watch(ctx, key, opts)
	}
	// Make sure the cache has reached the revision the watch starts from.
	switch {
	case rv.Unset:
		ok, err := c.waitConsistent(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			if opts.SendInitialEvents {
				return nil, c.tooLargeNow(ctx)
			}
			return c.store.Watch(ctx, key, opts)
		}
	case rv.Revision == 0:
		c.waitOwnWrites(ctx)
	default:
		ok, err := c.waitRevision(ctx, rv.Revision)
		if err != nil {
			return nil, err
		}
		if !ok {
			if opts.SendInitialEvents {
				return nil, c.tooLargeNow(ctx)
			}
			return c.store.Watch(ctx, key, opts)
		}
	}

	w := &watcher{c: c, key: wkey, recursive: opts.Recursive, pred: opts.Predicate, progress: opts.ProgressNotify,
		out: make(chan storage.Event, resultBuffer)}
	w.deadline, _ = ctx.Deadline()
	w.nextBookmark = c.nextBookmark(c.cfg.Clock(), w.deadline)
	if fm, ok := opts.Predicate.(FieldMatcher); ok && w.recursive {
		for _, f := range c.fields {
			if v, ok := fm.RequiresExactMatch(f); ok {
				w.field, w.value = f, v
				break
			}
		}
	}
	initial := rv.Revision == 0 || opts.SendInitialEvents

	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		if opts.SendInitialEvents {
			return nil, ErrNotReady
		}
		return c.store.Watch(ctx, key, opts)
	}
	var q []storage.Event
	switch {
	case initial:
		var ok bool
		if q, ok = c.startingEvents(w, opts.SendInitialEvents); !ok {
			c.mu.Unlock()
			if opts.SendInitialEvents {
				return nil, ErrNotReady
			}
			return c.store.Watch(ctx, key, opts)
		}
	case rv.Revision <= c.compacted:
		c.mu.Unlock()
		return c.failed(backend.ExpiredError(c.compacted)), nil
	case rv.Revision < c.ringStart:
		c.mu.Unlock()
		return c.failed(&storage.Error{Err: storage.ErrExpired, ResourceVersion: c.ringStart,
			Msg: fmt.Sprintf("too old resource version: %d (%d)", rv.Revision, c.ringStart)}), nil
	default:
		for i := c.firstAfter(rv.Revision); i < c.n; i++ {
			if ev := c.translate(w, c.at(i), false); ev != nil {
				q = append(q, *ev)
			}
		}
	}
	w.limit = len(q) + c.cfg.WatcherBuffer
	// Fill the channel first; the rest waits in the queue for the pump.
	n := min(len(q), resultBuffer)
	for _, ev := range q[:n] {
		w.out <- ev
	}
	if rest := q[n:]; len(rest) > 0 {
		w.mu.Lock()
		w.queue = rest
		w.starting = len(rest)
		w.behindSince = c.cfg.Clock()
		w.startPumpLocked()
		w.mu.Unlock()
	}
	// The shard starts delivering to w after every event up to c.rev (those
	// are in q, or were before its start) and before any later one: both
	// are queued under c.mu.
	w.sh = c.shards[c.nextShard]
	c.nextShard = (c.nextShard + 1) % len(c.shards)
	c.m.watchers.Inc()
	w.sh.enqueue(item{kind: itemAdd, w: w})
	c.mu.Unlock()
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, w.Stop)
		w.mu.Lock()
		w.stopCtx = stop
		w.mu.Unlock()
	}
	return w, nil
}

// snapshotTries is how many times startingEvents builds the initial events
// outside the lock before it builds them under it: a retry is needed only
// when the ring dropped events after the snapshot, or the cache re-listed,
// while they were being built.
const snapshotTries = 3

// startingEvents returns the first events of w, a watch that starts with
// the current state: the state's ADDED events, the initial-events-end
// bookmark when end is set, then the changes after that state. Called with
// mu held for writing, and returns with it held; ok is false when the cache
// is no longer ready.
//
// For a recursive watch it takes the snapshot and its revision under mu and
// releases mu while it walks the snapshot (O(objects); snapshots are
// immutable), so writers and other watchers are not held up. Back under mu,
// the ring's events after that revision follow: together with the shard
// registration queued under the same hold, the watch gets every event once,
// without a gap. When the ring no longer holds them all (it wrapped) or the
// cache re-listed, it starts again from the new snapshot.
func (c *Cacher) startingEvents(w *watcher, end bool) (q []storage.Event, ok bool) {
	for try := 0; w.recursive && try < snapshotTries; try++ {
		snap, rev := c.latest(), c.rev
		c.mu.Unlock()
		q = c.initialEvents(w, snap, q[:0])
		if f := c.building.Load(); f != nil {
			(*f)()
		}
		c.mu.Lock()
		if !c.ready {
			return nil, false
		}
		if i, ok := c.eventsAfter(rev, snap); ok {
			if end {
				q = append(q, endBookmark(rev))
			}
			for ; i < c.n; i++ {
				if ev := c.translate(w, c.at(i), false); ev != nil {
					q = append(q, *ev)
				}
			}
			return q, true
		}
	}
	q = c.initialEvents(w, c.latest(), q[:0])
	if end {
		q = append(q, endBookmark(c.rev))
	}
	return q, true
}

// eventsAfter returns the ring index of the first event after rev, when the
// ring holds every event after rev and snap is still the state at rev (no
// re-list since). Called with mu held.
func (c *Cacher) eventsAfter(rev uint64, snap *tree) (int, bool) {
	if rev < c.ringStart {
		return 0, false
	}
	i := c.firstAfter(rev)
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	at := c.base
	if i > 0 {
		at = c.at(i - 1).snap
	}
	return i, at == snap
}

// endBookmark is the bookmark that ends the initial events of a state at rev.
func endBookmark(rev uint64) storage.Event {
	return storage.Event{Type: storage.EventBookmark, Object: storage.Object{ResourceVersion: max(rev, 1)}, InitialEventsEnd: true}
}

// initialEvents appends the synthetic ADDED events of the objects in snap
// that w selects, in key order. snap is immutable: no lock is needed.
func (c *Cacher) initialEvents(w *watcher, snap *tree, q []storage.Event) []storage.Event {
	add := func(el elem) bool {
		if w.matchesKey(el.key()) && w.matches(&el.en.obj) {
			q = append(q, storage.Event{Type: storage.EventAdded, Object: el.en.obj})
		}
		return true
	}
	if !w.recursive {
		if el, ok := snap.Get(probe(w.key)); ok {
			add(el)
		}
		return q
	}
	ascendFrom(snap, w.key, func(el elem) bool {
		if !strings.HasPrefix(el.key(), w.key) {
			return false
		}
		return add(el)
	})
	return q
}

// failed returns a watcher whose only event is an EventError with err.
func (c *Cacher) failed(err error) storage.Watcher {
	w := &watcher{c: c, out: make(chan storage.Event, 1)}
	w.out <- storage.Event{Type: storage.EventError, Err: err}
	close(w.out)
	w.closed = true
	return w
}
