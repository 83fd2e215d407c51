// This file holds Watch. Every watcher is a goroutine that reads the event log
// in the file from its own position: writers only signal that a new revision
// was published, so a watcher whose consumer does not read never blocks
// writers or other watchers. It catches up from the log when its consumer
// reads again, and ends with an ErrExpired error event if compaction passed it
// meanwhile.

package bbolt

import (
	"bytes"
	"context"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// hub publishes the committed revision and progress requests to watchers.
type hub struct {
	mu       sync.Mutex
	rev      uint64
	changed  chan struct{} // closed and replaced on each publish
	progress chan struct{} // closed and replaced on each RequestProgress
}

func (h *hub) init(rev uint64) {
	h.rev = rev
	h.changed = make(chan struct{})
	h.progress = make(chan struct{})
}

func (h *hub) publish(rev uint64) {
	h.mu.Lock()
	h.rev = rev
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *hub) requestProgress() {
	h.mu.Lock()
	close(h.progress)
	h.progress = make(chan struct{})
	h.mu.Unlock()
}

// state returns the published revision, the channel closed at the next
// publish, and the channel closed at the next progress request.
func (h *hub) state() (uint64, <-chan struct{}, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev, h.changed, h.progress
}

// Events are read from the log in transactions of at most this many entries,
// and a watcher's channel buffers this many events.
const (
	watchReadBatch = 256
	watchBuffer    = 100
)

type watcher struct {
	s      *Store
	ctx    context.Context
	cancel context.CancelFunc
	out    chan storage.Event

	key       string // the key, or the prefix range when recursive
	recursive bool
	pred      storage.Predicate
	progress  bool

	initial bool   // send the current state first ("" and "0")
	start   uint64 // the revision to start after ("N")
	// state is the initial state (read when Watch is called), at start.
	state []storage.Object

	progressCh <-chan struct{}
}

func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

func (w *watcher) Stop() { w.cancel() }

// Watch implements storage.Interface. See the file comment for how a slow
// consumer is handled.
func (s *Store) Watch(ctx context.Context, key string, opts storage.WatchOptions) (storage.Watcher, error) {
	req, err := backend.ParseWatchOptions(key, opts)
	if err != nil {
		return nil, err
	}
	w := &watcher{s: s, key: req.Key, recursive: req.Recursive, pred: opts.Predicate, progress: opts.ProgressNotify,
		initial: req.Initial, start: req.After}
	_, _, w.progressCh = s.hub.state()
	if s.isClosed() {
		return nil, errClosed()
	}
	if w.initial {
		// The state is the one at the time of the call, not whenever the
		// goroutine gets to run.
		if w.start, w.state, err = w.readState(); err != nil {
			return nil, err
		}
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.out = make(chan storage.Event, watchBuffer)

	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		w.cancel()
		return nil, errClosed()
	}
	s.watchers.Add(1)
	s.closeMu.Unlock()
	go w.run()
	return w, nil
}

func (w *watcher) matchesKey(key []byte) bool {
	if w.recursive {
		return bytes.HasPrefix(key, []byte(w.key))
	}
	return string(key) == w.key
}

// send delivers e unless the watch or the store ends first.
func (w *watcher) send(e storage.Event) bool {
	select {
	case w.out <- e:
		return true
	case <-w.ctx.Done():
		return false
	case <-w.s.quit:
		return false
	}
}

func (w *watcher) fail(err error) {
	select {
	case w.out <- storage.Event{Type: storage.EventError, Err: err}:
	case <-w.ctx.Done():
	case <-w.s.quit:
	}
}

func (w *watcher) run() {
	defer w.s.watchers.Done()
	defer close(w.out)
	defer w.cancel()
	defer func() {
		if w.s.isClosed() && w.ctx.Err() == nil {
			// Best effort: tell a reading consumer why the watch ends.
			select {
			case w.out <- storage.Event{Type: storage.EventError, Err: errClosed()}:
			default:
			}
		}
	}()

	last := w.start
	if w.initial {
		for _, o := range w.state {
			if !w.send(storage.Event{Type: storage.EventAdded, Object: o}) {
				return
			}
		}
		w.state = nil
	} else if err := w.checkStart(); err != nil {
		w.fail(err)
		return
	}

	var tick <-chan time.Time
	if w.progress {
		t := time.NewTicker(w.s.opts.ProgressInterval)
		defer t.Stop()
		tick = t.C
	}
	wantBookmark := false
	for {
		rev, changed, _ := w.s.hub.state()
		if last < rev {
			evs, upTo, err := w.readEvents(last, rev)
			if err != nil {
				w.fail(err)
				return
			}
			for _, e := range evs {
				if !w.send(e) {
					return
				}
			}
			last = upTo
			continue
		}
		if wantBookmark {
			wantBookmark = false
			if !w.send(storage.Event{Type: storage.EventBookmark, Object: storage.Object{ResourceVersion: last}}) {
				return
			}
		}
		select {
		case <-changed:
		case <-w.progressCh:
			_, _, w.progressCh = w.s.hub.state()
			wantBookmark = w.progress
		case <-tick:
			wantBookmark = true
		case <-w.ctx.Done():
			return
		case <-w.s.quit:
			return
		}
	}
}

// checkStart fails a watch from a compacted revision.
func (w *watcher) checkStart() error {
	return w.s.db.View(func(tx *bolt.Tx) error {
		if _, compacted := readMeta(tx); w.start <= compacted && compacted > 0 {
			return backend.ExpiredError(compacted)
		}
		return nil
	})
}

// readState returns the current objects the watch selects and the revision
// they are at, from one transaction.
func (w *watcher) readState() (uint64, []storage.Object, error) {
	var rev uint64
	var objs []storage.Object
	err := w.s.db.View(func(tx *bolt.Tx) error {
		rev, _ = readMeta(tx)
		b, logc := tx.Bucket([]byte(bucketObjects)), tx.Bucket([]byte(bucketEvents)).Cursor()
		add := func(key string, v []byte) error {
			o, err := objectAt(w.s.opts.Transformer, logc, key, getUint64(v))
			if err != nil {
				return err
			}
			if w.pred == nil || w.pred.Matches(&o) {
				objs = append(objs, o)
			}
			return nil
		}
		if !w.recursive {
			if v := b.Get([]byte(w.key)); v != nil {
				return add(w.key, v)
			}
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek([]byte(w.key)); k != nil && bytes.HasPrefix(k, []byte(w.key)); k, v = c.Next() {
			if err := add(string(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	return rev, objs, err
}

// readEvents returns the events for this watch in (last, rev], at most
// watchReadBatch log entries' worth, and the revision read up to.
func (w *watcher) readEvents(last, rev uint64) ([]storage.Event, uint64, error) {
	var evs []storage.Event
	upTo := last
	err := w.s.db.View(func(tx *bolt.Tx) error {
		if _, compacted := readMeta(tx); last < compacted {
			return backend.ExpiredError(compacted)
		}
		logb := tx.Bucket([]byte(bucketEvents))
		c, prevc := logb.Cursor(), logb.Cursor()
		n := 0
		for k, v := c.Seek(revKey(last + 1)); k != nil && n < watchReadBatch; k, v = c.Next() {
			r := getUint64(k)
			if r > rev {
				break
			}
			n++
			upTo = r
			ent, err := decodeEntry(v)
			if err != nil {
				return &storage.Error{Err: storage.ErrInvalidObject, Msg: "event log: " + err.Error()}
			}
			if !w.matchesKey(ent.key) {
				continue
			}
			e, ok, err := w.translate(prevc, r, ent)
			if err != nil {
				return err
			}
			if ok {
				evs = append(evs, e)
			}
		}
		if n == 0 {
			// Nothing logged in (last, rev]: cannot happen unless the log
			// was cut under us; do not spin.
			upTo = rev
		}
		return nil
	})
	return evs, upTo, err
}

// translate turns a log entry into the event this watch sees, applying the
// predicate to the old and new states as Kubernetes does. The previous state
// is read from the log: compaction keeps it while this entry is retained.
func (w *watcher) translate(log *bolt.Cursor, rev uint64, ent entry) (storage.Event, bool, error) {
	key := string(ent.key)
	var prev *storage.Object
	if ent.prevRev != 0 {
		p, err := objectAt(w.s.opts.Transformer, log, key, ent.prevRev)
		if err != nil {
			return storage.Event{}, false, err
		}
		prev = &p
	}
	if ent.kind == entryDelete {
		if prev == nil || (w.pred != nil && !w.pred.Matches(prev)) {
			return storage.Event{}, false, nil
		}
		gone, err := deletedAt(key, prev, rev)
		if err != nil {
			return storage.Event{}, false, err
		}
		return storage.Event{Type: storage.EventDeleted, Object: gone, Prev: prev}, true, nil
	}
	plain, err := fromStorage(w.s.opts.Transformer, key, ent.value)
	if err != nil {
		return storage.Event{}, false, err
	}
	o, err := makeObject(key, rev, plain)
	if err != nil {
		return storage.Event{}, false, err
	}
	newM := w.pred == nil || w.pred.Matches(&o)
	oldM := prev != nil && (w.pred == nil || w.pred.Matches(prev))
	switch {
	case newM && oldM:
		return storage.Event{Type: storage.EventModified, Object: o, Prev: prev}, true, nil
	case newM:
		return storage.Event{Type: storage.EventAdded, Object: o}, true, nil
	case oldM:
		// The object left the selection: DELETED with its previous state
		// at this event's revision.
		gone, err := deletedAt(key, prev, rev)
		if err != nil {
			return storage.Event{}, false, err
		}
		return storage.Event{Type: storage.EventDeleted, Object: gone, Prev: prev}, true, nil
	}
	return storage.Event{}, false, nil
}

// deletedAt is prev with its resource version set to rev: the object of a
// DELETED event at rev.
func deletedAt(key string, prev *storage.Object, rev uint64) (storage.Object, error) {
	start, end, ok := backend.ResourceVersionIndex(prev.Data)
	data, err := withRevision(prev.Data, start, end, ok, rev)
	if err != nil {
		return storage.Object{}, err
	}
	m := prev.Meta
	m.ResourceVersion = storage.FormatResourceVersion(rev)
	return storage.Object{Key: key, ResourceVersion: rev, Data: data, Meta: m}, nil
}
