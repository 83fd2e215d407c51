// This file runs the storage conformance suite (storage/storagetest) against
// the etcd store on a real etcd server, and against the watch cache over it.

package e2e

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/annexapi/annex/storage/value"
	"github.com/annexapi/annex/watch"
)

// etcdClient starts etcd for the test and returns a client of it, closed
// when the test ends.
func etcdClient(t testing.TB) *clientv3.Client {
	t.Helper()
	return clientOf(t, binaries.Etcd(t))
}

// suiteStores makes etcd stores for the conformance suite on one shared
// etcd, each under a key prefix of its own. etcd's revision and compaction
// are global, so the suite runs with Capabilities.SharedRevision: the cases
// that need the revision to themselves take turns.
type suiteStores struct {
	client *clientv3.Client
	n      atomic.Int64
	cacher bool
	tr     value.Transformer // encryption at rest, nil for none
}

func newSuiteStores(t *testing.T, cacher bool) *suiteStores {
	return &suiteStores{client: etcdClient(t), cacher: cacher}
}

// clientOf returns a client of the etcd (or kine) at url, closed when the
// test ends.
func clientOf(t testing.TB, url string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (p *suiteStores) newStore(t *testing.T) storage.Interface {
	t.Helper()
	s := etcd.New(p.client, etcd.Options{Prefix: fmt.Sprintf("/suite-%d", p.n.Add(1)), CompactionInterval: -1, Transformer: p.tr})
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
	storagetest.Run(t, newSuiteStores(t, false).newStore, storagetest.Capabilities{SharedRevision: true})
}

func TestEtcdProperty(t *testing.T) {
	storagetest.RunProperty(t, newSuiteStores(t, false).newStore, storagetest.Capabilities{SharedRevision: true})
}

func TestCacherOverEtcdConformance(t *testing.T) {
	storagetest.Run(t, newSuiteStores(t, true).newStore, storagetest.Capabilities{SharedRevision: true})
}

func TestCacherOverEtcdProperty(t *testing.T) {
	storagetest.RunProperty(t, newSuiteStores(t, true).newStore, storagetest.Capabilities{SharedRevision: true})
}

func aesKeys(t testing.TB, names ...string) value.Transformer {
	t.Helper()
	var keys []value.Key
	for _, n := range names {
		keys = append(keys, value.Key{Name: n, Secret: bytes.Repeat([]byte(n[len(n)-1:]), 32)})
	}
	tr, err := value.NewAESGCM(keys, true)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestEtcdConformanceEncrypted runs the suite with every object encrypted.
func TestEtcdConformanceEncrypted(t *testing.T) {
	p := newSuiteStores(t, false)
	p.tr = aesKeys(t, "key1")
	storagetest.Run(t, p.newStore, storagetest.Capabilities{SharedRevision: true})
}

// TestEtcdEncryptionAtRest writes through a store whose resource is
// encrypted and reads etcd's raw values: no plaintext, the aesgcm prefix;
// a store with the keys rotated still reads them, one without the keys
// cannot, and a resource without encryption is stored as it is.
func TestEtcdEncryptionAtRest(t *testing.T) {
	const secret = "s3cr3t-plaintext-marker"
	client := etcdClient(t)
	ctx := t.Context()
	prefix := storage.ResourcePrefix("secrets.example.com", "vaults", "")
	k := storage.ObjectKey("secrets.example.com", "vaults", "ns", "v")
	plainKey := storage.ObjectKey("other.example.com", "things", "ns", "t")
	open := func(tr value.Transformer) *etcd.Store {
		return etcd.New(client, etcd.Options{Prefix: "/enc", CompactionInterval: -1, Transformer: tr})
	}
	s := open(value.Router{{Prefix: prefix, Transformer: aesKeys(t, "key1")}})
	if _, err := s.Create(ctx, k, []byte(`{"metadata":{"name":"v","namespace":"ns"},"data":"`+secret+`"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, k, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
		return bytes.Replace(cur.Data, []byte(secret), []byte(secret+"-2"), 1), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, plainKey, []byte(`{"metadata":{"name":"t","namespace":"ns"},"data":"visible-marker"}`)); err != nil {
		t.Fatal(err)
	}
	raw, err := client.Get(ctx, "/enc"+k)
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v %v", raw, err)
	}
	v := raw.Kvs[0].Value
	if bytes.Contains(v, []byte(secret)) {
		t.Errorf("etcd holds the plaintext: %q", v)
	}
	if !bytes.HasPrefix(v, value.AESGCMPrefix("key1")) {
		t.Errorf("etcd value %q lacks the prefix %q", v[:min(len(v), 30)], value.AESGCMPrefix("key1"))
	}
	// Every revision etcd keeps, not only the latest, is encrypted.
	hist, err := client.Get(ctx, "/enc"+k, clientv3.WithRev(raw.Kvs[0].CreateRevision))
	if err != nil || len(hist.Kvs) != 1 || bytes.Contains(hist.Kvs[0].Value, []byte(secret)) {
		t.Errorf("the first revision of the value: %v, %v", hist, err)
	}
	rawPlain, err := client.Get(ctx, "/enc"+plainKey)
	if err != nil || len(rawPlain.Kvs) != 1 || !bytes.Contains(rawPlain.Kvs[0].Value, []byte("visible-marker")) {
		t.Errorf("a resource without encryption is not stored as it is: %v, %v", rawPlain, err)
	}

	rotated := open(value.Router{{Prefix: prefix, Transformer: aesKeys(t, "key2", "key1")}})
	got, err := rotated.Get(ctx, k, storage.GetOptions{})
	if err != nil || !bytes.Contains(got.Data, []byte(secret+"-2")) {
		t.Errorf("after rotation Get = %s, %v", got.Data, err)
	}
	if _, err := open(nil).Get(ctx, k, storage.GetOptions{}); !errors.Is(err, storage.ErrInvalidObject) {
		t.Errorf("Get without the keys: %v, want ErrInvalidObject", err)
	}

	// Completing the rotation: a no-op update of a value in the old key's
	// form rewrites it with the new key; once rewritten, a no-op is a no-op.
	same := func(cur storage.Object) ([]byte, error) { return cur.Data, nil }
	re, err := rotated.Update(ctx, k, storage.UpdateOptions{}, same)
	if err != nil || re.ResourceVersion <= got.ResourceVersion {
		t.Fatalf("no-op update of an old-key value: %v@%d, %v; want a rewrite after %d", re.Key, re.ResourceVersion, err, got.ResourceVersion)
	}
	raw, err = client.Get(ctx, "/enc"+k)
	if err != nil || len(raw.Kvs) != 1 || !bytes.HasPrefix(raw.Kvs[0].Value, value.AESGCMPrefix("key2")) {
		t.Errorf("after the rewrite the value is not under key2: %v, %v", raw, err)
	}
	again, err := rotated.Update(ctx, k, storage.UpdateOptions{}, same)
	if err != nil || again.ResourceVersion != re.ResourceVersion {
		t.Errorf("second no-op update: %d, %v; want the unchanged %d", again.ResourceVersion, err, re.ResourceVersion)
	}
}

// TestEtcdPeriodicCompaction runs the periodic compactor of two replicas
// on one etcd: history gets compacted, and the compaction key's version (one
// increment per winning replica per interval) shows that one replica, not
// both, compacts each interval.
func TestEtcdPeriodicCompaction(t *testing.T) {
	client := etcdClient(t)
	const interval = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	var done []chan struct{}
	start := time.Now()
	for i := range 2 {
		s := etcd.New(client, etcd.Options{Prefix: fmt.Sprintf("/compact-%d", i), CompactionInterval: interval})
		ch := make(chan struct{})
		done = append(done, ch)
		go func() { defer close(ch); _ = s.Start(ctx) }()
	}
	s := etcd.New(client, etcd.Options{Prefix: "/compact-w", CompactionInterval: -1})
	first, err := s.Create(ctx, "/g/r/ns/a", []byte(`{"metadata":{"name":"a"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Update(ctx, "/g/r/ns/a", storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
			return fmt.Appendf(nil, `{"metadata":{"name":"a"},"n":%d}`, i), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The first revision gets compacted within a few intervals.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.List(ctx, "/g/r", storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(first.ResourceVersion), ResourceVersionMatch: storage.MatchExact})
		if errors.Is(err, storage.ErrExpired) {
			break
		}
		if err != nil {
			t.Fatalf("exact list: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the first revision was not compacted within 10s")
		}
		time.Sleep(interval / 2) // polling interval
	}
	cancel()
	for _, ch := range done {
		<-ch
	}
	elapsed := time.Since(start)
	resp, err := client.Get(context.Background(), "compact_rev_key")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("compaction key: %v, %v", resp, err)
	}
	rounds := int64(elapsed/interval) + 1
	if v := resp.Kvs[0].Version; v < 2 || v > rounds+1 {
		t.Errorf("compaction key version %d after %v (%d intervals): want one winning replica per interval", v, elapsed, rounds)
	}
	t.Logf("compaction key version %d after %v (%d intervals of %v, two replicas)", resp.Kvs[0].Version, elapsed.Round(time.Millisecond), rounds, interval)
	if got, err := s.Get(context.Background(), "/g/r/ns/a", storage.GetOptions{}); err != nil || got.ResourceVersion <= first.ResourceVersion {
		t.Errorf("latest state after compaction: %v, %v", got, err)
	}
}
