// This file holds compaction: Compact records the compacted revision, then
// prunes the log in small transactions that never touch the revision row,
// so writers never wait for it; Start runs it periodically.

package postgres

import (
	"context"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// Compact implements storage.Compactor: revision and everything before it
// expire. A revision at or beyond the current one is lowered to the current
// one minus one; compacting at or below the compacted revision only
// finishes pruning. The log rows the history no longer needs (rows replaced
// at or before the revision, and deletions) are removed CompactionBatch
// revisions per transaction.
func (s *Store) Compact(ctx context.Context, revision uint64) error {
	if s.isClosed() {
		return errClosed()
	}
	cur, _, err := s.revisions(ctx)
	if err != nil {
		return err
	}
	if revision >= cur {
		revision = cur - 1
	}
	if revision == 0 {
		return nil
	}
	// First the mark (reads at and before it fail from now on), then the
	// rows: a snapshot that still sees the old mark still sees the rows.
	if _, err := s.pool.Exec(ctx, s.sql.setCompact, int64(revision)); err != nil {
		return s.dbError(err)
	}
	return s.prune(ctx)
}

// prune removes the log rows below the compacted revision that no read or
// watch can ask for, batch by batch, one replica at a time.
func (s *Store) prune(ctx context.Context) error {
	h := fnv.New64a()
	h.Write([]byte("annex prune " + s.opts.Table))
	lock := int64(h.Sum64())
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.dbError(err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lock).Scan(&got); err != nil {
		return s.dbError(err)
	}
	if !got {
		return nil // another replica prunes
	}
	defer func() { _, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lock) }()
	for {
		var compacted, pruned int64
		if err := conn.QueryRow(ctx, s.sql.compaction).Scan(&compacted, &pruned); err != nil {
			return s.dbError(err)
		}
		if pruned >= compacted {
			return nil
		}
		hi := min(compacted, pruned+int64(s.opts.CompactionBatch))
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, s.sql.pruneOld, pruned, hi); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, s.sql.pruneDel, pruned, hi); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, s.sql.setPruned, hi)
			return err
		})
		if err != nil {
			return s.dbError(err)
		}
	}
}

// Start runs the periodic compaction until ctx is done or the store is
// closed, and returns nil then: every CompactionInterval it compacts at the
// revision that was current one interval earlier, so about one interval of
// history is kept, and rebuilds the counts if a writer left them behind. Replicas may all run it: compacting twice at one
// revision does nothing, and one replica prunes at a time. A negative
// interval returns at once.
func (s *Store) Start(ctx context.Context) error {
	if s.opts.CompactionInterval < 0 {
		return nil
	}
	t := time.NewTicker(s.opts.CompactionInterval)
	defer t.Stop()
	var prev uint64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return nil
		case <-t.C:
		}
		cur, err := s.CurrentRevision(ctx)
		if err == nil && prev != 0 {
			err = s.Compact(ctx, prev)
		}
		if err == nil {
			// An older annex may have written meanwhile.
			err = s.recount(ctx)
		}
		if err != nil {
			if ctx.Err() == nil && !s.isClosed() {
				s.opts.Logger.Warn("postgres compaction failed", zap.Error(err))
			}
			continue
		}
		prev = cur
	}
}
