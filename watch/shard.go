// This file holds the dispatch shards: the watchers are spread over
// Config.DispatchWorkers shards, each with its own goroutine, its own index
// of watchers and its own queue. Every shard receives every event, bookmark
// and registration change in the one order the cacher produced them (they
// are queued under Cacher.mu), so each watcher sees its events in revision
// order without gaps, and shards never wait for each other.

package watch

import (
	"strings"
	"sync"

	"github.com/annexapi/annex/storage"
)

// itemKind says what a shard's queue item asks the shard to do.
type itemKind uint8

const (
	itemEvent    itemKind = iota // deliver e to the watchers it concerns
	itemBookmark                 // deliver ev to the watchers that asked for progress
	itemAdd                      // start delivering to w
	itemRemove                   // w was stopped: forget it and close its channel
	itemEndAll                   // end every watcher with err
	itemStop                     // the cacher stopped: end the shard's goroutine
)

// item is one entry of a shard's queue.
type item struct {
	kind itemKind
	e    *event
	ev   *storage.Event // the bookmark, shared by every shard
	w    *watcher
	err  error
	// scheduled: the bookmark goes only to the watchers it is due for.
	scheduled bool
}

// shard owns a subset of the watchers. Its goroutine (run) is the only one
// that reads or writes reg, and the only one that sends to a watcher's
// channel outside the watcher's lock (see watcher.deliver).
type shard struct {
	c *Cacher

	mu     sync.Mutex // guards items, events and closed
	items  []item
	events int           // the itemEvents in items
	closed bool          // run has returned: nothing more is processed
	wake   chan struct{} // capacity 1: items is not empty
	taken  *sync.Cond    // on mu: run took the items (waitRoom waits for it)

	// Owned by run.
	reg registry
	cut []*watcher // watchers cut off by the event being dispatched
}

func newShard(c *Cacher) *shard {
	s := &shard{c: c, wake: make(chan struct{}, 1)}
	s.taken = sync.NewCond(&s.mu)
	s.reg.init()
	return s
}

// enqueue appends it to the shard's queue. It reports false when the shard
// has stopped. It never blocks on the shard's goroutine.
func (s *shard) enqueue(it item) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.items = append(s.items, it)
	if it.kind == itemEvent {
		s.events++
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// waitRoom waits until the shard has at most max events queued (besides
// the batch it is dispatching), or has stopped. The upstream loop calls it
// after each event, without Cacher.mu: a fan-out that cannot keep up slows
// the intake instead of queueing without bound.
func (s *shard) waitRoom(max int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.events > max && !s.closed {
		s.taken.Wait()
	}
}

// run processes the queue until an itemStop.
func (s *shard) run() {
	var batch []item
	for {
		<-s.wake
		s.mu.Lock()
		batch, s.items = s.items, batch[:0]
		s.events = 0
		s.taken.Broadcast()
		s.mu.Unlock()
		for i := range batch {
			if !s.handle(&batch[i]) {
				s.close(batch[i+1:])
				return
			}
			batch[i] = item{}
		}
	}
}

// close marks the shard stopped and settles what was queued after the
// itemStop: stopped watchers get their channel closed.
func (s *shard) close(rest []item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.taken.Broadcast()
	for _, it := range append(rest, s.items...) {
		if it.kind == itemRemove {
			it.w.closeStopped()
		}
	}
	s.items = nil
}

// handle processes one item; false means stop.
func (s *shard) handle(it *item) bool {
	c := s.c
	switch it.kind {
	case itemEvent:
		s.dispatch(it.e)
	case itemBookmark:
		now := c.cfg.Clock()
		for _, w := range s.reg.progress {
			if it.scheduled {
				if w.nextBookmark.IsZero() || now.Before(w.nextBookmark) {
					continue
				}
				w.nextBookmark = c.nextBookmark(now, w.deadline)
			}
			w.deliver(it.ev, now, true)
		}
	case itemAdd:
		s.reg.add(it.w)
	case itemRemove:
		if it.w.registered {
			s.reg.remove(it.w)
			c.watcherGone()
		}
		it.w.closeStopped()
	case itemEndAll:
		for _, w := range s.reg.all {
			w.terminate(it.err)
			w.registered = false
			c.watcherGone()
		}
		s.reg.init()
	case itemStop:
		return false
	}
	return true
}

// dispatch delivers e to every watcher of the shard that can match it.
func (s *shard) dispatch(e *event) {
	c := s.c
	now := c.cfg.Clock()
	visit := c.visit.Load()
	offer := func(ws []*watcher, keyMatched bool) {
		for _, w := range ws {
			if visit != nil {
				(*visit)(w)
			}
			if ev := c.translate(w, e, keyMatched); ev != nil && w.deliver(ev, now, false) {
				s.cut = append(s.cut, w)
			}
		}
	}
	key := e.asIs.Object.Key
	offer(s.reg.byKey[key], true)
	for i := len(c.prefix) - 1; i < len(key); i++ {
		if key[i] == '/' {
			offer(s.reg.byPrefix[key[:i+1]], true)
		}
	}
	for field, byValue := range s.reg.byField {
		idx := c.cfg.IndexFields[field]
		nv := idx(&e.asIs.Object)
		offer(byValue[nv], false)
		if e.asIs.Prev != nil {
			if ov := idx(e.asIs.Prev); ov != nv {
				offer(byValue[ov], false)
			}
		}
	}
	for i, w := range s.cut {
		s.reg.remove(w)
		c.m.terminated.Inc()
		c.watcherGone()
		s.cut[i] = nil
	}
	s.cut = s.cut[:0]
}

// registry indexes a shard's watchers. Each watcher sits in exactly one
// bucket: by its exact key (a single-object watch), by one indexed field
// value its predicate requires, or by its prefix. Buckets are slices (cheap
// to walk); a watcher knows its position in each slice it is in, so removal
// is a swap with the last one.
type registry struct {
	byKey    map[string][]*watcher
	byPrefix map[string][]*watcher
	byField  map[string]map[string][]*watcher
	all      []*watcher
	progress []*watcher // those that asked for ProgressNotify
}

func (r *registry) init() {
	r.byKey = map[string][]*watcher{}
	r.byPrefix = map[string][]*watcher{}
	r.byField = map[string]map[string][]*watcher{}
	r.all = nil
	r.progress = nil
}

// slots are a watcher's positions in the registry's slices.
type slots struct{ bucket, all, progress int }

func (r *registry) bucket(w *watcher) (map[string][]*watcher, string) {
	switch {
	case !w.recursive:
		return r.byKey, w.key
	case w.field != "":
		m := r.byField[w.field]
		if m == nil {
			m = map[string][]*watcher{}
			r.byField[w.field] = m
		}
		return m, w.value
	default:
		return r.byPrefix, w.key
	}
}

func (r *registry) add(w *watcher) {
	m, k := r.bucket(w)
	w.slots.bucket = len(m[k])
	m[k] = append(m[k], w)
	w.slots.all = len(r.all)
	r.all = append(r.all, w)
	if w.progress {
		w.slots.progress = len(r.progress)
		r.progress = append(r.progress, w)
	}
	w.registered = true
}

func (r *registry) remove(w *watcher) {
	if !w.registered {
		return
	}
	w.registered = false
	m, k := r.bucket(w)
	if s := removeAt(m[k], w.slots.bucket, func(o *watcher) *int { return &o.slots.bucket }); len(s) > 0 {
		m[k] = s
	} else {
		delete(m, k)
		if w.recursive && w.field != "" && len(m) == 0 {
			delete(r.byField, w.field)
		}
	}
	r.all = removeAt(r.all, w.slots.all, func(o *watcher) *int { return &o.slots.all })
	if w.progress {
		r.progress = removeAt(r.progress, w.slots.progress, func(o *watcher) *int { return &o.slots.progress })
	}
}

// removeAt removes s[i] by moving the last watcher into its place and
// updating that watcher's slot.
func removeAt(s []*watcher, i int, slot func(*watcher) *int) []*watcher {
	last := len(s) - 1
	if i != last {
		s[i] = s[last]
		*slot(s[i]) = i
	}
	s[last] = nil
	return s[:last]
}

// matchesKey reports whether key k is w's key, or under its prefix.
func (w *watcher) matchesKey(k string) bool {
	if w.recursive {
		return strings.HasPrefix(k, w.key)
	}
	return k == w.key
}
