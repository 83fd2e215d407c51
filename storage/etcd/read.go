// This file holds the reads: Get and List with their resource version
// modes, pagination at one revision, and the compacted-revision errors.

package etcd

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// expired returns ErrExpired with the compacted revision in annex's terms
// (etcd's compact revision minus one), looked up from etcd.
func (s *Store) expired(ctx context.Context) *storage.Error {
	return backend.ExpiredError(s.compactedRevision(ctx))
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

// Get implements storage.Interface. Every read is linearizable ("0" allows
// any state; the latest is one); "N" fails when the store has not reached N.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.Object, error) {
	defer s.observe(ctx, "get", key, time.Now())
	rv, err := backend.ParseGetOptions(key, opts)
	if err != nil {
		return storage.Object{}, err
	}
	if s.closed.Load() {
		return storage.Object{}, errClosed()
	}
	// "0" reads linearizably too: a serializable read is only faster on a
	// multi-member etcd, and kine refuses it; the latest state is one that
	// "any state" allows.
	resp, err := s.client.Get(ctx, s.etcdKey(key))
	if err != nil {
		return storage.Object{}, s.mapError(ctx, err, key)
	}
	if cur := uint64(resp.Header.Revision); rv.Revision > cur {
		return storage.Object{}, backend.TooLargeError(rv.Revision, cur)
	}
	st, err := s.fromKVs(ctx, key, resp.Kvs)
	if err != nil {
		return storage.Object{}, err
	}
	if !st.Exists {
		return storage.Object{}, notFound(key)
	}
	return st.Object, nil
}

// List implements storage.Interface: backend.ParseListOptions, then ranges
// at one revision.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	defer s.observe(ctx, "list", prefix, time.Now())
	req, err := backend.ParseListOptions(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	if s.closed.Load() {
		return storage.ListResult{}, errClosed()
	}
	return s.list(ctx, req)
}

// maxBatch caps the keys one etcd range of a filtered page asks for.
const maxBatch = 10000

// list reads req page by page from etcd, every range at the revision of the
// first (or the requested one), until the page has req.Limit matching
// objects or the prefix ends.
func (s *Store) list(ctx context.Context, req backend.ListRequest) (storage.ListResult, error) {
	end := clientv3.GetPrefixRangeEnd(s.etcdKey(req.Prefix))
	from := s.etcdKey(req.Start)
	read := int64(req.At)
	batch := req.Limit
	var res storage.ListResult
	var last string // storage key of the last key looked at
	for first := true; ; first = false {
		ops := []clientv3.OpOption{clientv3.WithRange(end)}
		if read > 0 {
			ops = append(ops, clientv3.WithRev(read))
		}
		if batch > 0 {
			ops = append(ops, clientv3.WithLimit(batch))
		}
		resp, err := s.client.Get(ctx, from, ops...)
		if err != nil {
			return storage.ListResult{}, s.listError(ctx, err, req)
		}
		if first {
			if err := req.CheckRevision(uint64(resp.Header.Revision)); err != nil {
				return storage.ListResult{}, err
			}
			if read == 0 {
				read = resp.Header.Revision
			}
			res.ResourceVersion = uint64(read)
		}
		full := false
		consumed := 0
		for _, kv := range resp.Kvs {
			if req.Limit > 0 && int64(len(res.Items)) >= req.Limit {
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
			if req.Predicate == nil || req.Predicate.Matches(&o) {
				res.Items = append(res.Items, o)
			}
		}
		if req.Limit > 0 && int64(len(res.Items)) >= req.Limit {
			full = true
		}
		more := consumed < len(resp.Kvs) || resp.More
		if !more {
			return res, nil
		}
		if full {
			// remaining: the keys after last at this revision.
			tok, err := backend.EncodeContinue(last+"\x00", req.Prefix, uint64(read))
			if err != nil {
				return storage.ListResult{}, err
			}
			res.Continue = tok
			if req.Predicate == nil {
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
func (s *Store) listError(ctx context.Context, err error, req backend.ListRequest) error {
	e := s.mapError(ctx, err, req.Prefix)
	if se, ok := e.(*storage.Error); ok && se.Err == storage.ErrExpired {
		return req.ExpiredContinue(se)
	}
	return e
}
