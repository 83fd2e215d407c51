// This file runs the storage conformance suite (storage/storagetest) against
// the bbolt store.

package bbolt_test

import (
	"path/filepath"
	"testing"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/storagetest"
)

// openStore opens a fresh store in a temporary directory, closed when the
// test ends. fsync stays on: the suite runs the store as it ships.
func openStore(t *testing.T) storage.Interface {
	t.Helper()
	s, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{})
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

func TestConformance(t *testing.T) {
	storagetest.Run(t, openStore, storagetest.Capabilities{})
}

func TestProperty(t *testing.T) {
	storagetest.RunProperty(t, openStore, storagetest.Capabilities{})
}
