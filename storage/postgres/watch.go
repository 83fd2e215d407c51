// This file holds Watch and the feed behind it. One goroutine per store
// LISTENs on the store's channel and, woken by a notification (or every
// PollInterval, or by RequestProgress), reads the log after the last
// revision it has, in order, into a ring of recent decoded events. A
// notification is only a wake-up: it may be dropped or coalesced, the log is
// what is read, so nothing committed is missed. Every watcher is a goroutine
// with its own position: it reads the ring, or the log table when it is
// behind the ring (a slow consumer, a watch from an old revision), so a
// consumer that does not read blocks nobody, and catches up when it reads
// again (ErrExpired if compaction passed it meanwhile).

package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// entry is one write of the log, decoded once for every watcher.
type entry struct {
	rev     uint64
	key     string
	deleted bool
	obj     storage.Object  // the new state (unset for a deletion)
	prev    *storage.Object // the previous state; nil after a create
	err     error           // the value could not be decoded
}

// feed is the store's read position in the log and the ring of recent
// entries; it publishes to watchers as bbolt's hub does.
type feed struct {
	mu       sync.Mutex
	rev      uint64  // the last revision read
	ring     []entry // the entries (rev-len(ring), rev], oldest first
	size     int
	changed  chan struct{} // closed and replaced when rev advances
	progress chan struct{} // closed and replaced once a progress request is served

	wake         chan struct{} // asks the feed goroutine to read now
	wantProgress bool          // a progress request waits for the next read
}

func (f *feed) init(rev uint64, size int) {
	f.rev, f.size = rev, size
	f.changed = make(chan struct{})
	f.progress = make(chan struct{})
	f.wake = make(chan struct{}, 1)
}

// state returns the last revision read, the channel closed when it
// advances, and the channel closed at the next progress notification.
func (f *feed) state() (uint64, <-chan struct{}, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev, f.changed, f.progress
}

// since returns up to n entries after rev from the ring; false when the
// ring no longer (or does not yet) hold the one after rev.
func (f *feed) since(rev uint64, n int) ([]entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := f.rev - uint64(len(f.ring)) // the ring holds (first, f.rev]
	if rev < first || rev > f.rev {
		return nil, false
	}
	i := int(rev - first)
	j := min(i+n, len(f.ring))
	return f.ring[i:j:j], true
}

// append adds entries that follow f.rev and publishes them.
func (f *feed) append(es []entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ring = append(f.ring, es...)
	if over := len(f.ring) - f.size; over > 0 {
		// Copy into a fresh slice: watchers may hold the old one.
		f.ring = append([]entry(nil), f.ring[over:]...)
	}
	f.rev = es[len(es)-1].rev
	close(f.changed)
	f.changed = make(chan struct{})
}

// skip moves the feed past a gap it cannot read (the log was compacted
// beyond it): watchers behind rev read the table, which answers ErrExpired.
func (f *feed) skip(rev uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ring, f.rev = nil, rev
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *feed) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// RequestProgress implements storage.ProgressRequester: the feed reads the
// log (everything committed before the call), then every watcher that
// asked for ProgressNotify gets a bookmark once it has sent all of it.
func (s *Store) RequestProgress(ctx context.Context) error {
	if s.isClosed() {
		return errClosed()
	}
	s.feed.mu.Lock()
	s.feed.wantProgress = true
	s.feed.mu.Unlock()
	s.feed.poke()
	return nil
}

// logBatch is how many log rows one read takes.
const logBatch = 512

// runFeed is the feed goroutine: listen, read, repeat until Close.
func (s *Store) runFeed() {
	defer s.running.Done()
	notified := make(chan struct{}, 1)
	listening := make(chan struct{}) // closed when the listener ends
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.quit
		cancel()
	}()
	startListener := func() {
		listening = make(chan struct{})
		go s.listen(ctx, notified, listening)
	}
	startListener()
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	for {
		s.feed.mu.Lock()
		progress := s.feed.wantProgress
		s.feed.wantProgress = false
		s.feed.mu.Unlock()
		if err := s.readFeed(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logger.Warn("postgres: reading the log for watches failed; retrying", zap.Error(err))
			if progress {
				s.feed.mu.Lock()
				s.feed.wantProgress = true
				s.feed.mu.Unlock()
			}
			progress = false
		}
		if progress {
			s.feed.mu.Lock()
			close(s.feed.progress)
			s.feed.progress = make(chan struct{})
			s.feed.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-notified:
		case <-s.feed.wake:
		case <-tick.C:
		case <-listening:
			// The connection that listened is gone: listen again (after
			// a pause), and read what was committed meanwhile.
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			startListener()
		}
	}
}

// listen holds one connection that LISTENs on the store's channel and
// signals notified for each notification, until ctx ends or the connection
// fails; it closes done then.
func (s *Store) listen(ctx context.Context, notified chan<- struct{}, done chan<- struct{}) {
	defer close(done)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return
	}
	// A connection that LISTENs is not given back to the pool.
	defer func() { _ = conn.Hijack().Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.sql.channel}.Sanitize()); err != nil {
		return
	}
	// Anything committed before LISTEN took effect is read now.
	select {
	case notified <- struct{}{}:
	default:
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return
		}
		// The payload is the last revision of the transaction: a write of
		// this store was read already (the committer wakes the feed).
		if r, err := strconv.ParseUint(n.Payload, 10, 64); err == nil {
			if read, _, _ := s.feed.state(); r <= read {
				continue
			}
		}
		select {
		case notified <- struct{}{}:
		default: // one wake-up is pending already: coalesce
		}
	}
}

// readFeed reads the log after the feed's revision until it has all of it.
func (s *Store) readFeed(ctx context.Context) error {
	for {
		rev, _, _ := s.feed.state()
		es, compacted, err := s.readLog(ctx, rev, logBatch)
		if err != nil {
			return err
		}
		if compacted > rev {
			// The feed fell behind compaction (the database was out of
			// reach for long): its watchers expire as they read on.
			s.feed.skip(compacted)
			continue
		}
		if len(es) == 0 {
			return nil
		}
		s.feed.append(es)
		if len(es) < logBatch {
			return nil
		}
	}
}

// readLog reads up to n log entries after rev, in one snapshot with the
// compacted revision. Entries stop before a gap (there is none while rev is
// at or after the compacted revision: writers commit in revision order).
func (s *Store) readLog(ctx context.Context, rev uint64, n int) ([]entry, uint64, error) {
	var es []entry
	var compacted uint64
	err := s.retryRead(ctx, func() error {
		es = nil
		return s.readLogOnce(ctx, rev, n, &es, &compacted)
	})
	if err != nil {
		return nil, 0, s.dbError(err)
	}
	return es, compacted, nil
}

// readLogOnce is one attempt of readLog: one round trip, a read-only
// snapshot that reads the revisions and the log.
func (s *Store) readLogOnce(ctx context.Context, rev uint64, n int, out *[]entry, compactedOut *uint64) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var es []entry
	var c, k int64
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	b.Queue(s.sql.current).QueryRow(func(r pgx.Row) error { return r.Scan(&c, &k) })
	b.Queue(s.sql.readLog, int64(rev), n).Query(func(rows pgx.Rows) error {
		next := rev + 1
		for rows.Next() {
			var r, prevRev int64
			var key string
			var deleted bool
			var val, prevVal []byte
			if err := rows.Scan(&r, &key, &deleted, &prevRev, &val, &prevVal); err != nil {
				return err
			}
			if uint64(r) != next {
				break
			}
			next++
			es = append(es, s.decodeEntry(ctx, uint64(r), key, deleted, uint64(prevRev), val, prevVal))
		}
		return rows.Err()
	})
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		rollback(conn)
		return err
	}
	compacted := uint64(k)
	if rev < compacted || uint64(c) <= rev {
		es = nil // behind compaction: the caller skips; or nothing new
	}
	*out, *compactedOut = es, compacted
	return nil
}

// decodeEntry decodes a log row and its previous value.
func (s *Store) decodeEntry(ctx context.Context, rev uint64, key string, deleted bool, prevRev uint64, val, prevVal []byte) entry {
	e := entry{rev: rev, key: key, deleted: deleted}
	if prevRev != 0 {
		if prevVal == nil {
			e.err = &storage.Error{Err: storage.ErrExpired, Key: key, Msg: "the previous state of the write at " + strconv.FormatUint(rev, 10) + " is compacted"}
			return e
		}
		p, _, err := s.decode(ctx, key, prevVal, prevRev)
		if err != nil {
			e.err = err
			return e
		}
		e.prev = &p
	}
	if !deleted {
		o, _, err := s.decode(ctx, key, val, rev)
		if err != nil {
			e.err = err
			return e
		}
		e.obj = o
	}
	return e
}

// watchBuffer is the capacity of a watcher's channel; watchBatch how many
// entries a watcher takes at a time.
const (
	watchBuffer = 100
	watchBatch  = 256
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

	start   uint64           // the revision to start after
	initial []storage.Object // the synthetic ADDED events ("" and "0")

	progressCh <-chan struct{}
}

func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

func (w *watcher) Stop() { w.cancel() }

// Watch implements storage.Interface. See the file comment.
func (s *Store) Watch(ctx context.Context, key string, opts storage.WatchOptions) (storage.Watcher, error) {
	req, err := backend.ParseWatchOptions(key, opts)
	if err != nil {
		return nil, err
	}
	if s.isClosed() {
		return nil, errClosed()
	}
	w := &watcher{s: s, key: req.Key, recursive: req.Recursive, pred: opts.Predicate, progress: opts.ProgressNotify, start: req.After}
	_, _, w.progressCh = s.feed.state()
	if req.Initial {
		// The state at the time of the call, then the changes after it.
		if w.start, w.initial, err = w.readState(ctx); err != nil {
			return nil, err
		}
	} else {
		_, compacted, err := s.revisions(ctx)
		if err != nil {
			return nil, err
		}
		if compacted > 0 && w.start <= compacted {
			return nil, backend.ExpiredError(compacted)
		}
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.out = make(chan storage.Event, watchBuffer)
	if !s.track() {
		w.cancel()
		return nil, errClosed()
	}
	go w.run()
	return w, nil
}

// readState returns the objects the watch selects and the revision they
// are at, from one snapshot.
func (w *watcher) readState(ctx context.Context) (uint64, []storage.Object, error) {
	prefix := w.key
	if !w.recursive {
		cur, o, found, _, err := w.s.getLatest(ctx, w.key)
		if err != nil || !found || (w.pred != nil && !w.pred.Matches(&o)) {
			return cur, nil, err
		}
		return cur, []storage.Object{o}, nil
	}
	res, err := w.s.List(ctx, prefix, storage.ListOptions{Predicate: w.pred})
	if err != nil {
		return 0, nil, err
	}
	return res.ResourceVersion, res.Items, nil
}

func (w *watcher) matchesKey(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

func (w *watcher) run() {
	defer w.s.running.Done()
	defer w.cancel()
	l := &backend.WatchLoop{
		Ctx:              w.ctx,
		Quit:             w.s.quit,
		Out:              w.out,
		Closed:           w.s.isClosed,
		State:            w.s.feed.state,
		Read:             w.read,
		ProgressNotify:   w.progress,
		ProgressInterval: w.s.opts.ProgressInterval,
	}
	initial := w.initial
	w.initial = nil
	l.Run(w.start, initial, nil, w.progressCh)
}

// read returns the watch's events after last (rev is the feed's): from the
// feed's ring, or from the log table when the ring no longer holds them.
// Events before an entry that cannot be decoded are returned first; that
// entry's error comes with the next read.
func (w *watcher) read(last, rev uint64) ([]storage.Event, uint64, error) {
	es, ok := w.s.feed.since(last, watchBatch)
	if !ok {
		var compacted uint64
		var err error
		es, compacted, err = w.s.readLog(w.ctx, last, watchBatch)
		if err != nil {
			return nil, last, err
		}
		if last < compacted {
			return nil, last, backend.ExpiredError(compacted)
		}
		if len(es) == 0 {
			// The feed is ahead of what this snapshot shows (a
			// replica's race): wait a little, then read again.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-w.ctx.Done():
			}
			return nil, last, nil
		}
	}
	var evs []storage.Event
	upTo := last
	for _, e := range es {
		if w.matchesKey(e.key) {
			if e.err != nil {
				if len(evs) > 0 {
					return evs, upTo, nil
				}
				return nil, last, e.err
			}
			ev, ok, err := w.translate(e)
			if err != nil {
				if len(evs) > 0 {
					return evs, upTo, nil
				}
				return nil, last, err
			}
			if ok {
				evs = append(evs, ev)
			}
		}
		upTo = e.rev
	}
	return evs, upTo, nil
}

// translate turns an entry into the event this watch sees (see
// backend.WatchEvent).
func (w *watcher) translate(e entry) (storage.Event, bool, error) {
	var obj *storage.Object
	if !e.deleted {
		obj = &e.obj
	}
	return backend.WatchEvent(w.pred, e.key, e.rev, obj, e.prev)
}
