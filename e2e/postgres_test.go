// This file runs the storage conformance suite against the PostgreSQL store
// (storage/postgres) on a real PostgreSQL server, and against the watch cache
// over it.

package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/postgres"
	"github.com/annexapi/annex/storage/storagetest"
	"github.com/annexapi/annex/storage/value"
	"github.com/annexapi/annex/watch"
)

// pgStores makes PostgreSQL stores for the conformance suite in one
// database of a throwaway cluster, each with tables of its own (its own
// revision): every case runs in parallel.
type pgStores struct {
	pool   *pgxpool.Pool
	n      atomic.Int64
	cacher bool
	tr     value.Transformer
}

// pgPool starts a throwaway cluster and returns a pool on a database of
// it, closed when the test ends.
func pgPool(t testing.TB) (*binaries.PostgresServer, *pgxpool.Pool) {
	t.Helper()
	srv := binaries.StartPostgres(t)
	dsn, err := srv.CreateDatabase("annex")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 64
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return srv, pool
}

func newPGStores(t *testing.T, cacher bool) *pgStores {
	_, pool := pgPool(t)
	return &pgStores{pool: pool, cacher: cacher}
}

func (p *pgStores) newStore(t *testing.T) storage.Interface {
	t.Helper()
	s, err := postgres.New(context.Background(), p.pool, postgres.Options{Table: fmt.Sprintf("suite%d", p.n.Add(1)),
		CompactionInterval: -1, Transformer: p.tr, ProgressInterval: time.Second})
	if err != nil {
		t.Fatalf("postgres.New: %v", err)
	}
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
			t.Fatal("cacher over postgres not ready after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

func TestPostgresConformance(t *testing.T) {
	storagetest.Run(t, newPGStores(t, false).newStore, storagetest.Capabilities{})
}

func TestPostgresProperty(t *testing.T) {
	storagetest.RunProperty(t, newPGStores(t, false).newStore, storagetest.Capabilities{})
}

func TestCacherOverPostgresConformance(t *testing.T) {
	storagetest.Run(t, newPGStores(t, true).newStore, storagetest.Capabilities{})
}

func TestCacherOverPostgresProperty(t *testing.T) {
	storagetest.RunProperty(t, newPGStores(t, true).newStore, storagetest.Capabilities{})
}

// TestPostgresConformanceEncrypted runs the suite with every object
// encrypted at rest (AES-GCM).
func TestPostgresConformanceEncrypted(t *testing.T) {
	p := newPGStores(t, false)
	p.tr = aesKeys(t, "key1")
	storagetest.Run(t, p.newStore, storagetest.Capabilities{})
}
