package bbolt_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/storagetest"
	"github.com/annexapi/annex/storage/value"
)

func aesKeys(t *testing.T, names ...string) value.Transformer {
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

// TestTransformerEncryptsAtRest writes through a store whose resource is
// encrypted, then reads the file's raw bytes: the secret is not there, the
// aesgcm prefix is; a reopened store with the keys rotated still reads it,
// and one without the keys cannot.
func TestTransformerEncryptsAtRest(t *testing.T) {
	const secret = "s3cr3t-plaintext-marker"
	path := filepath.Join(t.TempDir(), "db")
	prefix := storage.ResourcePrefix("secrets.example.com", "vaults", "")
	open := func(tr value.Transformer) *bbolt.Store {
		t.Helper()
		s, err := bbolt.Open(path, bbolt.Options{UnsafeNoSync: true, Transformer: tr})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	k := storage.ObjectKey("secrets.example.com", "vaults", "ns", "v")
	plainKey := storage.ObjectKey("other.example.com", "things", "ns", "t")
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
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secret)) {
		t.Errorf("the file holds the plaintext %q", secret)
	}
	if !bytes.Contains(raw, value.AESGCMPrefix("key1")) {
		t.Errorf("the file holds no value with the prefix %q", value.AESGCMPrefix("key1"))
	}
	if !bytes.Contains(raw, []byte("visible-marker")) {
		t.Errorf("a resource without encryption is not stored as it is")
	}

	// Rotated: key2 encrypts, key1 still decrypts.
	s = open(value.Router{{Prefix: prefix, Transformer: aesKeys(t, "key2", "key1")}})
	got, err := s.Get(ctx, k, storage.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got.Data, []byte(secret+"-2")) {
		t.Errorf("after rotation Get = %s", got.Data)
	}
	r, err := s.List(ctx, prefix, storage.ListOptions{})
	if err != nil || len(r.Items) != 1 || !bytes.Equal(r.Items[0].Data, got.Data) {
		t.Errorf("after rotation List = %v, %v", r.Items, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Without the keys the value is unreadable.
	s = open(nil)
	defer s.Close()
	if _, err := s.Get(ctx, k, storage.GetOptions{}); err == nil {
		t.Errorf("Get without the keys succeeded")
	}
	if _, err := s.Get(ctx, plainKey, storage.GetOptions{}); err != nil {
		t.Errorf("Get of an unencrypted resource: %v", err)
	}
}

// TestTransformerIdentityFallback reads plaintext written before
// encryption was turned on.
func TestTransformerIdentityFallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	ctx := context.Background()
	k := storage.ObjectKey("g", "r", "ns", "a")
	s, err := bbolt.Open(path, bbolt.Options{UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, k, []byte(`{"metadata":{"name":"a"}}`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, tt := range []struct {
		name     string
		fallback bool
	}{{"with_identity", true}, {"without_identity", false}} {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := value.NewAESGCM([]value.Key{{Name: "k", Secret: make([]byte, 32)}}, tt.fallback)
			if err != nil {
				t.Fatal(err)
			}
			s, err := bbolt.Open(path, bbolt.Options{UnsafeNoSync: true, Transformer: tr})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Get(ctx, k, storage.GetOptions{})
			if tt.fallback && err != nil {
				t.Errorf("Get of plaintext with the identity fallback: %v", err)
			}
			if !tt.fallback && !errors.Is(err, storage.ErrInvalidObject) {
				t.Errorf("Get of plaintext without the identity fallback: %v, want ErrInvalidObject", err)
			}
		})
	}
}

// TestConformanceEncrypted runs the suite with every object encrypted.
func TestConformanceEncrypted(t *testing.T) {
	tr := aesKeys(t, "key1")
	storagetest.Run(t, func(t *testing.T) storage.Interface {
		s, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true, Transformer: tr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, storagetest.Capabilities{})
}
