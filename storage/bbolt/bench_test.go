package bbolt

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
)

// benchObject is a ~1 KiB JSON object, the value size of every write
// benchmark here (the raw bbolt ones store the same bytes).
func benchObject(name string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"bench.annex.dev/v1","kind":"Widget","metadata":{"name":%q,"namespace":"ns","labels":{"app":"bench","tier":"backend"}},"spec":{"payload":%q}}`,
		name, strings.Repeat("x", 850)))
}

var benchWriters = []int{1, 16, 64}

// runParallel runs b.N operations over writers goroutines; op gets a unique
// sequence number.
func runParallel(b *testing.B, writers int, op func(i int64) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	b.ResetTimer()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkCreate compares the store's Create (group commit, fsync on) with
// raw bbolt Update and Batch writing the same bytes at the same concurrency.
func BenchmarkCreate(b *testing.B) {
	for _, w := range benchWriters {
		b.Run(fmt.Sprintf("store/writers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			s, err := Open(filepath.Join(b.TempDir(), "db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			runParallel(b, w, func(i int64) error {
				name := fmt.Sprint("o", i)
				_, err := s.Create(ctx, testKey(name), benchObject(name))
				return err
			})
		})
		for _, mode := range []string{"update", "batch"} {
			b.Run(fmt.Sprintf("raw_%s/writers=%d", mode, w), func(b *testing.B) {
				b.ReportAllocs()
				db, err := bolt.Open(filepath.Join(b.TempDir(), "db"), 0o600, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
					b.Fatal(err)
				}
				write := db.Update
				if mode == "batch" {
					write = db.Batch
				}
				runParallel(b, w, func(i int64) error {
					name := fmt.Sprint("o", i)
					v := benchObject(name)
					return write(func(tx *bolt.Tx) error {
						return tx.Bucket([]byte("b")).Put([]byte(testKey(name)), v)
					})
				})
			})
		}
	}
}

func benchStore(b *testing.B, n int) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "db"), Options{UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				name := fmt.Sprintf("o%06d", i)
				if _, err := s.Create(ctx, testKey(name), benchObject(name)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return s
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b, 1000)
	ctx := context.Background()
	key := testKey("o000500")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Get(ctx, key, storage.GetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l, err := s.List(ctx, testPrefix, storage.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if len(l.Items) != n {
					b.Fatalf("listed %d", len(l.Items))
				}
			}
		})
	}
}
