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

func (w *watcher) run() {
	defer w.s.watchers.Done()
	defer w.cancel()
	l := &backend.WatchLoop{
		Ctx:              w.ctx,
		Quit:             w.s.quit,
		Out:              w.out,
		Closed:           w.s.isClosed,
		State:            w.s.hub.state,
		Read:             w.readEvents,
		ProgressNotify:   w.progress,
		ProgressInterval: w.s.opts.ProgressInterval,
	}
	var start func() error
	if !w.initial {
		start = w.checkStart
	}
	state := w.state
	w.state = nil
	l.Run(w.start, state, start, w.progressCh)
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

// translate turns a log entry into the event this watch sees (see
// backend.WatchEvent). The previous state is read from the log: compaction
// keeps it while this entry is retained.
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
		return backend.WatchEvent(w.pred, key, rev, nil, prev)
	}
	plain, err := fromStorage(w.s.opts.Transformer, key, ent.value)
	if err != nil {
		return storage.Event{}, false, err
	}
	o, err := makeObject(key, rev, plain)
	if err != nil {
		return storage.Event{}, false, err
	}
	return backend.WatchEvent(w.pred, key, rev, &o, prev)
}
