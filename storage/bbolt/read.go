// This file holds the reads: Get, List (latest and snapshot reads at an older
// revision rebuilt from the event log), and Count.

package bbolt

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
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

func tooLarge(rv, cur uint64) error {
	return &storage.Error{Err: storage.ErrTooLargeResourceVersion, ResourceVersion: cur,
		Msg: fmt.Sprintf("Too large resource version: %d, current: %d", rv, cur)}
}

func expired(compacted uint64) error {
	return &storage.Error{Err: storage.ErrExpired, ResourceVersion: compacted,
		Msg: fmt.Sprintf("required revision has been compacted (compacted revision %d)", compacted)}
}

func invalidRV(msg string) error {
	return &storage.Error{Err: storage.ErrInvalidResourceVersion, Msg: msg}
}

// Get implements storage.Interface. Every resource version mode is served
// from the latest state, which is never older than what was asked.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.Object, error) {
	if err := storage.ValidateKey(key); err != nil {
		return storage.Object{}, err
	}
	rv, err := storage.ParseResourceVersion(opts.ResourceVersion)
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
			return tooLarge(rv.Revision, cur)
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

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	pr, err := storage.PrefixRange(prefix)
	if err != nil {
		return storage.ListResult{}, err
	}
	switch opts.ResourceVersionMatch {
	case storage.MatchDefault, storage.MatchExact, storage.MatchNotOlderThan:
	default:
		return storage.ListResult{}, invalidRV(fmt.Sprintf("unsupported resourceVersionMatch %q", opts.ResourceVersionMatch))
	}
	rv, err := storage.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return storage.ListResult{}, err
	}
	if opts.Limit < 0 {
		opts.Limit = 0
	}
	if s.isClosed() {
		return storage.ListResult{}, errClosed()
	}
	req := listRequest{prefix: pr, start: pr, limit: opts.Limit, pred: opts.Predicate}
	switch {
	case opts.Continue != "":
		if opts.ResourceVersionMatch != "" {
			return storage.ListResult{}, invalidRV("resourceVersionMatch is forbidden when continue is provided")
		}
		if !rv.Unset && rv.Revision != 0 {
			return storage.ListResult{}, invalidRV("specifying resource version is not allowed when using continue")
		}
		start, tokRev, err := storage.DecodeContinue(opts.Continue, pr)
		if err != nil {
			return storage.ListResult{}, err
		}
		req.start = start
		if tokRev > 0 {
			req.at, req.fromToken = uint64(tokRev), true
		}
	case opts.ResourceVersionMatch != "" && rv.Unset:
		return storage.ListResult{}, invalidRV("resourceVersionMatch is forbidden unless resourceVersion is provided")
	case opts.ResourceVersionMatch == storage.MatchExact && rv.Revision == 0:
		return storage.ListResult{}, invalidRV("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")
	case rv.Revision != 0 && (opts.ResourceVersionMatch == storage.MatchExact ||
		(opts.ResourceVersionMatch == storage.MatchDefault && opts.Limit > 0)):
		req.at = rv.Revision
	case rv.Revision != 0:
		req.notOlder = rv.Revision
	}
	return s.list(req)
}

// listRequest is a validated List.
type listRequest struct {
	prefix string // as storage.PrefixRange returns
	start  string // first key to consider (>= prefix)
	// at is the revision to read at exactly; 0 means the latest.
	at uint64
	// fromToken says at came from a continue token (ErrExpired then carries
	// a fresh token).
	fromToken bool
	// notOlder is the revision the latest state must have reached.
	notOlder uint64
	limit    int64
	pred     storage.Predicate
}

func (s *Store) list(req listRequest) (storage.ListResult, error) {
	var res storage.ListResult
	err := s.db.View(func(tx *bolt.Tx) error {
		cur, compacted := readMeta(tx)
		read := cur
		switch {
		case req.notOlder > cur:
			return tooLarge(req.notOlder, cur)
		case req.at > cur:
			return tooLarge(req.at, cur)
		case req.at != 0 && req.at <= compacted:
			e := expired(compacted).(*storage.Error)
			if req.fromToken {
				e.Msg = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
				tok, err := storage.EncodeContinue(req.start, req.prefix, -1)
				if err != nil {
					return err
				}
				e.Continue = tok
			}
			return e
		case req.at != 0:
			read = req.at
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
func scan(tr value.Transformer, tx *bolt.Tx, req listRequest, read, cur uint64) (storage.ListResult, error) {
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
			if !bytes.HasPrefix(e.key, []byte(req.prefix)) || string(e.key) < req.start {
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
	k, v := c.Seek([]byte(req.start))
	pi := 0
	// next returns the next key of the snapshot and its revision at read.
	next := func() (string, uint64, bool) {
		for {
			curOK := k != nil && bytes.HasPrefix(k, []byte(req.prefix))
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
		if req.limit > 0 && int64(len(res.Items)) >= req.limit {
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
		if req.pred == nil || req.pred.Matches(&o) {
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
		if req.pred != nil {
			break // only whether there is more matters
		}
	}
	if remaining == 0 {
		return res, nil
	}
	tok, err := storage.EncodeContinue(last+"\x00", req.prefix, int64(read))
	if err != nil {
		return storage.ListResult{}, err
	}
	res.Continue = tok
	if req.pred == nil {
		res.RemainingItemCount = &remaining
	}
	return res, nil
}

// Count implements storage.Counter.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	pr, err := storage.PrefixRange(prefix)
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
