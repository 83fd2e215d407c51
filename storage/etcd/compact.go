// This file holds compaction: Compact on demand and the periodic compactor
// that one replica runs per interval.

package etcd

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Compact implements storage.Compactor: it expires revision and everything
// before it by compacting etcd at revision+1 (etcd keeps its compact
// revision readable). A revision at or beyond the current one is lowered to
// the current one minus one, so the latest state stays readable. Compacting
// at or below the compacted revision does nothing.
func (s *Store) Compact(ctx context.Context, revision uint64) error {
	if s.closed.Load() {
		return errClosed()
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	if revision >= cur {
		revision = cur - 1
	}
	if revision == 0 {
		return nil
	}
	return s.compactEtcd(ctx, int64(revision)+1)
}

// compactEtcd compacts etcd at rev (etcd's meaning); an already compacted
// revision is not an error.
func (s *Store) compactEtcd(ctx context.Context, rev int64) error {
	_, err := s.client.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return s.mapError(ctx, err, "")
	}
	return nil
}

// Start runs the periodic compactor until ctx is done, and returns nil
// then. Every Options.CompactionInterval each replica tries a
// compare-and-swap on the version of the compaction key; the winner
// compacts etcd at the revision it recorded at the previous interval, so
// about one interval of history is kept and one replica compacts per
// interval (kube-apiserver's scheme, on the same key by default). A
// negative interval returns at once.
func (s *Store) Start(ctx context.Context) error {
	if s.opts.CompactionInterval < 0 {
		return nil
	}
	t := time.NewTicker(s.opts.CompactionInterval)
	defer t.Stop()
	var version, rev int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return nil
		case <-t.C:
		}
		v, r, err := s.compactOnce(ctx, version, rev)
		if err != nil {
			if ctx.Err() == nil {
				s.opts.Logger.Warn("etcd compaction failed", zap.Error(err))
			}
			continue
		}
		version, rev = v, r
	}
}

// compactOnce is one round of the periodic compactor: version is the
// compaction key's version this replica last saw, rev the revision it
// recorded then. It returns the version and revision for the next round.
// When the swap wins and rev is not 0, it compacts etcd at rev.
func (s *Store) compactOnce(ctx context.Context, version, rev int64) (int64, int64, error) {
	key := s.opts.CompactionKey
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(key), "=", version)).
		Then(clientv3.OpPut(key, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return version, rev, err
	}
	cur := resp.Header.Revision
	if !resp.Succeeded {
		// Another replica compacted in this interval: follow its version.
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return 0, cur, nil
		}
		return kvs[0].Version, cur, nil
	}
	if rev != 0 {
		if err := s.compactEtcd(ctx, rev); err != nil {
			return version + 1, cur, err
		}
	}
	return version + 1, cur, nil
}
