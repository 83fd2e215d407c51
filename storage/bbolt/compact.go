// This file holds compaction: dropping the event log at and before a
// revision, on demand (Compact) and periodically (Start).

package bbolt

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// compactChunk is how many log entries one pruning transaction visits, so
// that compacting a long history never makes one huge transaction.
const compactChunk = 10000

// revSample is the revision the periodic compactor saw at a time.
type revSample struct {
	at  time.Time
	rev uint64
}

// Compact implements storage.Compactor. It records the compacted revision
// first (from then on reads at or before it fail with ErrExpired), then prunes
// the log up to it in chunks. A revision at or beyond the current one is
// lowered to the current revision minus one, so the latest state stays
// readable at its revision.
//
// Pruning keeps exactly the entries at or before the compacted revision C
// that hold a key's state at C: those are the current values of keys not
// changed since, and the previous states of the first changes after C, which
// watches and snapshot reads after C still read. Visiting each entry in
// (pruned, C] in order, it deletes the entry of the state that entry replaced
// (now superseded at or before C) and, for a delete, the entry itself. A
// pruning cut short (ctx, crash) resumes from the pruned revision at the next
// Compact.
func (s *Store) Compact(ctx context.Context, revision uint64) error {
	if s.isClosed() {
		return errClosed()
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	cur, _, _ := s.hub.state()
	if revision >= cur {
		revision = cur - 1 // cur >= initialRevision >= 1
	}
	if revision == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, compacted := readMeta(tx); revision <= compacted {
			revision = compacted // only finish pruning, if anything is left
			return nil
		}
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(keyCompacted), putUint64(nil, revision))
	})
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err // the next compaction prunes what is left
		}
		done := false
		err := s.db.Update(func(tx *bolt.Tx) error {
			var err error
			done, err = pruneChunk(tx, revision)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

// pruneChunk prunes up to compactChunk log entries after the pruned revision
// and at or before upTo, and records how far it got; done is true when the
// log is pruned up to upTo.
func pruneChunk(tx *bolt.Tx, upTo uint64) (done bool, err error) {
	meta, evs := tx.Bucket([]byte(bucketMeta)), tx.Bucket([]byte(bucketEvents))
	pruned := getUint64(meta.Get([]byte(keyPruned)))
	if pruned >= upTo {
		return true, nil
	}
	var drop []uint64
	c := evs.Cursor()
	n := 0
	k, v := c.Seek(revKey(pruned + 1))
	for ; k != nil && getUint64(k) <= upTo && n < compactChunk; k, v = c.Next() {
		rev := getUint64(k)
		e, err := decodeEntry(v)
		if err != nil {
			return false, corrupt(string(e.key), fmt.Errorf("log entry %d: %w", rev, err))
		}
		if e.prevRev != 0 {
			drop = append(drop, e.prevRev)
		}
		if e.kind == entryDelete {
			drop = append(drop, rev)
		}
		pruned = rev
		n++
	}
	if k == nil || getUint64(k) > upTo {
		done, pruned = true, upTo
	}
	// Deleted after the walk: a cursor must not see its bucket change.
	for _, r := range drop {
		if err := evs.Delete(revKey(r)); err != nil {
			return false, err
		}
	}
	return done, meta.Put([]byte(keyPruned), putUint64(nil, pruned))
}

// Start runs the periodic compactor until ctx is done (it then returns nil)
// or the store is closed (ErrClosed). Every CompactionInterval it compacts
// to the revision that was current about HistoryRetention ago. Without
// Start, history is only dropped by explicit Compact calls.
func (s *Store) Start(ctx context.Context) error {
	if s.opts.CompactionInterval < 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return errClosed()
		}
	}
	s.compactTick(ctx, s.opts.Clock(), false)
	t := time.NewTicker(s.opts.CompactionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return errClosed()
		case <-t.C:
			s.compactTick(ctx, s.opts.Clock(), true)
		}
	}
}

// compactTick records the current revision at now and, when compact is set,
// compacts to the newest sample at least HistoryRetention old. A quarter of
// the interval of slack absorbs ticker jitter, so that with the defaults each
// tick compacts to the previous tick's revision, as kube-apiserver does.
func (s *Store) compactTick(ctx context.Context, now time.Time, compact bool) {
	cur, _, _ := s.hub.state()
	s.compactMu.Lock()
	s.samples = append(s.samples, revSample{at: now, rev: cur})
	var target uint64
	if compact {
		cutoff := now.Add(-s.opts.HistoryRetention).Add(s.opts.CompactionInterval / 4)
		idx := -1
		for i, sm := range s.samples {
			if !sm.at.After(cutoff) {
				idx = i
			}
		}
		if idx >= 0 {
			target = s.samples[idx].rev
			s.samples = append(s.samples[:0], s.samples[idx+1:]...)
		}
	}
	s.compactMu.Unlock()
	if target == 0 {
		return
	}
	if err := s.Compact(ctx, target); err != nil {
		s.log.Warn("bbolt: periodic compaction failed", zap.Uint64("revision", target), zap.Error(err))
	}
}

// compactedRevision returns the compacted revision recorded in the file.
func (s *Store) compactedRevision() (uint64, error) {
	var c uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		_, c = readMeta(tx)
		return nil
	})
	return c, err
}
