// This file runs the storage conformance suite (storage/storagetest) against
// the etcd store on a real etcd server, and against the watch cache over it.

package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/etcd"
	"github.com/annexapi/annex/storage/storagetest"
	"github.com/annexapi/annex/watch"
)

// etcdClient starts etcd for the test and returns a client of it, closed
// when the test ends.
func etcdClient(t testing.TB) *clientv3.Client {
	t.Helper()
	url := binaries.Etcd(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// privateStores makes etcd stores for the conformance suite on one shared
// etcd. Each store gets its own key prefix, but etcd's revision is global
// and so is its compaction, while the suite assumes a private store: every
// write it sees advances the revision by exactly one, CurrentRevision is its
// own last write, and compaction touches no other case. So stores are
// handed out one at a time: newStore blocks until the previous case's
// store is released (in its Cleanup). The suite's cases still call
// t.Parallel; they just take turns on etcd.
type privateStores struct {
	top    *testing.T // the test passed to Run, whose probe store is not serialised
	client *clientv3.Client
	turn   chan struct{}
	n      atomic.Int64
	cacher bool
}

func newPrivateStores(t *testing.T, cacher bool) *privateStores {
	p := &privateStores{top: t, client: etcdClient(t), turn: make(chan struct{}, 1), cacher: cacher}
	return p
}

func (p *privateStores) newStore(t *testing.T) storage.Interface {
	t.Helper()
	if t != p.top {
		select {
		case p.turn <- struct{}{}:
		case <-t.Context().Done():
			t.Fatal("no turn on etcd before the test ended")
		}
		t.Cleanup(func() { <-p.turn })
	}
	s := etcd.New(p.client, etcd.Options{Prefix: fmt.Sprintf("/suite-%d", p.n.Add(1)), CompactionInterval: -1})
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if !p.cacher {
		return s
	}
	c, err := watch.New(s, watch.Config{Prefix: "/storagetest.annex.dev/widgets"})
	if err != nil {
		t.Fatalf("watch.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cacher Start: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for c.Ready(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("cacher over etcd not ready after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

func TestEtcdConformance(t *testing.T) {
	p := newPrivateStores(t, false)
	storagetest.Run(t, p.newStore, storagetest.Capabilities{})
}

func TestEtcdProperty(t *testing.T) {
	p := newPrivateStores(t, false)
	storagetest.RunProperty(t, p.newStore, storagetest.Capabilities{})
}

func TestCacherOverEtcdConformance(t *testing.T) {
	p := newPrivateStores(t, true)
	storagetest.Run(t, p.newStore, storagetest.Capabilities{})
}

func TestCacherOverEtcdProperty(t *testing.T) {
	p := newPrivateStores(t, true)
	storagetest.RunProperty(t, p.newStore, storagetest.Capabilities{})
}
