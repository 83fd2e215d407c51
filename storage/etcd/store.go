// This file holds the Store and its writes: Create, Update, Delete.

package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// Store is a storage.Interface on etcd. It is safe for concurrent use.
type Store struct {
	client     *clientv3.Client
	opts       Options
	ownsClient bool
	closed     atomic.Bool
	quit       chan struct{} // closed by Close: watches end
	progress   progressState
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

// New returns a Store on client. The caller keeps ownership of client: Close
// does not close it.
func New(client *clientv3.Client, opts Options) *Store {
	return &Store{client: client, opts: opts.withDefaults(), quit: make(chan struct{})}
}

// Client returns the etcd client the store uses.
func (s *Store) Client() *clientv3.Client { return s.client }

// Prefix returns the etcd key prefix of the store's objects.
func (s *Store) Prefix() string { return s.opts.Prefix }

// Close marks the store closed (every later call fails with
// storage.ErrClosed, watches end) and closes the client when the store
// dialed it (Config.Open).
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.quit)
	if s.ownsClient {
		return s.client.Close()
	}
	return nil
}

func errClosed() error { return &storage.Error{Err: storage.ErrClosed} }

// etcdKey is the etcd key of a storage key or prefix range.
func (s *Store) etcdKey(key string) string { return s.opts.Prefix + key }

// storageKey is the storage key of an etcd key.
func (s *Store) storageKey(k []byte) string { return string(k[len(s.opts.Prefix):]) }

func (s *Store) now() string {
	return s.opts.Clock().UTC().Truncate(time.Second).Format(time.RFC3339)
}

// encode returns the stored form of prepared (final JSON with some
// revision): metadata.resourceVersion emptied, then transformed.
func (s *Store) encode(ctx context.Context, key string, prepared []byte) ([]byte, error) {
	start, end, ok := backend.ResourceVersionIndex(prepared)
	var plain []byte
	if ok {
		plain = make([]byte, 0, len(prepared)-(end-start)+2)
		plain = append(plain, prepared[:start]...)
		plain = append(plain, '"', '"')
		plain = append(plain, prepared[end:]...)
	} else {
		// Duplicate members: edit them all (SetResourceVersion keeps the
		// digits; the read splices the real revision again).
		var err error
		if plain, err = backend.SetResourceVersion(prepared, 0); err != nil {
			return nil, err
		}
	}
	out, err := s.opts.Transformer.TransformToStorage(ctx, plain, key)
	if err != nil {
		return nil, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "transform to storage: " + err.Error()}
	}
	return out, nil
}

// decode turns a stored value at revision rev into an Object.
func (s *Store) decode(ctx context.Context, key string, stored []byte, rev int64) (storage.Object, error) {
	o, _, err := s.decodeStale(ctx, key, stored, rev)
	return o, err
}

// decodeStale is decode that also says whether the value's stored form is
// not the one the transformer writes now (an older key, plaintext).
func (s *Store) decodeStale(ctx context.Context, key string, stored []byte, rev int64) (storage.Object, bool, error) {
	plain, stale, err := s.opts.Transformer.TransformFromStorage(ctx, stored, key)
	if err != nil {
		return storage.Object{}, false, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "transform from storage: " + err.Error()}
	}
	o, err := finalObject(key, plain, uint64(rev))
	return o, stale, err
}

// finalObject returns data with its resource version set to rev, and its
// metadata.
func finalObject(key string, data []byte, rev uint64) (storage.Object, error) {
	start, end, ok := backend.ResourceVersionIndex(data)
	out, err := backend.SpliceResourceVersionAt(data, start, end, ok, rev)
	if err != nil {
		return storage.Object{}, withKey(err, key)
	}
	m, err := backend.DecodeMetaOf(out) // out is a fresh copy, the object's Data
	if err != nil {
		return storage.Object{}, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "stored object: " + err.Error()}
	}
	return storage.Object{Key: key, ResourceVersion: rev, Data: out, Meta: m}, nil
}

func withKey(err error, key string) error {
	var se *storage.Error
	if errors.As(err, &se) && se.Key == "" {
		c := *se
		c.Key = key
		return &c
	}
	return err
}

func notFound(key string) error { return &storage.Error{Err: storage.ErrNotFound, Key: key} }

// mapError turns an etcd error into a storage error where one applies.
func (s *Store) mapError(ctx context.Context, err error, key string) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return s.expired(ctx)
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		// etcd's own limit is lower than Options.MaxRequestBytes says.
		return &storage.Error{Err: storage.ErrTooLarge, Key: key, Msg: "etcd: " + err.Error()}
	case errors.Is(err, rpctypes.ErrFutureRev):
		cur, cerr := s.CurrentRevision(ctx)
		if cerr != nil {
			cur = 0
		}
		return &storage.Error{Err: storage.ErrTooLargeResourceVersion, Key: key, ResourceVersion: cur,
			Msg: "Too large resource version: " + err.Error()}
	case s.closed.Load() || errors.Is(err, context.Canceled) && s.client.Ctx().Err() != nil:
		return errClosed()
	}
	return fmt.Errorf("etcd: %w", err)
}

// Create implements storage.Interface: a transaction that puts the key
// only if it does not exist.
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
	stored, err := s.encode(ctx, key, prepared)
	if err != nil {
		return storage.Object{}, err
	}
	k := s.etcdKey(key)
	// mod_revision = 0 (not create_revision = 0, the same test on etcd):
	// the shape k8s.io/apiserver sends, the only create kine accepts.
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(stored))).
		Commit()
	if err != nil {
		return storage.Object{}, s.mapError(ctx, err, key)
	}
	if !resp.Succeeded {
		return storage.Object{}, &storage.Error{Err: storage.ErrAlreadyExists, Key: key}
	}
	rev := uint64(resp.Header.Revision)
	if resp.Header.ClusterId == 0 && resp.Header.MemberId == 0 {
		// kine (whose headers carry no cluster or member id; etcd's always
		// do) answers a create of a key that existed before with its
		// latest revision, not the create's: under concurrent writes,
		// another write's (kine v0.17.5 logstructured.go, Create: the
		// retry's revision lands in a shadowed variable, and
		// adjustRevision fills in the current one). The key's
		// create_revision is the create's own. The price is a read per
		// create on kine (p50 0.67–0.79 ms → 1.12–1.18 ms for a lone
		// create on kine over PostgreSQL, BenchmarkWatchDelivery).
		if r, ok := s.createRevision(ctx, k); ok {
			rev = r
		}
	}
	return written(key, prepared, meta, rev)
}

// createRevision reads the create revision of etcd key k; false when k is
// gone or the read failed (then the create's answer is all there is).
func (s *Store) createRevision(ctx context.Context, k string) (uint64, bool) {
	resp, err := s.client.Get(ctx, k)
	if err != nil || len(resp.Kvs) != 1 {
		return 0, false
	}
	return uint64(resp.Kvs[0].CreateRevision), true
}

// written is the object a write of prepared (with meta) committed at rev.
func written(key string, prepared []byte, meta storage.Meta, rev uint64) (storage.Object, error) {
	start, end, ok := backend.ResourceVersionIndex(prepared)
	out, err := backend.SpliceResourceVersionAt(prepared, start, end, ok, rev)
	if err != nil {
		return storage.Object{}, withKey(err, key)
	}
	meta.ResourceVersion = storage.FormatResourceVersion(rev)
	return storage.Object{Key: key, ResourceVersion: rev, Data: out, Meta: meta}, nil
}

// writable checks what every write checks first: the key, then that the
// store is open.
func (s *Store) writable(key string) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	if s.closed.Load() {
		return errClosed()
	}
	return nil
}

// fromKVs is the state a range read of one key returned. State.Outdated is
// set when the value's stored form is not the transformer's current one (an
// older key, plaintext).
func (s *Store) fromKVs(ctx context.Context, key string, kvs []*mvccpb.KeyValue) (backend.State, error) {
	if len(kvs) == 0 {
		return backend.State{}, nil
	}
	o, outdated, err := s.decodeStale(ctx, key, kvs[0].Value, kvs[0].ModRevision)
	if err != nil {
		return backend.State{}, err
	}
	return backend.State{Object: o, Exists: true, Outdated: outdated}, nil
}

// Update implements storage.Interface with backend.GuaranteedUpdate:
// tryUpdate runs outside etcd; the put commits only if the key's mod
// revision is still the one tryUpdate saw, otherwise the transaction returns
// the current state and the update retries from it. A no-op update of a
// value stored in an outdated form (key rotation) still rewrites it, so that
// rewriting every object completes a rotation, as in Kubernetes.
func (s *Store) Update(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.Object, error) {
	defer s.observe(ctx, "update", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	return backend.GuaranteedUpdate(ctx, (*committer)(s), key, opts, backend.LimitUpdate(key, s.opts.maxObjectSize(), tryUpdate))
}

// MaxObjectSize implements storage.ObjectSizeLimiter: Options.MaxRequestBytes
// less 16 KiB, zero (no limit) when it is negative.
func (s *Store) MaxObjectSize() int { return s.opts.maxObjectSize() }

// Delete implements storage.Interface with backend.GuaranteedDelete: a
// transaction that deletes the key only if its mod revision is the one
// checked, retried from the state the transaction returns otherwise.
func (s *Store) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.Object, error) {
	defer s.observe(ctx, "delete", key, time.Now())
	if err := s.writable(key); err != nil {
		return storage.Object{}, err
	}
	return backend.GuaranteedDelete(ctx, (*committer)(s), key, opts)
}

// committer is the Store as the shared write loops see it: linearizable
// reads, and transactions that compare the key's mod revision.
type committer Store

var (
	_ backend.UpdateCommitter = (*committer)(nil)
	_ backend.DeleteCommitter = (*committer)(nil)
)

// ReadState implements backend.StateReader.
func (c *committer) ReadState(ctx context.Context, key string) (backend.State, error) {
	s := (*Store)(c)
	resp, err := s.client.Get(ctx, s.etcdKey(key))
	if err != nil {
		return backend.State{}, s.mapError(ctx, err, key)
	}
	return s.fromKVs(ctx, key, resp.Kvs)
}

// CommitUpdate implements backend.UpdateCommitter.
func (c *committer) CommitUpdate(ctx context.Context, key string, data []byte, meta storage.Meta, expect uint64) (backend.Commit, error) {
	s := (*Store)(c)
	stored, err := s.encode(ctx, key, data)
	if err != nil {
		return backend.Commit{}, err
	}
	return s.commitIf(ctx, key, expect, clientv3.OpPut(s.etcdKey(key), string(stored)), func(rev uint64) (storage.Object, error) {
		return written(key, data, meta, rev)
	})
}

// CommitDelete implements backend.DeleteCommitter.
func (c *committer) CommitDelete(ctx context.Context, key string, last storage.Object) (backend.Commit, error) {
	s := (*Store)(c)
	return s.commitIf(ctx, key, last.ResourceVersion, clientv3.OpDelete(s.etcdKey(key)), func(rev uint64) (storage.Object, error) {
		return written(key, last.Data, last.Meta, rev)
	})
}

// commitIf runs op in a transaction if key's mod revision is expect (0:
// missing); result makes the written object from the revision of the
// transaction. Otherwise the transaction reads the key, and the Commit is a
// conflict with that state.
func (s *Store) commitIf(ctx context.Context, key string, expect uint64, op clientv3.Op, result func(rev uint64) (storage.Object, error)) (backend.Commit, error) {
	k := s.etcdKey(key)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", int64(expect))).
		Then(op).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return backend.Commit{}, s.mapError(ctx, err, key)
	}
	if !resp.Succeeded {
		st, err := s.fromKVs(ctx, key, resp.Responses[0].GetResponseRange().Kvs)
		if err != nil {
			return backend.Commit{}, err
		}
		return backend.Commit{Conflict: true, Current: st}, nil
	}
	if d := resp.Responses[0].GetResponseDeleteRange(); d != nil && d.Deleted == 0 {
		// kine answers a delete of a key that is gone by then with success
		// and nothing deleted, where etcd fails the comparison: the same
		// conflict with a missing key.
		return backend.Commit{Conflict: true}, nil
	}
	o, err := result(uint64(resp.Header.Revision))
	return backend.Commit{Object: o}, err
}

// CurrentRevision implements storage.RevisionReader: the revision of etcd's
// last committed write, read linearizably.
func (s *Store) CurrentRevision(ctx context.Context) (uint64, error) {
	if s.closed.Load() {
		return 0, errClosed()
	}
	resp, err := s.client.Get(ctx, s.opts.CompactionKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("etcd: %w", err)
	}
	return uint64(resp.Header.Revision), nil
}

// Count implements storage.Counter.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	defer s.observe(ctx, "count", prefix, time.Now())
	pr, err := backend.PrefixRange(prefix)
	if err != nil {
		return 0, err
	}
	if s.closed.Load() {
		return 0, errClosed()
	}
	resp, err := s.client.Get(ctx, s.etcdKey(pr), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, s.mapError(ctx, err, prefix)
	}
	return resp.Count, nil
}

// Ready implements storage.ReadinessChecker: etcd answers a linearizable
// read (it has a leader and a quorum) within ReadyCheckTimeout.
func (s *Store) Ready(ctx context.Context) error {
	return s.check(ctx, s.opts.ReadyCheckTimeout)
}

// Healthy is Ready within HealthCheckTimeout: the check of /healthz.
func (s *Store) Healthy(ctx context.Context) error {
	return s.check(ctx, s.opts.HealthCheckTimeout)
}

func (s *Store) check(ctx context.Context, timeout time.Duration) error {
	if s.closed.Load() {
		return errClosed()
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := s.client.Get(ctx, s.opts.CompactionKey, clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("etcd: %w", err)
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

// DBSize implements storage.SizeReporter: each member's database size, by
// endpoint.
func (s *Store) DBSize(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, ep := range s.client.Endpoints() {
		st, err := s.client.Status(ctx, ep)
		if err != nil {
			return nil, fmt.Errorf("etcd %s: %w", ep, err)
		}
		out[ep] = st.DbSize
	}
	return out, nil
}
