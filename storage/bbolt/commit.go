// This file holds the group commit. A writer appends its write to the
// pending list; if no writer is committing (leading), it becomes the leader
// and commits in its own goroutine every write pending at that moment (up to
// MaxBatchSize) in one transaction, one fsync. So a lone writer commits at
// once with no hand-off to another goroutine, and writers that arrive while a
// transaction is under way share the next one: when it ends, the leader hands
// the leadership to the first of them, which commits them all.

package bbolt

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
	"github.com/annexapi/annex/storage/value"
)

type opKind uint8

const (
	opCreate opKind = iota // the key must not exist
	opPut                  // the key's mod revision must be expect (0: absent)
	opDelete               // the key's mod revision must be expect
)

// writeOp is one write of the group commit.
type writeOp struct {
	kind opKind
	key  string
	// data is the object's compact JSON (create, put); the commit sets its
	// resource version to the revision it assigns.
	data []byte
	// rvStart, rvEnd locate metadata.resourceVersion's value in data when
	// rvOK (see backend.ResourceVersionIndex).
	rvStart, rvEnd int
	rvOK           bool
	// meta is parsed from data; the commit sets its ResourceVersion.
	meta   storage.Meta
	expect uint64
	res    chan writeResult
	// state is opPending, opTaken, opAbandoned or opChosen.
	state atomic.Int32
}

// writeResult is the outcome of a writeOp.
type writeResult struct {
	obj storage.Object
	err error
	// conflict is set when the key's mod revision was not op.expect;
	// current is then the key's state, exists false if it is absent.
	conflict bool
	current  storage.Object
	exists   bool
	// lead tells a pending write's writer to become the leader; it carries
	// no outcome.
	lead bool
}

// commit is r as the shared write loops take it.
func (r writeResult) commit() (backend.Commit, error) {
	if r.err != nil {
		return backend.Commit{}, r.err
	}
	if r.conflict {
		return backend.Commit{Conflict: true, Current: backend.State{Object: r.current, Exists: r.exists}}, nil
	}
	return backend.Commit{Object: r.obj}, nil
}

// Write states (writeOp.state).
const (
	opPending   int32 = iota // waiting in s.pending
	opTaken                  // in a transaction: its writer waits for res
	opAbandoned              // its writer's ctx ended first: skip it
	opChosen                 // pending, and its writer is told to lead
)

// submit queues op, commits it (leading) or waits for it to be committed,
// and returns its result. A write abandoned (ctx) before a leader took it is
// never committed; once taken, submit waits for the outcome, as the write may
// commit.
func (s *Store) submit(ctx context.Context, op *writeOp) writeResult {
	op.res = make(chan writeResult, 1)
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	s.queueMu.Lock()
	if s.stopped {
		s.queueMu.Unlock()
		return writeResult{err: errClosed()}
	}
	s.pending = append(s.pending, op)
	lead := !s.leading
	if lead {
		s.leading = true
		s.leaders.Add(1)
	}
	s.queueMu.Unlock()
	if lead {
		s.lead()
	}
	done := ctx.Done()
	for {
		select {
		case r := <-op.res:
			if r.lead {
				s.lead()
				continue
			}
			return r
		case <-done:
			if op.state.CompareAndSwap(opPending, opAbandoned) {
				return writeResult{err: ctx.Err()}
			}
			done = nil // taken or chosen: wait for res
		}
	}
}

// lead commits one batch of pending writes, then hands the leadership to the
// writer of the next pending write, or ends it when none is left. Only the
// leader runs it.
func (s *Store) lead() {
	s.queueMu.Lock()
	stopped := s.stopped
	batch := make([]*writeOp, 0, min(len(s.pending), s.opts.MaxBatchSize))
	n := 0
	for _, op := range s.pending {
		if len(batch) == s.opts.MaxBatchSize && !stopped {
			break
		}
		n++
		if op.state.CompareAndSwap(opPending, opTaken) || op.state.CompareAndSwap(opChosen, opTaken) {
			batch = append(batch, op)
		}
	}
	clear(s.pending[:n])
	s.pending = s.pending[n:]
	s.queueMu.Unlock()

	if stopped {
		for _, op := range batch {
			op.res <- writeResult{err: errClosed()}
		}
	} else if len(batch) > 0 {
		s.commit(batch)
	}

	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	for len(s.pending) > 0 {
		next := s.pending[0]
		if next.state.CompareAndSwap(opPending, opChosen) {
			next.res <- writeResult{lead: true}
			return
		}
		s.pending[0] = nil
		s.pending = s.pending[1:] // abandoned
	}
	s.pending = nil
	s.leading = false
	s.leaders.Done()
}

// commit applies batch in one transaction. Each successful write gets its
// own revision; revisions are published and results sent only after the
// transaction is durable.
func (s *Store) commit(batch []*writeOp) {
	if s.commitHook != nil {
		s.commitHook(len(batch))
	}
	results := make([]writeResult, len(batch))
	rev := s.committed
	err := s.update(batch, results, &rev)
	if errors.Is(err, syscall.ENOSPC) && allDeletes(batch) && s.releaseReserve() {
		err = s.update(batch, results, &rev) // deletes free room: the reserve lets them run
	}
	if err != nil {
		err = fmt.Errorf("bbolt: commit: %w", err)
		for i := range results {
			results[i] = writeResult{err: err}
		}
		if errors.Is(err, syscall.ENOSPC) {
			s.full.Store(&err) // Ready says so until a write succeeds
		}
	} else {
		s.full.Store(nil)
		s.commits.Add(1)
		if rev != s.committed {
			s.committed = rev
			s.hub.publish(rev)
		}
	}
	for i, op := range batch {
		op.res <- results[i]
	}
}

// update applies batch in one transaction, the revisions from *rev.
func (s *Store) update(batch []*writeOp, results []writeResult, rev *uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		*rev = s.committed
		objs := tx.Bucket([]byte(bucketObjects))
		evs := tx.Bucket([]byte(bucketEvents))
		evs.FillPercent = 1 // append-only by revision
		for i, op := range batch {
			var err error
			if results[i], err = apply(s.opts.Transformer, objs, evs, op, rev); err != nil {
				return err // roll the whole batch back
			}
		}
		return nil
	})
}

func allDeletes(batch []*writeOp) bool {
	for _, op := range batch {
		if op.kind != opDelete {
			return false
		}
	}
	return true
}

// apply performs one write inside the batch's transaction. A failed check
// (exists, conflict) consumes no revision. An error from the file is returned
// separately: the transaction may be half-changed and must be rolled back.
func apply(tr value.Transformer, objs, evs *bolt.Bucket, op *writeOp, rev *uint64) (writeResult, error) {
	key := []byte(op.key)
	if len(key) > bolt.MaxKeySize {
		return writeResult{err: &storage.Error{Err: storage.ErrInvalidKey, Key: op.key, Msg: "key too long"}}, nil
	}
	var curRev uint64
	if v := objs.Get(key); v != nil {
		if len(v) != 8 {
			return writeResult{err: corrupt(op.key, errCorrupt)}, nil
		}
		curRev = getUint64(v)
	}
	next := *rev + 1
	switch op.kind {
	case opCreate:
		if curRev != 0 {
			return writeResult{err: &storage.Error{Err: storage.ErrAlreadyExists, Key: op.key}}, nil
		}
	case opPut, opDelete:
		if curRev != op.expect || (op.kind == opDelete && curRev == 0) {
			if curRev == 0 {
				return writeResult{conflict: true}, nil
			}
			o, err := objectAt(tr, evs.Cursor(), op.key, curRev)
			if err != nil {
				return writeResult{err: err}, nil
			}
			return writeResult{conflict: true, current: o, exists: true}, nil
		}
	}
	var (
		data []byte
		meta storage.Meta
		ent  []byte
		err  error
	)
	if op.kind == opDelete {
		old, verr := valueAt(tr, evs.Cursor(), op.key, curRev)
		if verr != nil {
			return writeResult{err: verr}, nil
		}
		start, end, ok := backend.ResourceVersionIndex(old)
		// The splice copies old out of the transaction.
		if data, err = backend.SpliceResourceVersionAt(old, start, end, ok, next); err == nil {
			meta, err = backend.DecodeMetaOf(data)
		}
		ent = encodeEntry(entryDelete, op.key, curRev, nil)
	} else {
		data, err = backend.SpliceResourceVersionAt(op.data, op.rvStart, op.rvEnd, op.rvOK, next)
		meta = op.meta
		meta.ResourceVersion = storage.FormatResourceVersion(next)
		if err == nil {
			var stored []byte
			if stored, err = toStorage(tr, op.key, data); err == nil {
				ent = encodeEntry(entryPut, op.key, curRev, stored)
			}
		}
	}
	if err != nil {
		return writeResult{err: withKey(err, op.key)}, nil
	}
	if op.kind == opDelete {
		err = objs.Delete(key)
	} else {
		err = objs.Put(key, revKey(next))
	}
	if err == nil {
		err = evs.Put(revKey(next), ent)
	}
	if err != nil {
		return writeResult{}, fmt.Errorf("write %s: %w", op.key, err)
	}
	*rev = next
	return writeResult{obj: storage.Object{Key: op.key, ResourceVersion: next, Data: data, Meta: meta}}, nil
}
