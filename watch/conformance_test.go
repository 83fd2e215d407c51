// This file runs the storage conformance suite (storage/storagetest) against
// the cacher over a bbolt store.

package watch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/storagetest"
)

// suitePrefix is the resource prefix the conformance suite writes under.
const suitePrefix = "/storagetest.annex.dev/widgets"

// openBolt opens a fresh bbolt store, closed when the test ends.
func openBolt(t testing.TB, noSync bool) *bbolt.Store {
	t.Helper()
	s, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{UnsafeNoSync: noSync})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// startCacher starts a cacher over store and waits until it is ready. It is
// stopped (and its Start has returned) when the test ends.
func startCacher(t testing.TB, store storage.Interface, cfg Config) *Cacher {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = suitePrefix
	}
	c, err := New(store, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	waitReady(t, c)
	return c
}

func waitReady(t testing.TB, c *Cacher) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ready(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("cacher not ready within 10s: %v", c.Ready(context.Background()))
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

func newCacherStore(t *testing.T) storage.Interface {
	return startCacher(t, openBolt(t, true), Config{})
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, newCacherStore, storagetest.Capabilities{})
}

func TestProperty(t *testing.T) {
	storagetest.RunProperty(t, newCacherStore, storagetest.Capabilities{})
}
