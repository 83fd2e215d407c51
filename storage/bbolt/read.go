// This file holds the reads: Get, List (latest and snapshot reads at an older
// revision rebuilt from the event log), and Count.

package bbolt

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
	"github.com/annexapi/annex/storage/value"
)

// readMeta returns the revision and compacted revision as of tx. The
// revision is that of the last log entry (compaction never removes it), or
// the one recorded when the file was created while the log is empty.
func readMeta(tx *bolt.Tx) (rev, compacted uint64) {
	m := tx.Bucket([]byte(bucketMeta))
	rev = getUint64(m.Get([]byte(keyRevision)))
	if k, _ := tx.Bucket([]byte(bucketEvents)).Cursor().Last(); k != nil {
		rev = max(rev, getUint64(k))
	}
	return rev, getUint64(m.Get([]byte(keyCompacted)))
}

// Get implements storage.Interface. Every resource version mode is served
// from the latest state, which is never older than what was asked.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.Object, error) {
	defer s.observe(ctx, "get", key, time.Now())
	rv, err := backend.ParseGetOptions(key, opts)
	if err != nil {
		return storage.Object{}, err
	}
	if s.isClosed() {
		return storage.Object{}, errClosed()
	}
	var obj storage.Object
	err = s.db.View(func(tx *bolt.Tx) error {
		cur, _ := readMeta(tx)
		if rv.Revision > cur {
			return backend.TooLargeError(rv.Revision, cur)
		}
		rev, data, err := current(s.opts.Transformer, tx, key)
		if err != nil {
			return err
		}
		if rev == 0 {
			return notFound(key)
		}
		obj, err = makeObject(key, rev, data)
		return err
	})
	return obj, err
}

// List implements storage.Interface: backend.ParseListOptions, then one read
// transaction.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	defer s.observe(ctx, "list", prefix, time.Now())
	req, err := backend.ParseListOptions(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	if s.isClosed() {
		return storage.ListResult{}, errClosed()
	}
	return s.list(req)
}

func (s *Store) list(req backend.ListRequest) (storage.ListResult, error) {
	var res storage.ListResult
	err := s.db.View(func(tx *bolt.Tx) error {
		cur, compacted := readMeta(tx)
		if err := req.CheckRevision(cur); err != nil {
			return err
		}
		read := cur
		switch {
		case req.At != 0 && req.At <= compacted:
			return req.ExpiredContinue(backend.ExpiredError(compacted))
		case req.At != 0:
			read = req.At
		}
		var err error
		res, err = scan(s.opts.Transformer, tx, req, read, cur)
		return err
	})
	return res, err
}

// scan lists req at revision read (cur is the latest): the current objects
// merged with, for each key changed after read, the state it had before its
// first change after read.
func scan(tr value.Transformer, tx *bolt.Tx, req backend.ListRequest, read, cur uint64) (storage.ListResult, error) {
	evs := tx.Bucket([]byte(bucketEvents))
	// past maps keys changed after read to their revision at read (0:
	// absent).
	var past map[string]uint64
	var pastKeys []string
	if read < cur {
		past = map[string]uint64{}
		c := evs.Cursor()
		for k, v := c.Seek(revKey(read + 1)); k != nil; k, v = c.Next() {
			e, err := decodeEntry(v)
			if err != nil {
				return storage.ListResult{}, &storage.Error{Err: storage.ErrInvalidObject, Msg: "event log: " + err.Error()}
			}
			if !bytes.HasPrefix(e.key, []byte(req.Prefix)) || string(e.key) < req.Start {
				continue
			}
			if _, seen := past[string(e.key)]; seen {
				continue
			}
			past[string(e.key)] = e.prevRev
			pastKeys = append(pastKeys, string(e.key))
		}
		sort.Strings(pastKeys)
	}

	res := storage.ListResult{ResourceVersion: read}
	logc := evs.Cursor()
	c := tx.Bucket([]byte(bucketObjects)).Cursor()
	k, v := c.Seek([]byte(req.Start))
	pi := 0
	// next returns the next key of the snapshot and its revision at read.
	next := func() (string, uint64, bool) {
		for {
			curOK := k != nil && bytes.HasPrefix(k, []byte(req.Prefix))
			if !curOK && pi >= len(pastKeys) {
				return "", 0, false
			}
			var key string
			var rev uint64
			switch {
			case curOK && (pi >= len(pastKeys) || string(k) < pastKeys[pi]):
				// Both are sorted: a key changed after read would have
				// been met in pastKeys already.
				key, rev = string(k), getUint64(v)
				k, v = c.Next()
			case curOK && string(k) == pastKeys[pi]:
				key, rev = pastKeys[pi], past[pastKeys[pi]]
				k, v = c.Next()
				pi++
			default:
				key, rev = pastKeys[pi], past[pastKeys[pi]]
				pi++
			}
			if rev == 0 {
				continue // absent at read
			}
			return key, rev, true
		}
	}
	var last string
	for {
		if req.Limit > 0 && int64(len(res.Items)) >= req.Limit {
			break
		}
		key, rev, ok := next()
		if !ok {
			return res, nil
		}
		last = key
		o, err := objectAt(tr, logc, key, rev)
		if err != nil {
			return storage.ListResult{}, err
		}
		if req.Predicate == nil || req.Predicate.Matches(&o) {
			res.Items = append(res.Items, o)
		}
	}
	// The page is full: is there anything after it?
	var remaining int64
	for {
		if _, _, ok := next(); !ok {
			break
		}
		remaining++
		if req.Predicate != nil {
			break // only whether there is more matters
		}
	}
	if remaining == 0 {
		return res, nil
	}
	tok, err := backend.EncodeContinue(last+"\x00", req.Prefix, read)
	if err != nil {
		return storage.ListResult{}, err
	}
	res.Continue = tok
	if req.Predicate == nil {
		res.RemainingItemCount = &remaining
	}
	return res, nil
}

// Count implements storage.Counter.
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
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(bucketObjects)).Cursor()
		for k, _ := c.Seek([]byte(pr)); k != nil && strings.HasPrefix(string(k), pr); k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}
