// This file holds OnDemand: the watch of a computed resource, whose feed
// and watch cache exist only while someone watches. A computed resource is
// served from its program's own state for get and list; only a watch needs
// its changes numbered and cached, and feeding every change of tens of
// thousands of objects to a cache that nobody reads costs as much CPU as
// computing them, and a copy of every object in memory.

package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
)

// DefaultLinger is OnDemandConfig.Linger's zero value.
const DefaultLinger = 30 * time.Second

// DefaultSyncWait is OnDemandConfig.SyncWait's zero value.
const DefaultSyncWait = 10 * time.Second

// OnDemandConfig configures an OnDemand. Resource and Source are required;
// every other zero field means its default.
type OnDemandConfig struct {
	// Group and Resource (the plural) name the computed resource: the
	// feed's keys are storage.ObjectKey(Group, Resource, namespace, name).
	Group, Resource string
	// Source feeds a session's Feed until ctx ends: it puts every object
	// that exists, calls feed.Synced, then puts and removes the changes
	// (rest.EventSource's Run). An error ends the session (its watchers get
	// an ERROR event and re-watch, which starts another); nil before ctx
	// ends means nothing changes any more. Each session calls it anew.
	Source func(ctx context.Context, feed *Feed) error
	// Cache configures each session's Cacher. Prefix empty means
	// storage.ResourcePrefix(Group, Resource, "").
	Cache Config
	// Linger is how long a session outlives its last watcher, so that a
	// client that re-watches (after its watch's timeout, or a dropped
	// connection) finds the cache warm and its resourceVersion still
	// served. Zero means DefaultLinger (30 seconds); negative means a
	// session, once started, lasts until Start returns.
	Linger time.Duration
	// SyncWait bounds how long a session waits for the Source's
	// feed.Synced before it serves the objects put so far (and logs that
	// the Source never said it had put them all). Zero means
	// DefaultSyncWait (10 seconds).
	SyncWait time.Duration
}

// OnDemand serves the watch of a computed resource with a watch cache that
// exists only while it is used. The first watch starts a session: the
// Source is run into a new Feed, which it primes with the current objects
// (recording no events), then a Cacher lists the feed and serves that
// watch and every other one; the watch waits for this (its context bounds
// the wait). When the last watcher has stopped and Linger has passed, the
// session ends: the Source's context is cancelled, and the feed and cache
// are dropped with every copy of the objects they held. Meanwhile nothing
// is spent per object.
//
// Resource versions continue across sessions: a session's feed numbers
// its priming after the last revision of the session before, so a watch
// from a resourceVersion the current session did not serve (one before its
// priming) is answered 410 Expired, as Kubernetes answers a watch from a
// revision its cache no longer holds; the client re-lists. A watch from ""
// or "0" gets the objects as ADDED events, and a watch-list its bookmark,
// from the primed state.
//
// OnDemand implements the Watch of storage.Interface, storage.RevisionReader
// and SendsInitialEvents (what package rest asks of a computed resource's
// WatchStorage). Every Watcher it returns must be stopped: a session lasts
// while one is not. Safe for concurrent use.
type OnDemand struct {
	cfg OnDemandConfig // with defaults
	log *zap.Logger

	// base is the parent of the sessions' contexts; Start's end cancels
	// it.
	base       context.Context
	cancelBase context.CancelFunc

	mu sync.Mutex // guards the fields below
	// started and stopped: Start was called, and has ended.
	started, stopped bool
	// rev is the last revision of the sessions that ended: the next
	// session's revisions follow it.
	rev uint64
	cur *session // the current session, or nil
	// sessions counts the sessions started, for tests.
	sessions int
}

// session is one life of the feed and its cache.
type session struct {
	feed   *Feed
	cache  *Cacher
	cancel context.CancelFunc
	// ready is closed when the cache has loaded the primed feed, or err is
	// set (before ready is closed).
	ready chan struct{}
	err   error
	// done is closed when the Source and the cache have returned.
	done chan struct{}

	// Guarded by OnDemand.mu.
	users  int         // watchers not stopped, and watches waiting for ready
	linger *time.Timer // ends the session; set while users is 0
}

var _ storage.RevisionReader = (*OnDemand)(nil)

// NewOnDemand returns an OnDemand. It serves watches until Start has
// returned (a watch that comes before Start runs is served: Start's end
// stops its session).
func NewOnDemand(cfg OnDemandConfig) (*OnDemand, error) {
	if cfg.Resource == "" {
		return nil, errors.New("watch: OnDemandConfig.Resource is required")
	}
	if cfg.Source == nil {
		return nil, errors.New("watch: OnDemandConfig.Source is required")
	}
	if cfg.Cache.Prefix == "" {
		cfg.Cache.Prefix = storage.ResourcePrefix(cfg.Group, cfg.Resource, "")
	}
	cc, err := cfg.Cache.withDefaults() // checked now rather than at the first watch
	if err != nil {
		return nil, err
	}
	if cfg.Linger == 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.SyncWait <= 0 {
		cfg.SyncWait = DefaultSyncWait
	}
	base, cancel := context.WithCancel(context.Background())
	return &OnDemand{cfg: cfg, log: cc.Logger, base: base, cancelBase: cancel}, nil
}

// Start waits until ctx is done; it then ends the current session, waits
// for its Source and cache to return, and returns nil. Later watches fail
// with ErrNotReady. Start may be called once.
func (o *OnDemand) Start(ctx context.Context) error {
	o.mu.Lock()
	if o.started {
		o.mu.Unlock()
		return errors.New("watch: OnDemand.Start called twice")
	}
	o.started = true
	o.mu.Unlock()
	<-ctx.Done()
	o.mu.Lock()
	o.stopped = true
	o.cancelBase()
	s := o.cur
	if s != nil {
		o.endLocked(s)
	}
	o.mu.Unlock()
	if s != nil {
		<-s.done
	}
	return nil
}

// Watch starts a session if none runs, waits for its cache to be ready,
// and watches it (see Cacher.Watch for the resource version rules). Once
// Start has returned, it fails with ErrNotReady.
func (o *OnDemand) Watch(ctx context.Context, key string, opts storage.WatchOptions) (storage.Watcher, error) {
	s, err := o.acquire()
	if err != nil {
		return nil, err
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		o.release(s)
		return nil, ctx.Err()
	}
	if s.err != nil {
		o.release(s)
		return nil, s.err
	}
	w, err := s.cache.Watch(ctx, key, opts)
	if err != nil {
		o.release(s)
		return nil, err
	}
	return &onDemandWatcher{Watcher: w, release: sync.OnceFunc(func() { o.release(s) })}, nil
}

// CurrentRevision is the revision of the last change: the current
// session's, or the last one's when none runs.
func (o *OnDemand) CurrentRevision(ctx context.Context) (uint64, error) {
	o.mu.Lock()
	s, rev := o.cur, o.rev
	o.mu.Unlock()
	if s != nil {
		return s.feed.CurrentRevision(ctx)
	}
	return rev, nil
}

// SendsInitialEvents reports that watch-lists are served (by the cache).
func (o *OnDemand) SendsInitialEvents() bool { return true }

// onDemandWatcher is a session's watcher; Stop lets the session end.
type onDemandWatcher struct {
	storage.Watcher
	release func()
}

func (w *onDemandWatcher) Stop() {
	w.Watcher.Stop()
	w.release()
}

// acquire counts a user of the current session, starting one if none runs.
func (o *OnDemand) acquire() (*session, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return nil, ErrNotReady
	}
	if o.cur == nil {
		s, err := o.startLocked()
		if err != nil {
			return nil, err
		}
		o.cur = s
	}
	s := o.cur
	s.users++
	if s.linger != nil {
		s.linger.Stop()
		s.linger = nil
	}
	return s, nil
}

// release uncounts a user of s; the last one sets the linger timer.
func (o *OnDemand) release(s *session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s.users--
	if s.users > 0 || o.cur != s || o.cfg.Linger < 0 {
		return
	}
	s.linger = time.AfterFunc(o.cfg.Linger, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.cur == s && s.users == 0 {
			o.endLocked(s)
		}
	})
}

// startLocked starts a session: its Source priming a new feed, then its
// cache. Called with o.mu held.
func (o *OnDemand) startLocked() (*session, error) {
	feed := newQuietFeed(o.cfg.Group, o.cfg.Resource, o.rev)
	cache, err := New(feed, o.cfg.Cache)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(o.base)
	s := &session{feed: feed, cache: cache, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
	o.sessions++
	o.log.Debug("watch session starts", zap.String("resource", o.cfg.Cache.Prefix), zap.Uint64("after", o.rev))
	go o.runSession(ctx, s)
	return s, nil
}

// endLocked ends s: the Source and the cache stop, the feed takes no more
// changes, and the next session's revisions follow its last. Called with
// o.mu held.
func (o *OnDemand) endLocked(s *session) {
	if o.cur == s {
		o.cur = nil
	}
	if s.linger != nil {
		s.linger.Stop()
		s.linger = nil
	}
	s.cancel()
	o.rev = max(o.rev, s.feed.close())
	o.log.Debug("watch session ends", zap.String("resource", o.cfg.Cache.Prefix), zap.Uint64("at", o.rev))
}

// runSession runs s's Source, then its cache once the Source has primed
// the feed, until s's context ends or the Source fails.
func (o *OnDemand) runSession(ctx context.Context, s *session) {
	defer close(s.done)
	srcDone := make(chan error, 1)
	go func() { srcDone <- o.cfg.Source(ctx, s.feed) }()
	fail := func(err error) {
		s.err = err
		close(s.ready)
		o.mu.Lock()
		o.endLocked(s)
		o.mu.Unlock()
	}

	// Wait for the priming.
	wait := time.NewTimer(o.cfg.SyncWait)
	select {
	case <-s.feed.synced:
	case err := <-srcDone:
		srcDone <- err // seen again below
		if err != nil && ctx.Err() == nil {
			o.log.Error("the event source failed", zap.String("resource", o.cfg.Cache.Prefix), zap.Error(err))
			fail(fmt.Errorf("%w: the event source failed: %w", ErrNotReady, err))
			<-srcDone
			return
		}
		s.feed.Synced() // it put all it will
	case <-wait.C:
		o.log.Warn("the event source did not call Synced; watches start from the objects it has put",
			zap.String("resource", o.cfg.Cache.Prefix), zap.Duration("waited", o.cfg.SyncWait))
		s.feed.Synced()
	case <-ctx.Done():
	}
	wait.Stop()
	if ctx.Err() != nil {
		fail(ErrNotReady)
		<-srcDone
		return
	}

	cacheDone := make(chan struct{})
	go func() {
		defer close(cacheDone)
		_ = s.cache.Start(ctx) // returns nil when ctx ends
	}()
	if err := s.cache.waitReady(ctx); err != nil {
		fail(ErrNotReady)
	} else {
		close(s.ready)
	}
	select {
	case err := <-srcDone:
		if err != nil && ctx.Err() == nil {
			o.log.Error("the event source failed; its watchers are ended", zap.String("resource", o.cfg.Cache.Prefix), zap.Error(err))
			o.mu.Lock()
			o.endLocked(s)
			o.mu.Unlock()
		}
		<-ctx.Done()
	case <-ctx.Done():
		<-srcDone
	}
	<-cacheDone
	// The sessions' caches share their gauges: zero them only when no
	// later session has started (one that starts after this check sets
	// them when it loads).
	o.mu.Lock()
	if o.cur == nil {
		s.cache.m.objects.Set(0)
		s.cache.m.stored.Set(0)
	}
	o.mu.Unlock()
}

// waitReady waits until the cache has loaded its list, or ctx ends.
func (c *Cacher) waitReady(ctx context.Context) error {
	for {
		c.mu.RLock()
		ready, ch := c.ready, c.revCh
		c.mu.RUnlock()
		if ready {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
