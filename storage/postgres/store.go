// This file holds the Store and its writes: Create, Update, Delete, each
// handed to the committer (group.go), which takes the next revision for it
// in a transaction it may share with other writes.

package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// Store is a storage.Interface kept in PostgreSQL. Every method is safe for
// concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	opts     Options
	sql      sql

	quit      chan struct{} // closed by Close
	closeOnce sync.Once
	// closeMu guards closed and the registration of goroutines in running.
	closeMu sync.Mutex
	closed  bool
	running sync.WaitGroup

	feed feed

	writes        chan *pending // to the committer
	committerDone chan struct{} // closed when the committer has ended
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

// New returns a Store on pool, creating its tables when they are missing,
// and starts the reader of the log that feeds watches. The caller keeps
// ownership of pool: Close does not close it. The pool needs a connection
// more than the store's requests: one listens for notifications.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, opts: opts, sql: newSQL(opts.Table), quit: make(chan struct{}),
		writes: make(chan *pending, maxGroup), committerDone: make(chan struct{})}
	if err := s.createSchema(ctx); err != nil {
		return nil, err
	}
	if err := s.recount(ctx); err != nil {
		return nil, err
	}
	rev, _, err := s.revisions(ctx)
	if err != nil {
		return nil, err
	}
	s.feed.init(rev, opts.RingSize)
	s.running.Add(2)
	go s.runFeed()
	go s.runCommitter()
	return s, nil
}

// createSchema creates the tables, one replica at a time (CREATE ... IF NOT
// EXISTS races with itself), unless they are there: DDL takes table locks
// even when it has nothing to do, and replicas restart while others write.
func (s *Store) createSchema(ctx context.Context) error {
	var done bool
	if err := s.pool.QueryRow(ctx, s.sql.schemaDone).Scan(&done); err != nil {
		return fmt.Errorf("look for the tables: %w", err)
	}
	if done {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte("annex schema " + s.opts.Table))
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64())); err != nil {
			return err
		}
		for _, q := range s.sql.schema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("create tables: %w", err)
			}
		}
		return nil
	})
}

// Pool returns the connection pool the store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close ends every watch (with an ErrClosed error event) and the log
// reader; later calls fail with storage.ErrClosed. It closes the pool when
// the store made it (Config.Open). Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeMu.Lock()
		s.closed = true
		close(s.quit)
		s.closeMu.Unlock()
		s.running.Wait()
		if s.ownsPool {
			s.pool.Close()
		}
	})
	return nil
}

func (s *Store) isClosed() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// track registers a goroutine Close waits for; false when closed.
func (s *Store) track() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return false
	}
	s.running.Add(1)
	return true
}

func errClosed() error { return &storage.Error{Err: storage.ErrClosed} }

func (s *Store) now() string { return s.opts.Clock().UTC().Truncate(time.Second).Format(time.RFC3339) }

// dbError maps a database error: a closed store is ErrClosed, a cancelled
// context stays what it is.
func (s *Store) dbError(err error) error {
	switch {
	case err == nil:
		return nil
	case s.isClosed():
		return errClosed()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("postgres: %w", err)
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, data []byte) (storage.Object, error) {
	defer s.observe(ctx, "create", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	if err := backend.CheckSize(key, data, s.opts.maxObjectSize()); err != nil {
		return storage.Object{}, err
	}
	prepared, meta, err := backend.PrepareCreate(data, 0, storage.NewUID(), s.now())
	if err != nil {
		return storage.Object{}, withKey(err, key)
	}
	c, err := s.commit(ctx, write{kind: opPut, key: key, data: prepared, meta: meta})
	if err != nil {
		return storage.Object{}, err
	}
	if c.Conflict {
		return storage.Object{}, &storage.Error{Err: storage.ErrAlreadyExists, Key: key}
	}
	return c.Object, nil
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

// Update implements storage.Interface with backend.GuaranteedUpdate:
// tryUpdate runs outside any transaction; the write commits only if the
// key's revision is still the one tryUpdate saw.
func (s *Store) Update(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.Object, error) {
	defer s.observe(ctx, "update", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	return backend.GuaranteedUpdate(ctx, (*committer)(s), key, opts, backend.LimitUpdate(key, s.opts.maxObjectSize(), tryUpdate))
}

// Delete implements storage.Interface with backend.GuaranteedDelete.
func (s *Store) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.Object, error) {
	defer s.observe(ctx, "delete", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	return backend.GuaranteedDelete(ctx, (*committer)(s), key, opts)
}

// MaxObjectSize implements storage.ObjectSizeLimiter.
func (s *Store) MaxObjectSize() int { return s.opts.maxObjectSize() }

type opKind uint8

const (
	opPut opKind = iota
	opDelete
)

// write is one conditional write: a put of data (final JSON, any resource
// version) when the key's revision is expect (0: missing), or a delete of
// last when its revision is still last's.
type write struct {
	kind   opKind
	key    string
	data   []byte
	meta   storage.Meta
	expect uint64
	last   storage.Object
}

// commit has the committer write w: in a transaction (shared with the
// writes queued at the same moment) that takes the next revision (the row
// lock orders writers), writes the stored value with that revision spliced
// in, and notifies the watchers of every replica at commit. When the key is
// not in the expected state nothing is written (no revision is used up) and
// it returns Conflict with the key's current state.
func (s *Store) commit(ctx context.Context, w write) (backend.Commit, error) {
	var r result
	err := s.retryWrite(ctx, func() error {
		r = s.submit(ctx, w)
		return r.err
	})
	if err != nil {
		var se *storage.Error
		if errors.As(err, &se) {
			return backend.Commit{}, err
		}
		return backend.Commit{}, s.dbError(err)
	}
	if r.conflict {
		st, err := (*committer)(s).ReadState(ctx, w.key)
		if err != nil {
			return backend.Commit{}, err
		}
		return backend.Commit{Conflict: true, Current: st}, nil
	}
	return backend.Commit{Object: r.out}, nil
}

// committer is the Store as the shared write loops see it.
type committer Store

var (
	_ backend.UpdateCommitter = (*committer)(nil)
	_ backend.DeleteCommitter = (*committer)(nil)
)

// ReadState implements backend.StateReader.
func (c *committer) ReadState(ctx context.Context, key string) (backend.State, error) {
	s := (*Store)(c)
	_, o, found, outdated, err := s.getLatest(ctx, key)
	if err != nil || !found {
		return backend.State{}, err
	}
	return backend.State{Object: o, Exists: true, Outdated: outdated}, nil
}

// CommitUpdate implements backend.UpdateCommitter.
func (c *committer) CommitUpdate(ctx context.Context, key string, data []byte, meta storage.Meta, expect uint64) (backend.Commit, error) {
	return (*Store)(c).commit(ctx, write{kind: opPut, key: key, data: data, meta: meta, expect: expect})
}

// CommitDelete implements backend.DeleteCommitter.
func (c *committer) CommitDelete(ctx context.Context, key string, last storage.Object) (backend.Commit, error) {
	return (*Store)(c).commit(ctx, write{kind: opDelete, key: key, last: last})
}

// Ready implements storage.ReadinessChecker: the database answers within
// two seconds.
func (s *Store) Ready(ctx context.Context) error {
	if s.isClosed() {
		return errClosed()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return s.dbError(err)
	}
	return nil
}

// Healthy is Ready: the check of /healthz.
func (s *Store) Healthy(ctx context.Context) error { return s.Ready(ctx) }

// observe tells the Observer how long the request that started at start
// took.
func (s *Store) observe(ctx context.Context, op, key string, start time.Time) {
	if s.opts.Observer != nil {
		s.opts.Observer(ctx, op, key, start, time.Since(start))
	}
}

var _ storage.SizeReporter = (*Store)(nil)

// DBSize implements storage.SizeReporter: the size of the store's tables
// and their indexes, under the table prefix.
func (s *Store) DBSize(ctx context.Context) (map[string]int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.relkind = 'r' AND c.relname IN ($1, $2, $3, $4)`,
		s.opts.Table+"_log", s.opts.Table+"_kv", s.opts.Table+"_revision", s.opts.Table+"_compaction").Scan(&n)
	if err != nil {
		return nil, s.dbError(err)
	}
	return map[string]int64{s.opts.Table: n}, nil
}
