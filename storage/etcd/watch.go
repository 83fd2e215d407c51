// This file holds Watch and RequestProgress: an etcd watch with prev_kv per
// annex watch, its events translated through the predicate as Kubernetes
// does, progress notifications turned into bookmarks.

package etcd

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// watchBuffer is the capacity of a watcher's channel.
const watchBuffer = 100

type watcher struct {
	s      *Store
	ctx    context.Context
	cancel context.CancelFunc
	out    chan storage.Event

	key       string // the storage key, or the prefix range when recursive
	recursive bool
	pred      storage.Predicate
	progress  bool

	initial []storage.Object // the synthetic ADDED events ("" and "0")
	// skipTo drops the events at and before it: a watch from N asks etcd
	// for the events from N (see the package doc on compaction).
	skipTo int64
	// from is the revision the etcd watch was asked from, retried once
	// from from+1 when kine refuses it (see run).
	from    int64
	retried bool
	wch     clientv3.WatchChan
}

func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

func (w *watcher) Stop() { w.cancel() }

// Watch implements storage.Interface.
func (s *Store) Watch(ctx context.Context, key string, opts storage.WatchOptions) (storage.Watcher, error) {
	req, err := backend.ParseWatchOptions(key, opts)
	if err != nil {
		return nil, err
	}
	w := &watcher{s: s, key: req.Key, recursive: req.Recursive, pred: opts.Predicate, progress: opts.ProgressNotify}
	if s.closed.Load() {
		return nil, errClosed()
	}
	var from int64
	if req.Initial {
		// The state at the time of the call, then the changes after it.
		var rev uint64
		if rev, w.initial, err = w.readState(ctx); err != nil {
			return nil, err
		}
		from, w.skipTo = int64(rev)+1, int64(rev)
	} else {
		from, w.skipTo = int64(req.After), int64(req.After)
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.from = from
	w.wch = w.etcdWatch(from)
	w.out = make(chan storage.Event, watchBuffer)
	go w.run()
	return w, nil
}

// etcdWatch starts the etcd watch of w from revision from.
func (w *watcher) etcdWatch(from int64) clientv3.WatchChan {
	ops := []clientv3.OpOption{clientv3.WithRev(from), clientv3.WithPrevKV()}
	if w.recursive {
		ops = append(ops, clientv3.WithPrefix())
	}
	if w.progress {
		ops = append(ops, clientv3.WithProgressNotify())
	}
	// All watches share the client's default stream (no per-watch
	// metadata): RequestProgress reaches every one of them.
	return w.s.client.Watch(w.ctx, w.s.etcdKey(w.key), ops...)
}

// readState returns the objects the watch selects and the revision they
// are at, from one linearizable read.
func (w *watcher) readState(ctx context.Context) (uint64, []storage.Object, error) {
	var ops []clientv3.OpOption
	if w.recursive {
		ops = append(ops, clientv3.WithPrefix())
	}
	resp, err := w.s.client.Get(ctx, w.s.etcdKey(w.key), ops...)
	if err != nil {
		return 0, nil, w.s.mapError(ctx, err, w.key)
	}
	var objs []storage.Object
	for _, kv := range resp.Kvs {
		o, err := w.s.decode(ctx, w.s.storageKey(kv.Key), kv.Value, kv.ModRevision)
		if err != nil {
			return 0, nil, err
		}
		if w.pred == nil || w.pred.Matches(&o) {
			objs = append(objs, o)
		}
	}
	return uint64(resp.Header.Revision), objs, nil
}

func (w *watcher) send(e storage.Event) bool {
	select {
	case w.out <- e:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// fail sends an error event, unless the consumer is gone.
func (w *watcher) fail(err error) {
	select {
	case w.out <- storage.Event{Type: storage.EventError, Err: err}:
	case <-w.ctx.Done():
	}
}

func (w *watcher) run() {
	defer close(w.out)
	defer w.cancel()
	for _, o := range w.initial {
		if !w.send(storage.Event{Type: storage.EventAdded, Object: o}) {
			return
		}
	}
	w.initial = nil
	for {
		var resp clientv3.WatchResponse
		var ok bool
		select {
		case resp, ok = <-w.wch:
		case <-w.ctx.Done():
			return
		case <-w.s.quit:
			w.fail(errClosed())
			return
		}
		if !ok {
			if w.ctx.Err() == nil {
				w.fail(errClosed())
			}
			return
		}
		if resp.CompactRevision != 0 && resp.CompactRevision == w.from && w.from == w.skipTo && !w.retried {
			// A watch from N asks for the events from N and drops N's (see
			// the package doc). etcd keeps its compact revision's events
			// (a watch from it works); kine's compaction drops their
			// previous values and refuses a watch from it. N's events are
			// dropped anyway: ask again from N+1, which loses nothing.
			// Only kine gets here: etcd never refuses a watch from its
			// compact revision.
			w.retried = true
			w.wch = w.etcdWatch(w.from + 1)
			continue
		}
		if resp.CompactRevision != 0 {
			c := uint64(resp.CompactRevision - 1)
			w.fail(&storage.Error{Err: storage.ErrExpired, ResourceVersion: c,
				Msg: "required revision has been compacted"})
			return
		}
		if err := resp.Err(); err != nil {
			if w.ctx.Err() != nil {
				return
			}
			w.fail(w.s.mapError(w.ctx, err, w.key))
			return
		}
		if resp.IsProgressNotify() {
			w.s.progressSeen(resp.Header.Revision)
			if w.progress && resp.Header.Revision > w.skipTo {
				if !w.send(storage.Event{Type: storage.EventBookmark, Object: storage.Object{ResourceVersion: uint64(resp.Header.Revision)}}) {
					return
				}
			}
			continue
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision <= w.skipTo {
				continue
			}
			e, ok, err := w.translate(ev)
			if err != nil {
				w.fail(err)
				return
			}
			if ok && !w.send(e) {
				return
			}
		}
	}
}

// translate turns an etcd event into the event this watch sees, applying the
// predicate to the old and new states as Kubernetes does.
func (w *watcher) translate(ev *clientv3.Event) (storage.Event, bool, error) {
	key := w.s.storageKey(ev.Kv.Key)
	var prev *storage.Object
	if ev.PrevKv != nil && ev.PrevKv.ModRevision != 0 {
		p, err := w.s.decode(w.ctx, key, ev.PrevKv.Value, ev.PrevKv.ModRevision)
		if err != nil {
			return storage.Event{}, false, err
		}
		prev = &p
	}
	rev := uint64(ev.Kv.ModRevision)
	if ev.Type == mvccpb.DELETE {
		if prev == nil {
			// etcd keeps the previous value while the event is retained.
			return storage.Event{}, false, &storage.Error{Err: storage.ErrExpired, Key: key,
				Msg: "etcd delete event without its previous value"}
		}
		if w.pred != nil && !w.pred.Matches(prev) {
			return storage.Event{}, false, nil
		}
		gone, err := deletedAt(key, prev, rev)
		return storage.Event{Type: storage.EventDeleted, Object: gone, Prev: prev}, err == nil, err
	}
	o, err := w.s.decode(w.ctx, key, ev.Kv.Value, ev.Kv.ModRevision)
	if err != nil {
		return storage.Event{}, false, err
	}
	if prev == nil && ev.Kv.CreateRevision != ev.Kv.ModRevision {
		// An update whose previous value etcd no longer has.
		return storage.Event{}, false, &storage.Error{Err: storage.ErrExpired, Key: key,
			Msg: "etcd update event without its previous value"}
	}
	newM := w.pred == nil || w.pred.Matches(&o)
	oldM := prev != nil && (w.pred == nil || w.pred.Matches(prev))
	switch {
	case newM && oldM:
		return storage.Event{Type: storage.EventModified, Object: o, Prev: prev}, true, nil
	case newM:
		return storage.Event{Type: storage.EventAdded, Object: o}, true, nil
	case oldM:
		gone, err := deletedAt(key, prev, rev)
		return storage.Event{Type: storage.EventDeleted, Object: gone, Prev: prev}, err == nil, err
	}
	return storage.Event{}, false, nil
}

// deletedAt is prev with its resource version set to rev: the object of a
// DELETED event at rev.
func deletedAt(key string, prev *storage.Object, rev uint64) (storage.Object, error) {
	start, end, ok := backend.ResourceVersionIndex(prev.Data)
	data, err := backend.SpliceResourceVersionAt(prev.Data, start, end, ok, rev)
	if err != nil {
		return storage.Object{}, withKey(err, key)
	}
	m := prev.Meta
	m.ResourceVersion = storage.FormatResourceVersion(rev)
	return storage.Object{Key: key, ResourceVersion: rev, Data: data, Meta: m}, nil
}

// RequestProgress implements storage.ProgressRequester: etcd sends a
// progress notification, once every watch of the shared stream has caught
// up, to each of them; watchers that asked for ProgressNotify turn it into a
// bookmark.
//
// etcd defers a progress request that arrives while a watch of the stream is
// still catching up (unsynced), and may then never answer it. So, as
// kube-apiserver's progress requester does, the request is sent again every
// progressRetry until a notification at or after the revision current at
// the call arrives (or progressGiveUp passes).
func (s *Store) RequestProgress(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed()
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	s.progress.mu.Lock()
	s.progress.target = max(s.progress.target, int64(cur))
	start := !s.progress.running
	s.progress.running = true
	s.progress.mu.Unlock()
	if start {
		go s.progressLoop()
	}
	if err := s.client.RequestProgress(ctx); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return s.mapError(ctx, err, "")
	}
	return nil
}

const (
	progressRetry  = 100 * time.Millisecond
	progressGiveUp = 10 * time.Second
)

// progressState tracks the outstanding progress requests.
type progressState struct {
	mu      sync.Mutex
	target  int64 // the revision a notification must reach
	seen    int64 // the highest revision a notification carried
	running bool  // progressLoop is running
}

// progressSeen records a progress notification at rev.
func (s *Store) progressSeen(rev int64) {
	s.progress.mu.Lock()
	s.progress.seen = max(s.progress.seen, rev)
	s.progress.mu.Unlock()
}

// progressLoop re-sends the progress request until it is answered.
func (s *Store) progressLoop() {
	t := time.NewTicker(progressRetry)
	defer t.Stop()
	giveUp := time.NewTimer(progressGiveUp)
	defer giveUp.Stop()
	stop := func() {
		s.progress.mu.Lock()
		s.progress.running = false
		s.progress.mu.Unlock()
	}
	for {
		select {
		case <-s.quit:
			stop()
			return
		case <-giveUp.C:
			stop()
			return
		case <-t.C:
		}
		s.progress.mu.Lock()
		if s.progress.seen >= s.progress.target {
			// Decided under the lock RequestProgress takes: a request
			// after this starts a new loop.
			s.progress.running = false
			s.progress.mu.Unlock()
			return
		}
		s.progress.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), progressRetry)
		_ = s.client.RequestProgress(ctx)
		cancel()
	}
}
