// This file holds compaction: dropping the event log at and before a
// revision, on demand (Compact) and periodically (Start).

package bbolt

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// compactChunk is how many log entries one compaction transaction deletes, so
// that compacting a long history never makes one huge transaction.
const compactChunk = 10000

// revSample is the revision the periodic compactor saw at a time.
type revSample struct {
	at  time.Time
	rev uint64
}

// Compact implements storage.Compactor. It records the compacted revision
// first (from then on reads at or before it fail with ErrExpired), then
// deletes the log entries in chunks. A revision at or beyond the current one
// is lowered to the current revision minus one, so the latest state stays
// readable at its revision.
func (s *Store) Compact(ctx context.Context, revision uint64) error {
	if s.isClosed() {
		return errClosed()
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	cur, _, _ := s.hub.state()
	if revision >= cur {
		if cur == 0 {
			return nil
		}
		revision = cur - 1
	}
	if revision == 0 {
		return nil
	}
	var skip bool
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, compacted := readMeta(tx); revision <= compacted {
			skip = true
			return nil
		}
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(keyCompacted), putUint64(nil, revision))
	})
	if err != nil || skip {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err // the next compaction deletes what is left
		}
		done := false
		err := s.db.Update(func(tx *bolt.Tx) error {
			c := tx.Bucket([]byte(bucketEvents)).Cursor()
			n := 0
			for k, _ := c.First(); ; k, _ = c.Next() {
				if k == nil || getUint64(k) > revision {
					done = true
					return nil
				}
				if n == compactChunk {
					return nil
				}
				if err := c.Delete(); err != nil {
					return err
				}
				n++
			}
		})
		if err != nil || done {
			return err
		}
	}
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
