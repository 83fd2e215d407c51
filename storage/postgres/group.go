// This file holds group commit: the writes of one store that wait at the
// same moment share one transaction, so they share its round trips, its
// hold of the revision row and its WAL flush.
//
// One goroutine per store (the committer) takes every write queued at that
// moment (at most maxGroup, about maxGroupBytes), and commits them in one
// transaction of two pipelined round trips:
//
//	BEGIN; lock the revision row; read the revisions of the group's keys
//	(in Go: each write in queue order is checked against the state the
//	writes before it leave, a write that finds its key in another state is
//	a conflict and takes no revision, the others take the next revisions,
//	spliced into their bytes and transformed for storage)
//	the writes' statements; advance the revision row; one NOTIFY; COMMIT
//
// A lone write waits for no timer: the committer takes what is queued,
// commits it, and looks again. A write is answered only after COMMIT
// returned. When a statement fails, the transaction rolls back, and each
// write of the group is committed again alone, so that only the write at
// fault gets the error.

package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

const (
	// maxGroup is the most writes one transaction commits.
	maxGroup = 128
	// maxGroupBytes bounds the bytes of a group's values (a group always
	// takes one write, however large).
	maxGroupBytes = 8 << 20
)

// pending is a write waiting for the committer.
type pending struct {
	ctx  context.Context
	w    write
	done chan result // buffered: the committer never waits for the writer
}

// result is what the committer answers a write.
type result struct {
	out      storage.Object
	conflict bool // the key was not in the expected state; nothing written
	err      error
}

// submit queues w for the committer and waits for its answer; ctx ending
// or the store closing ends the wait (the write may commit all the same,
// as a write whose connection breaks during COMMIT may).
func (s *Store) submit(ctx context.Context, w write) result {
	p := &pending{ctx: ctx, w: w, done: make(chan result, 1)}
	select {
	case s.writes <- p:
	case <-ctx.Done():
		return result{err: ctx.Err()}
	case <-s.quit:
		return result{err: errClosed()}
	}
	select {
	case r := <-p.done:
		return r
	case <-ctx.Done():
		return result{err: ctx.Err()}
	case <-s.committerDone:
		// Queued after the committer's last look.
		select {
		case r := <-p.done:
			return r
		default:
			return result{err: errClosed()}
		}
	}
}

// runCommitter is the committer goroutine: take what is queued, commit it,
// repeat until Close; then answer what is still queued with ErrClosed.
func (s *Store) runCommitter() {
	defer s.running.Done()
	defer close(s.committerDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	group := make([]*pending, 0, maxGroup)
	for {
		var first *pending
		if !s.isClosed() { // checked first: the select may pick either
			select {
			case first = <-s.writes:
			case <-s.quit:
			}
		}
		if first == nil {
			for {
				select {
				case p := <-s.writes:
					p.done <- result{err: errClosed()}
				default:
					return
				}
			}
		}
		group = append(group[:0], first)
		size := len(group[0].w.data)
	fill:
		for len(group) < maxGroup && size < maxGroupBytes {
			select {
			case p := <-s.writes:
				group = append(group, p)
				size += len(p.w.data)
			default:
				break fill
			}
		}
		// A writer that gave up before its turn is not written.
		live := group[:0]
		for _, p := range group {
			if err := p.ctx.Err(); err != nil {
				p.done <- result{err: err}
				continue
			}
			live = append(live, p)
		}
		if len(live) > 0 {
			s.commitGroup(ctx, live)
		}
		clear(group) // drop the references to answered writes
	}
}

// commitGroup commits ps in one transaction and answers each. ctx ends when
// the store closes.
func (s *Store) commitGroup(ctx context.Context, ps []*pending) {
	ctx, cancel := groupContext(ctx, ps)
	defer cancel()
	rs, err := s.commitOnce(ctx, ps)
	if err == nil {
		for i, p := range ps {
			p.done <- rs[i]
		}
		return
	}
	if len(ps) > 1 && rolledBack(err) {
		// Nothing was written: commit each alone, so that the others do
		// not fail with one write's error.
		for _, p := range ps {
			s.commitGroup(ctx, []*pending{p})
		}
		return
	}
	// Not sent (the writers retry), or unknown (a connection lost during
	// COMMIT): every write of the group gets the error.
	for _, p := range ps {
		p.done <- result{err: err}
	}
}

// groupContext is ctx with the latest deadline of the group's writers, when
// each has one: the transaction outlives none of them by much, and fails
// none of them early.
func groupContext(ctx context.Context, ps []*pending) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, p := range ps {
		d, ok := p.ctx.Deadline()
		if !ok {
			return context.WithCancel(ctx)
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}

// rolledBack reports whether err is the server's refusal of a statement
// (severity ERROR): the transaction rolled back and nothing of it was
// written. A lost connection, or a FATAL or PANIC during COMMIT, leaves the
// outcome unknown.
func rolledBack(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Severity == "ERROR"
}

// commitOnce is one attempt to commit ps in one transaction. It returns
// each write's result (a conflict, a write's own error before any
// statement, or the object written), or the error that failed the
// transaction.
func (s *Store) commitOnce(ctx context.Context, ps []*pending) ([]result, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A connection still in a transaction (a failure between the round
	// trips) is closed by Release, not given back.
	defer conn.Release()

	keys := make([]string, 0, len(ps))
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		if !seen[p.w.key] {
			seen[p.w.key] = true
			keys = append(keys, p.w.key)
		}
	}
	var rev int64
	state := make(map[string]int64, len(keys)) // key → revision, for the keys present
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(s.sql.lock).QueryRow(func(r pgx.Row) error { return r.Scan(&rev) })
	b.Queue(s.sql.states, keys).Query(func(rows pgx.Rows) error {
		var k string
		var r int64
		_, err := pgx.ForEachRow(rows, []any{&k, &r}, func() error {
			state[k] = r
			return nil
		})
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		rollback(conn)
		return nil, err
	}

	rs := make([]result, len(ps))
	b = &pgx.Batch{}
	next := rev
	counts := map[string]int64{} // prefix → change of its count
	for i, p := range ps {
		w := &p.w
		r := next + 1
		cur, exists := state[w.key]
		switch w.kind {
		case opPut:
			final, err := backend.SpliceResourceVersion(w.data, uint64(r))
			if err != nil {
				rs[i].err = withKey(err, w.key)
				continue
			}
			stored, err := s.opts.Transformer.TransformToStorage(p.ctx, final, w.key)
			if err != nil {
				rs[i].err = &storage.Error{Err: storage.ErrInvalidObject, Key: w.key, Msg: "transform to storage: " + err.Error()}
				continue
			}
			if w.expect == 0 {
				if exists {
					rs[i].conflict = true
					continue
				}
				b.Queue(s.sql.create, w.key, r, stored)
			} else {
				if !exists || cur != int64(w.expect) {
					rs[i].conflict = true
					continue
				}
				b.Queue(s.sql.update, w.key, r, stored, int64(w.expect))
			}
			meta := w.meta
			meta.ResourceVersion = storage.FormatResourceVersion(uint64(r))
			rs[i].out = storage.Object{Key: w.key, ResourceVersion: uint64(r), Data: final, Meta: meta}
			if !exists {
				countKey(counts, w.key, 1)
			}
			state[w.key] = r
		case opDelete:
			if !exists || cur != int64(w.last.ResourceVersion) {
				rs[i].conflict = true
				continue
			}
			out, err := backend.AtRevision(w.key, &w.last, uint64(r))
			if err != nil {
				rs[i].err = err
				continue
			}
			b.Queue(s.sql.remove, w.key, r, int64(w.last.ResourceVersion))
			rs[i].out = out
			countKey(counts, w.key, -1)
			delete(state, w.key)
		}
		next = r
	}
	if next == rev {
		// Nothing to write: every write conflicted or failed.
		rollback(conn)
		return rs, nil
	}
	if prefixes, deltas := countChanges(counts); len(prefixes) > 0 {
		b.Queue(s.sql.addCounts, prefixes, deltas)
	}
	b.Queue(s.sql.advance, next)
	b.Queue(s.sql.notify, s.sql.channel, strconv.FormatInt(next, 10))
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		rollback(conn)
		return nil, err
	}
	// This store's watchers need not wait for the notification's trip.
	s.feed.poke()
	return rs, nil
}

// rollback ends the failed transaction of conn, or closes conn (Release
// then discards it).
func rollback(conn *pgxpool.Conn) {
	pc := conn.Conn().PgConn()
	if pc.IsClosed() || pc.TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = pc.Close(ctx)
	}
}

// countKey adds d to the count of every prefix of key that ends in "/".
func countKey(counts map[string]int64, key string, d int64) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			counts[key[:i+1]] += d
		}
	}
}

// countChanges returns the prefixes whose count changes, sorted (replicas
// lock the rows of <t>_counts in one order), and the changes.
func countChanges(counts map[string]int64) ([]string, []int64) {
	prefixes := make([]string, 0, len(counts))
	for p, d := range counts {
		if d != 0 {
			prefixes = append(prefixes, p)
		}
	}
	slices.Sort(prefixes)
	deltas := make([]int64, len(prefixes))
	for i, p := range prefixes {
		deltas[i] = counts[p]
	}
	return prefixes, deltas
}

// recount rebuilds <t>_counts when it is not right at the current revision
// (tables an older annex wrote, or one that wrote since), holding the
// revision row, so writers wait: a scan of the keys, once.
func (s *Store) recount(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var fresh bool
		if err := tx.QueryRow(ctx, `SELECT revision = counted FROM `+pgx.Identifier{s.opts.Table + "_revision"}.Sanitize()+` FOR UPDATE`).Scan(&fresh); err != nil {
			return err
		}
		if fresh {
			return nil
		}
		for _, q := range s.sql.recount {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("recount: %w", err)
			}
		}
		return nil
	})
}
