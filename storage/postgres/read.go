// This file holds the reads: Get, List (at the latest revision or a past
// one, in pages, from one snapshot), Count and the revisions, and the byte
// helpers that splice a revision into an object.

package postgres

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

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

// decode turns the stored value of key at rev into an Object, and says
// whether its stored form is outdated (an older encryption key).
func (s *Store) decode(ctx context.Context, key string, stored []byte, rev uint64) (storage.Object, bool, error) {
	plain, stale, err := s.opts.Transformer.TransformFromStorage(ctx, stored, key)
	if err != nil {
		return storage.Object{}, false, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "transform from storage: " + err.Error()}
	}
	m, err := backend.DecodeMeta(plain)
	if err != nil {
		return storage.Object{}, false, &storage.Error{Err: storage.ErrInvalidObject, Key: key, Msg: "stored object: " + err.Error()}
	}
	if m.ResourceVersion != storage.FormatResourceVersion(rev) {
		// The bytes carry their revision; a row whose do not is not one
		// this store wrote.
		return storage.Object{}, false, &storage.Error{Err: storage.ErrInvalidObject, Key: key,
			Msg: "stored object has resourceVersion " + m.ResourceVersion + ", its revision is " + strconv.FormatUint(rev, 10)}
	}
	return storage.Object{Key: key, ResourceVersion: rev, Data: plain, Meta: m}, stale, nil
}

// revisions returns the current and the compacted revision.
func (s *Store) revisions(ctx context.Context) (cur, compacted uint64, err error) {
	var c, k int64
	err = s.retryRead(ctx, func() error { return s.pool.QueryRow(ctx, s.sql.current).Scan(&c, &k) })
	if err != nil {
		return 0, 0, s.dbError(err)
	}
	return uint64(c), uint64(k), nil
}

// CurrentRevision implements storage.RevisionReader: the revision of the
// last committed write, read from the database.
func (s *Store) CurrentRevision(ctx context.Context) (uint64, error) {
	if s.isClosed() {
		return 0, errClosed()
	}
	cur, _, err := s.revisions(ctx)
	return cur, err
}

// getLatest reads key's latest state and the store's revision in one
// statement.
func (s *Store) getLatest(ctx context.Context, key string) (cur uint64, o storage.Object, found, outdated bool, err error) {
	var c int64
	var rev *int64
	var val []byte
	if err := s.retryRead(ctx, func() error { return s.pool.QueryRow(ctx, s.sql.get, key).Scan(&c, &rev, &val) }); err != nil {
		return 0, storage.Object{}, false, false, s.dbError(err)
	}
	if rev == nil {
		return uint64(c), storage.Object{}, false, false, nil
	}
	o, outdated, err = s.decode(ctx, key, val, uint64(*rev))
	return uint64(c), o, err == nil, outdated, err
}

// Get implements storage.Interface. Every read is of the latest state
// ("0" allows any state; "N" fails when the store has not reached N).
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.Object, error) {
	defer s.observe(ctx, "get", key, time.Now())
	rv, err := backend.ParseGetOptions(key, opts)
	if err != nil {
		return storage.Object{}, err
	}
	if s.isClosed() {
		return storage.Object{}, errClosed()
	}
	cur, o, found, _, err := s.getLatest(ctx, key)
	if err != nil {
		return storage.Object{}, err
	}
	if rv.Revision > cur {
		return storage.Object{}, backend.TooLargeError(rv.Revision, cur)
	}
	if !found {
		return storage.Object{}, notFound(key)
	}
	return o, nil
}

// Count implements storage.Counter: the keys under prefix, one row of
// <t>_counts (or, while the counts are behind, counted on the latest
// state's primary key).
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	defer s.observe(ctx, "count", prefix, time.Now())
	pr, err := backend.PrefixRange(prefix)
	if err != nil {
		return 0, err
	}
	if s.isClosed() {
		return 0, errClosed()
	}
	var n int64
	err = s.retryRead(ctx, func() error {
		var fresh bool
		if err := s.pool.QueryRow(ctx, s.sql.counted, pr).Scan(&fresh, &n); err != nil || fresh {
			return err
		}
		return s.pool.QueryRow(ctx, s.sql.countRange, pr, prefixEnd(pr)).Scan(&n)
	})
	if err != nil {
		return 0, s.dbError(err)
	}
	return n, nil
}

// lowerBound turns a list's start key into a bound text can hold: a
// continue token's start is the last key plus a NUL, which is "after the
// last key".
func lowerBound(start string) (string, bool) {
	if k, ok := strings.CutSuffix(start, "\x00"); ok {
		return k, true
	}
	return start, false
}

// prefixEnd is the first key after every key that starts with prefix.
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\xff\xff\xff\xff" // no key starts with only 0xff bytes here
}

// List implements storage.Interface: backend.ParseListOptions, then one
// read-only snapshot.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	defer s.observe(ctx, "list", prefix, time.Now())
	req, err := backend.ParseListOptions(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	if s.isClosed() {
		return storage.ListResult{}, errClosed()
	}
	var res storage.ListResult
	err = s.retryRead(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var err error
			res, err = s.list(ctx, tx, req)
			return err
		})
	})
	var se *storage.Error
	if err != nil && !errors.As(err, &se) {
		err = s.dbError(err)
	}
	return res, err
}

// pageBatch is how many keys one query of a page reads.
const pageBatch = 500

// list reads req in tx: the latest state's keys merged with, for each key
// written after the revision read (a past state), the revision it had then.
func (s *Store) list(ctx context.Context, tx pgx.Tx, req backend.ListRequest) (storage.ListResult, error) {
	var c, k int64
	var counted bool
	if err := tx.QueryRow(ctx, s.sql.listState).Scan(&c, &k, &counted); err != nil {
		return storage.ListResult{}, err
	}
	cur, compacted := uint64(c), uint64(k)
	if err := req.CheckRevision(cur); err != nil {
		return storage.ListResult{}, err
	}
	read := cur
	if req.At != 0 {
		if req.At <= compacted {
			return storage.ListResult{}, req.ExpiredContinue(backend.ExpiredError(compacted))
		}
		read = req.At
	}
	end := prefixEnd(req.Prefix)
	// past: keys written after read, with their revision at read (0:
	// absent); few, unless read is far behind.
	past := map[string]uint64{}
	var pastKeys []string
	from, after := lowerBound(req.Start)
	if read < cur {
		q := s.sql.changed
		if after {
			q = s.sql.changedAfter
		}
		rows, err := tx.Query(ctx, q, from, end, int64(read))
		if err != nil {
			return storage.ListResult{}, err
		}
		for rows.Next() {
			var key string
			var prev int64
			if err := rows.Scan(&key, &prev); err != nil {
				rows.Close()
				return storage.ListResult{}, err
			}
			past[key] = uint64(prev)
			pastKeys = append(pastKeys, key)
		}
		if err := rows.Err(); err != nil {
			return storage.ListResult{}, err
		}
		sort.Strings(pastKeys)
	}
	res := storage.ListResult{ResourceVersion: read}
	m := merger{s: s, ctx: ctx, tx: tx, end: end, from: from, after: after, past: past, pastKeys: pastKeys}
	var last string
	for {
		if req.Limit > 0 && int64(len(res.Items)) >= req.Limit {
			break
		}
		want := pageBatch
		if req.Limit > 0 && req.Predicate == nil {
			want = int(min(req.Limit-int64(len(res.Items)), pageBatch))
		}
		batch, err := m.next(want)
		if err != nil {
			return storage.ListResult{}, err
		}
		if len(batch) == 0 {
			return res, nil
		}
		objs, err := s.values(ctx, tx, batch)
		if err != nil {
			return storage.ListResult{}, err
		}
		for i, o := range objs {
			if req.Limit > 0 && int64(len(res.Items)) >= req.Limit {
				m.unread(batch[i:])
				break
			}
			last = batch[i].key
			if req.Predicate == nil || req.Predicate.Matches(&o) {
				res.Items = append(res.Items, o)
			}
		}
	}
	// The page is full: is there anything after it?
	more, err := m.next(1)
	if err != nil {
		return storage.ListResult{}, err
	}
	if len(more) == 0 {
		return res, nil
	}
	n := int64(-1)
	if req.Predicate == nil {
		page := int64(len(res.Items))
		switch {
		case req.Remaining != nil && *req.Remaining >= page:
			// The previous page's count, at the same revision. The client
			// may have forged it: it is only reported back.
			n = *req.Remaining - page
		case req.Start == req.Prefix && read == cur && counted:
			// The first page of the latest state: the prefix's count.
			if err := tx.QueryRow(ctx, s.sql.countOf, req.Prefix).Scan(&n); err != nil {
				return storage.ListResult{}, err
			}
			n = max(n-page, 0)
		default:
			if n, err = s.remaining(ctx, tx, last, end, past, pastKeys); err != nil {
				return storage.ListResult{}, err
			}
		}
		res.RemainingItemCount = &n
	}
	tok, err := backend.EncodeContinueRemaining(last+"\x00", req.Prefix, read, n)
	if err != nil {
		return storage.ListResult{}, err
	}
	res.Continue = tok
	return res, nil
}

// keyRev is a key and its revision at the revision read.
type keyRev struct {
	key string
	rev uint64
}

// merger walks the state at the revision read in key order: the latest
// keys, with the past ones in their place.
type merger struct {
	s        *Store
	ctx      context.Context
	tx       pgx.Tx
	end      string
	from     string // the next latest key to read: from, or after from
	after    bool
	buf      []keyRev
	done     bool // no latest key at or after from
	past     map[string]uint64
	pastKeys []string
	pi       int
	pending  []keyRev // given back by unread
}

// unread gives keys back to be returned again by next.
func (m *merger) unread(ks []keyRev) { m.pending = append(append([]keyRev(nil), ks...), m.pending...) }

// next returns up to n keys of the state in order (fewer at the end).
func (m *merger) next(n int) ([]keyRev, error) {
	var out []keyRev
	for len(out) < n && len(m.pending) > 0 {
		out = append(out, m.pending[0])
		m.pending = m.pending[1:]
	}
	for len(out) < n {
		if len(m.buf) == 0 && !m.done {
			if err := m.fill(max(n-len(out), 16)); err != nil {
				return nil, err
			}
		}
		var kr keyRev
		switch {
		case len(m.buf) > 0 && (m.pi >= len(m.pastKeys) || m.buf[0].key < m.pastKeys[m.pi]):
			kr = m.buf[0]
			m.buf = m.buf[1:]
			if _, changed := m.past[kr.key]; changed {
				continue // met in pastKeys already (both are sorted)
			}
		case len(m.buf) > 0 && m.buf[0].key == m.pastKeys[m.pi]:
			m.buf = m.buf[1:]
			kr = keyRev{m.pastKeys[m.pi], m.past[m.pastKeys[m.pi]]}
			m.pi++
		case m.pi < len(m.pastKeys):
			kr = keyRev{m.pastKeys[m.pi], m.past[m.pastKeys[m.pi]]}
			m.pi++
		default:
			return out, nil
		}
		if kr.rev != 0 {
			out = append(out, kr)
		}
	}
	return out, nil
}

// fill reads the next n latest keys.
func (m *merger) fill(n int) error {
	q := m.s.sql.kvPage
	if m.after {
		q = m.s.sql.kvPageAfter
	}
	rows, err := m.tx.Query(m.ctx, q, m.from, m.end, n)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var kr keyRev
		var rev int64
		if err := rows.Scan(&kr.key, &rev); err != nil {
			return err
		}
		kr.rev = uint64(rev)
		m.buf = append(m.buf, kr)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(m.buf) < n {
		m.done = true
	} else {
		m.from, m.after = m.buf[len(m.buf)-1].key, true
	}
	return nil
}

// values reads the objects of ks, in ks's order.
func (s *Store) values(ctx context.Context, tx pgx.Tx, ks []keyRev) ([]storage.Object, error) {
	revs := make([]int64, len(ks))
	for i, kr := range ks {
		revs[i] = int64(kr.rev)
	}
	rows, err := tx.Query(ctx, s.sql.values, revs)
	if err != nil {
		return nil, err
	}
	vals := make(map[uint64][]byte, len(ks))
	for rows.Next() {
		var rev int64
		var v []byte
		if err := rows.Scan(&rev, &v); err != nil {
			rows.Close()
			return nil, err
		}
		vals[uint64(rev)] = v
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]storage.Object, len(ks))
	for i, kr := range ks {
		v, ok := vals[kr.rev]
		if !ok {
			return nil, &storage.Error{Err: storage.ErrInvalidObject, Key: kr.key, Msg: "the log has no row for revision " + strconv.FormatUint(kr.rev, 10)}
		}
		o, _, err := s.decode(ctx, kr.key, v, kr.rev)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

// remaining counts the keys after last at the revision read: the latest
// ones, corrected by the keys written since.
func (s *Store) remaining(ctx context.Context, tx pgx.Tx, last, end string, past map[string]uint64, pastKeys []string) (int64, error) {
	var n int64
	if err := tx.QueryRow(ctx, s.sql.countFrom, last, end).Scan(&n); err != nil {
		return 0, err
	}
	var after []string
	for _, k := range pastKeys {
		if k > last {
			after = append(after, k)
			if past[k] != 0 {
				n++ // there at read
			}
		}
	}
	if len(after) == 0 {
		return n, nil
	}
	rows, err := tx.Query(ctx, s.sql.present, after)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for rows.Next() {
		n-- // counted among the latest, but its state at read is the past one
	}
	return n, rows.Err()
}
