// This file holds the commit loop: the one goroutine that writes to the file.
// It takes every write queued while it was busy and commits them in one
// transaction (one fsync), so a lone writer is committed at once and
// concurrent writers share the cost of a commit.

package bbolt

import (
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
)

type opKind uint8

const (
	opCreate opKind = iota // the key must not exist
	opPut                  // the key's mod revision must be expect (0: absent)
	opDelete               // the key's mod revision must be expect
)

// writeOp is one write handed to the commit loop.
type writeOp struct {
	kind opKind
	key  string
	// data is the object's compact JSON (create, put); the loop sets its
	// resource version to the revision it assigns.
	data []byte
	// rvStart, rvEnd locate metadata.resourceVersion's value in data when
	// rvOK (see storage.ResourceVersionIndex).
	rvStart, rvEnd int
	rvOK           bool
	// meta is parsed from data; the loop sets its ResourceVersion.
	meta   storage.Meta
	expect uint64
	res    chan writeResult
}

// writeResult is the loop's answer to a writeOp.
type writeResult struct {
	obj storage.Object
	err error
	// conflict is set when the key's mod revision was not op.expect;
	// current is then the key's state, exists false if it is absent.
	conflict bool
	current  storage.Object
	exists   bool
}

func (s *Store) commitLoop() {
	defer close(s.loopDone)
	batch := make([]*writeOp, 0, 64)
	for {
		batch = batch[:0]
		select {
		case op := <-s.queue:
			batch = append(batch, op)
		case <-s.quit:
			return
		}
		// Take whatever else is queued right now; never wait for more.
	drain:
		for len(batch) < s.opts.MaxBatchSize {
			select {
			case op := <-s.queue:
				batch = append(batch, op)
			default:
				break drain
			}
		}
		s.commit(batch)
	}
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
	err := s.db.Update(func(tx *bolt.Tx) error {
		rev = s.committed
		objs := tx.Bucket([]byte(bucketObjects))
		evs := tx.Bucket([]byte(bucketEvents))
		evs.FillPercent = 1 // append-only by revision
		for i, op := range batch {
			var err error
			if results[i], err = apply(objs, evs, op, &rev); err != nil {
				return err // roll the whole batch back
			}
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("bbolt: commit: %w", err)
		for i := range results {
			results[i] = writeResult{err: err}
		}
	} else {
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

// apply performs one write inside the loop's transaction. A failed check
// (exists, conflict) consumes no revision. An error from the file is returned
// separately: the transaction may be half-changed and must be rolled back.
func apply(objs, evs *bolt.Bucket, op *writeOp, rev *uint64) (writeResult, error) {
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
			o, err := objectAt(evs, op.key, curRev)
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
		old, verr := valueAt(evs, op.key, curRev)
		if verr != nil {
			return writeResult{err: verr}, nil
		}
		start, end, ok := storage.ResourceVersionIndex(old)
		// withRevision copies old out of the transaction.
		if data, err = withRevision(old, start, end, ok, next); err == nil {
			meta, err = storage.DecodeMeta(data)
		}
		ent = encodeEntry(entryDelete, op.key, curRev, nil)
	} else {
		data, err = withRevision(op.data, op.rvStart, op.rvEnd, op.rvOK, next)
		meta = op.meta
		meta.ResourceVersion = storage.FormatResourceVersion(next)
		ent = encodeEntry(entryPut, op.key, curRev, data)
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

// withRevision returns data with its resource version set to rev, splicing
// the digits in at [start, end) when ok, which is the common case and costs
// one copy.
func withRevision(data []byte, start, end int, ok bool, rev uint64) ([]byte, error) {
	if !ok {
		return storage.SetResourceVersion(data, rev)
	}
	out := make([]byte, 0, len(data)-(end-start)+22)
	out = append(out, data[:start]...)
	out = append(out, '"')
	out = strconv.AppendUint(out, rev, 10)
	out = append(out, '"')
	return append(out, data[end:]...), nil
}
