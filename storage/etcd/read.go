// This file holds the reads: Get and List with their resource version
// modes, pagination at one revision, and the compacted-revision errors.

package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/annexapi/annex/storage"
)

func invalidRV(msg string) error {
	return &storage.Error{Err: storage.ErrInvalidResourceVersion, Msg: msg}
}

// expired returns ErrExpired with the compacted revision in annex's terms
// (etcd's compact revision minus one), looked up from etcd.
func (s *Store) expired(ctx context.Context) *storage.Error {
	c := s.compactedRevision(ctx)
	return &storage.Error{Err: storage.ErrExpired, ResourceVersion: c,
		Msg: fmt.Sprintf("required revision has been compacted (compacted revision %d)", c)}
}

// compactedRevision asks etcd for its compact revision the one way etcd
// tells it: a watch from revision 1 is cancelled with the compact revision.
// It returns annex's compacted revision (etcd's minus one), or 0 when etcd
// has not compacted (or did not answer within a few seconds).
func (s *Store) compactedRevision(ctx context.Context) uint64 {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx = clientv3.WithRequireLeader(ctx)
	wch := s.client.Watch(ctx, s.opts.CompactionKey+"/compacted-probe", clientv3.WithRev(1))
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case resp, ok := <-wch:
		if ok && resp.CompactRevision > 1 {
			return uint64(resp.CompactRevision - 1)
		}
	case <-t.C:
	}
	return 0
}

// Get implements storage.Interface. "" reads linearizably, "0" serializably
// (any state the member has), "N" linearizably and fails when the store has
// not reached N.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.Object, error) {
	if err := storage.ValidateKey(key); err != nil {
		return storage.Object{}, err
	}
	rv, err := storage.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return storage.Object{}, err
	}
	if s.closed.Load() {
		return storage.Object{}, errClosed()
	}
	var ops []clientv3.OpOption
	if !rv.Unset && rv.Revision == 0 {
		ops = append(ops, clientv3.WithSerializable())
	}
	resp, err := s.client.Get(ctx, s.etcdKey(key), ops...)
	if err != nil {
		return storage.Object{}, s.mapError(ctx, err, key)
	}
	if cur := uint64(resp.Header.Revision); rv.Revision > cur {
		return storage.Object{}, tooLarge(rv.Revision, cur)
	}
	o, exists, _, err := s.fromKVs(ctx, key, resp.Kvs)
	if err != nil {
		return storage.Object{}, err
	}
	if !exists {
		return storage.Object{}, notFound(key)
	}
	return o, nil
}

// listRequest is a validated List.
type listRequest struct {
	prefix string // as storage.PrefixRange returns
	start  string // first key to consider (>= prefix)
	// at is the revision to read at exactly; 0 means the latest.
	at uint64
	// fromToken says at came from a continue token.
	fromToken bool
	// notOlder is the revision the latest state must have reached.
	notOlder uint64
	// anyState allows a serializable read ("0").
	anyState bool
	limit    int64
	pred     storage.Predicate
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
	if s.closed.Load() {
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
	case !rv.Unset:
		req.anyState = true
	}
	return s.list(ctx, req)
}

// maxBatch caps the keys one etcd range of a filtered page asks for.
const maxBatch = 10000

// list reads req page by page from etcd, every range at the revision of the
// first (or the requested one), until the page has req.limit matching
// objects or the prefix ends.
func (s *Store) list(ctx context.Context, req listRequest) (storage.ListResult, error) {
	end := clientv3.GetPrefixRangeEnd(s.etcdKey(req.prefix))
	from := s.etcdKey(req.start)
	read := int64(req.at)
	batch := req.limit
	var res storage.ListResult
	var last string // storage key of the last key looked at
	for first := true; ; first = false {
		ops := []clientv3.OpOption{clientv3.WithRange(end)}
		if read > 0 {
			ops = append(ops, clientv3.WithRev(read))
		} else if req.anyState {
			ops = append(ops, clientv3.WithSerializable())
		}
		if batch > 0 {
			ops = append(ops, clientv3.WithLimit(batch))
		}
		resp, err := s.client.Get(ctx, from, ops...)
		if err != nil {
			return storage.ListResult{}, s.listError(ctx, err, req)
		}
		if first {
			cur := uint64(resp.Header.Revision)
			switch {
			case req.notOlder > cur:
				return storage.ListResult{}, tooLarge(req.notOlder, cur)
			case req.at > cur:
				return storage.ListResult{}, tooLarge(req.at, cur)
			}
			if read == 0 {
				read = resp.Header.Revision
			}
			res.ResourceVersion = uint64(read)
		}
		full := false
		consumed := 0
		for _, kv := range resp.Kvs {
			if req.limit > 0 && int64(len(res.Items)) >= req.limit {
				full = true
				break
			}
			consumed++
			key := s.storageKey(kv.Key)
			last = key
			o, err := s.decode(ctx, key, kv.Value, kv.ModRevision)
			if err != nil {
				return storage.ListResult{}, err
			}
			if req.pred == nil || req.pred.Matches(&o) {
				res.Items = append(res.Items, o)
			}
		}
		if req.limit > 0 && int64(len(res.Items)) >= req.limit {
			full = true
		}
		more := consumed < len(resp.Kvs) || resp.More
		if !more {
			return res, nil
		}
		if full {
			// remaining: the keys after last at this revision.
			tok, err := storage.EncodeContinue(last+"\x00", req.prefix, read)
			if err != nil {
				return storage.ListResult{}, err
			}
			res.Continue = tok
			if req.pred == nil {
				// Count is the number of keys in [from, end) at read.
				rem := resp.Count - int64(consumed)
				res.RemainingItemCount = &rem
			}
			return res, nil
		}
		// The predicate left the page short: read on from after last.
		from = s.etcdKey(last + "\x00")
		if batch < maxBatch {
			batch = min(batch*2, maxBatch)
		}
	}
}

// listError maps a list's etcd error; an expired continue token's error
// carries a fresh inconsistent token.
func (s *Store) listError(ctx context.Context, err error, req listRequest) error {
	e := s.mapError(ctx, err, req.prefix)
	se, ok := e.(*storage.Error)
	if !ok || se.Err != storage.ErrExpired || !req.fromToken {
		return e
	}
	se.Msg = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
	tok, terr := storage.EncodeContinue(req.start, req.prefix, -1)
	if terr != nil {
		return terr
	}
	se.Continue = tok
	return se
}
