package storage_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex/storage"
)

func TestEventMemo(t *testing.T) {
	t.Parallel()
	var fc storage.EventMemo
	var calls [2]atomic.Int32
	encode := func(i int, b string) func() []byte {
		return func() []byte { calls[i].Add(1); return []byte(b) }
	}
	const n = 64
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				got[i] = fc.Get("json/ADDED", encode(0, "added"))
			} else {
				got[i] = fc.Get("json/DELETED", encode(1, "deleted"))
			}
		})
	}
	wg.Wait()
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("key %d computed %d times, want 1", i, n)
		}
	}
	for i := 2; i < n; i++ {
		if &got[i][0] != &got[i%2][0] {
			t.Errorf("caller %d got a different slice than caller %d", i, i%2)
		}
	}
	if string(got[0]) != "added" || string(got[1]) != "deleted" {
		t.Errorf("results %q %q, want added deleted", got[0], got[1])
	}
}

func TestEventMemo_nil(t *testing.T) {
	t.Parallel()
	var fc *storage.EventMemo
	n := 0
	for range 3 {
		if b := fc.Get("k", func() []byte { n++; return []byte("x") }); string(b) != "x" {
			t.Fatalf("Get = %q", b)
		}
	}
	if n != 3 {
		t.Errorf("a nil EventMemo computed %d times for 3 calls, want 3 (no memo)", n)
	}
}

// BenchmarkEventMemoGet: every watcher of an event but the first reads the
// frame computed by the first, all at once (a fan-out wakes them
// together): the first key, the one most events have, is read without the
// lock; a second key goes through it.
//
//	go test -run '^$' -bench EventMemoGet -cpu 1,2 ./storage/
func BenchmarkEventMemoGet(b *testing.B) {
	for _, tc := range []struct{ name, key string }{{"first_key", "json/v1/ADDED"}, {"second_key", "json/v1/MODIFIED"}} {
		b.Run(tc.name, func(b *testing.B) {
			var m storage.EventMemo
			m.Get("json/v1/ADDED", func() []byte { return []byte("a") })
			m.Get("json/v1/MODIFIED", func() []byte { return []byte("m") })
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if len(m.Get(tc.key, func() []byte { return nil })) != 1 {
						b.Fatal("recomputed")
					}
				}
			})
		})
	}
}
