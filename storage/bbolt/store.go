// This file holds the Store: opening and closing the file, and the write
// methods (Create, Update, Delete) that hand their writes to the group commit.

package bbolt

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// Store is a storage.Interface kept in one bbolt file. It serves every
// resource: keys are full paths. Every method is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	opts Options
	log  *zap.Logger

	// quit is closed by Close.
	quit chan struct{}

	// queueMu guards pending, leading and stopped: the group commit (see
	// commit.go).
	queueMu sync.Mutex
	// pending are the writes waiting for the next transaction.
	pending []*writeOp
	// leading is set while some writer goroutine commits on behalf of all
	// (the leader); leaders counts leaderships started, so that Close can
	// wait for the last one to end.
	leading bool
	leaders sync.WaitGroup
	// stopped is set by Close: no write is accepted after it.
	stopped bool
	// committed is the last committed revision; owned by the leader.
	committed uint64
	// commitHook, when set (tests), runs in the leader before each
	// transaction with the size of its batch.
	commitHook func(n int)
	// reserve is a file of reserveBytes beside the database, removed to
	// make room when deletes fail for want of disk space (made again at
	// the next Open).
	reserve string
	// full is the error of the last commit when it failed for want of disk
	// space (nil once one succeeds): Ready reports it.
	full atomic.Pointer[error]
	// commits counts committed transactions.
	commits atomic.Int64
	// waiting counts writers inside submit, queued or being committed (tests).
	waiting atomic.Int64

	hub hub

	// closeMu guards closed and the registration of watchers in watchers.
	closeMu  sync.Mutex
	closed   bool
	watchers sync.WaitGroup

	// compactMu serialises compactions and guards samples.
	compactMu sync.Mutex
	samples   []revSample
}

var (
	_ storage.Interface         = (*Store)(nil)
	_ storage.RevisionReader    = (*Store)(nil)
	_ storage.Compactor         = (*Store)(nil)
	_ storage.ProgressRequester = (*Store)(nil)
	_ storage.Counter           = (*Store)(nil)
	_ storage.ReadinessChecker  = (*Store)(nil)
	_ storage.ObjectSizeLimiter = (*Store)(nil)
)

// Open opens (creating it if needed) the store file at path. The caller must Close the Store. Periodic compaction runs only
// while Start runs.
func Open(path string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: opts.LockTimeout,
		NoSync:  opts.UnsafeNoSync,
		// As etcd: the freelist is rebuilt when the file is opened instead
		// of being written at every commit (one page less per fsync).
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("bbolt: open %s: %w", path, err)
	}
	var rev uint64
	err = db.Update(func(tx *bolt.Tx) error {
		rev, err = initialise(tx)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bbolt: initialise %s: %w", path, err)
	}
	s := &Store{
		db:        db,
		opts:      opts,
		log:       opts.Logger,
		quit:      make(chan struct{}),
		committed: rev,
	}
	s.reserve = path + ".reserve"
	if err := makeReserve(s.reserve); err != nil {
		opts.Logger.Warn("bbolt: no room for the reserve that lets deletes run on a full disk", zap.String("path", s.reserve), zap.Error(err))
	}
	s.hub.init(rev)
	if opts.UnsafeNoSync {
		s.log.Warn("bbolt store opened with UnsafeNoSync: a machine crash can lose acknowledged writes", zap.String("path", path))
	}
	return s, nil
}

// Close refuses new writes, waits for the transaction under way, ends every
// watch with an ErrClosed error event, and closes the file. Writes waiting to
// be committed fail with ErrClosed.
// Close is idempotent.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.quit)
	s.closeMu.Unlock()
	s.queueMu.Lock()
	s.stopped = true
	s.queueMu.Unlock()
	s.leaders.Wait()
	s.watchers.Wait()
	return s.db.Close()
}

func (s *Store) isClosed() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

func errClosed() error { return &storage.Error{Err: storage.ErrClosed} }

func (s *Store) now() string { return s.opts.Clock().UTC().Truncate(time.Second).Format(time.RFC3339) }

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, data []byte) (storage.Object, error) {
	defer s.observe(ctx, "create", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	if err := backend.CheckSize(key, data, s.opts.MaxObjectSize); err != nil {
		return storage.Object{}, err
	}
	// The revision is not known yet: stamp 0, the commit sets the real one.
	prepared, meta, err := backend.PrepareCreate(data, 0, storage.NewUID(), s.now())
	if err != nil {
		return storage.Object{}, withKey(err, key)
	}
	op := &writeOp{kind: opCreate, key: key, data: prepared, meta: meta}
	op.rvStart, op.rvEnd, op.rvOK = backend.ResourceVersionIndex(prepared)
	r := s.submit(ctx, op)
	return r.obj, r.err
}

// writable checks what every write checks first: the key, then that the
// store is open.
func (s *Store) writable(key string) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	if s.isClosed() {
		return errClosed()
	}
	return nil
}

func notFound(key string) error { return &storage.Error{Err: storage.ErrNotFound, Key: key} }

func withKey(err error, key string) error {
	if se, ok := err.(*storage.Error); ok && se.Key == "" {
		c := *se
		c.Key = key
		return &c
	}
	return err
}

// Update implements storage.Interface with backend.GuaranteedUpdate:
// tryUpdate runs outside any transaction; the write commits (in the group
// commit) only if the key's mod revision is still the one tryUpdate saw,
// otherwise it retries with the state the commit found.
func (s *Store) Update(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.Object, error) {
	defer s.observe(ctx, "update", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	return backend.GuaranteedUpdate(ctx, (*committer)(s), key, opts, backend.LimitUpdate(key, s.opts.MaxObjectSize, tryUpdate))
}

// MaxObjectSize implements storage.ObjectSizeLimiter: Options.MaxObjectSize,
// zero when negative (no limit).
func (s *Store) MaxObjectSize() int { return max(s.opts.MaxObjectSize, 0) }

// Delete implements storage.Interface with backend.GuaranteedDelete.
func (s *Store) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.Object, error) {
	defer s.observe(ctx, "delete", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	return backend.GuaranteedDelete(ctx, (*committer)(s), key, opts)
}

// committer is the Store as the shared write loops see it: reads from a
// read transaction, conditional writes through the group commit.
type committer Store

var (
	_ backend.UpdateCommitter = (*committer)(nil)
	_ backend.DeleteCommitter = (*committer)(nil)
)

// ReadState implements backend.StateReader.
func (c *committer) ReadState(ctx context.Context, key string) (backend.State, error) {
	var st backend.State
	err := c.db.View(func(tx *bolt.Tx) error {
		rev, data, err := current(c.opts.Transformer, tx, key)
		if err != nil || rev == 0 {
			return err
		}
		st.Exists = true
		st.Object, err = makeObject(key, rev, data)
		return err
	})
	return st, err
}

// CommitUpdate implements backend.UpdateCommitter.
func (c *committer) CommitUpdate(ctx context.Context, key string, data []byte, meta storage.Meta, expect uint64) (backend.Commit, error) {
	op := &writeOp{kind: opPut, key: key, data: data, meta: meta, expect: expect}
	op.rvStart, op.rvEnd, op.rvOK = backend.ResourceVersionIndex(data)
	return (*Store)(c).submit(ctx, op).commit()
}

// CommitDelete implements backend.DeleteCommitter.
// The commit reads the last state from the log, in its transaction.
func (c *committer) CommitDelete(ctx context.Context, key string, last storage.Object) (backend.Commit, error) {
	return (*Store)(c).submit(ctx, &writeOp{kind: opDelete, key: key, expect: last.ResourceVersion}).commit()
}

// CurrentRevision implements storage.RevisionReader: the revision of the
// last committed and published write.
func (s *Store) CurrentRevision(ctx context.Context) (uint64, error) {
	if s.isClosed() {
		return 0, errClosed()
	}
	rev, _, _ := s.hub.state()
	return rev, nil
}

// RequestProgress implements storage.ProgressRequester.
func (s *Store) RequestProgress(ctx context.Context) error {
	if s.isClosed() {
		return errClosed()
	}
	s.hub.requestProgress()
	return nil
}

// Ready implements storage.ReadinessChecker: nil until Close, but while
// the disk is full (the last write failed with ENOSPC: reads and deletes
// go on, /readyz names the problem).
func (s *Store) Ready(ctx context.Context) error {
	if s.isClosed() {
		return errClosed()
	}
	if err := s.full.Load(); err != nil {
		return fmt.Errorf("writes fail: %w", *err)
	}
	return nil
}

// reserveBytes is the room kept for deletes on a full disk: a delete
// rewrites a few pages per level of the tree.
const reserveBytes = 2 << 20

// makeReserve writes the reserve at path unless it is there, whole.
func makeReserve(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() == reserveBytes {
		return nil
	}
	err := os.WriteFile(path, make([]byte, reserveBytes), 0o600)
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// releaseReserve removes the reserve; false when there was none.
func (s *Store) releaseReserve() bool {
	if os.Remove(s.reserve) != nil {
		return false
	}
	s.log.Warn("bbolt: disk full: the reserve was released to let deletes run", zap.String("path", s.reserve))
	return true
}

// Healthy is the store's liveness (/healthz): nil until Close, a full
// disk included (restarting the server would not free it).
func (s *Store) Healthy(ctx context.Context) error {
	if s.isClosed() {
		return errClosed()
	}
	return nil
}

// observe tells the Observer how long the request that started at start
// took.
func (s *Store) observe(ctx context.Context, op, key string, start time.Time) {
	if s.opts.Observer != nil {
		s.opts.Observer(ctx, op, key, start, time.Since(start))
	}
}

var _ storage.SizeReporter = (*Store)(nil)

// DBSize implements storage.SizeReporter: the size of the file's data.
func (s *Store) DBSize(ctx context.Context) (map[string]int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	if err != nil {
		return nil, err
	}
	return map[string]int64{s.db.Path(): n}, nil
}
