package loadbench

import (
	"bufio"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex/storage/bbolt"
)

// BenchmarkCacheBytesPerObject is the live heap each stored object adds to
// a running server (the watch cache's copy and its metadata), filled with
// 10,000 widgets of about 1 KB over HTTPS, without a watcher and with one
// watching while they are written (whose frames the cache must not keep
// for the object's lifetime). It reports heap-B/object and that divided by
// the object's JSON size (goal of issue 18: at most 2):
//
//	cd e2e && go test -run '^$' -bench CacheBytesPerObject -benchtime 1x ./loadbench
func BenchmarkCacheBytesPerObject(b *testing.B) {
	for _, watching := range []bool{false, true} {
		name := "no-watcher"
		if watching {
			name = "one-watcher"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				perObject, size := cacheBytesPerObject(b, 10000, watching)
				b.ReportMetric(perObject, "heap-B/object")
				b.ReportMetric(perObject/float64(size), "heap/json")
			}
		})
	}
}

func cacheBytesPerObject(b *testing.B, n int, watching bool) (perObject float64, jsonSize int) {
	store, err := bbolt.Open(filepath.Join(b.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ts := startServer(b, benchOpts{store: store})
	defer ts.stop(b)
	base := ts.url + "/apis/test.annex.dev/v1/namespaces/ns/widgets"
	events := make(chan int, 1)
	if watching {
		req, _ := http.NewRequest(http.MethodGet, base+"?watch=true", nil)
		resp, err := ts.admin.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		go func() {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			seen := 0
			for sc.Scan() {
				if seen++; seen == n {
					events <- seen
				}
			}
		}()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var next atomic.Int64
	var wg sync.WaitGroup
	notes := strings.Repeat("x", 400)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				body := fmt.Sprintf(`{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w-%06d","labels":{"app":"demo","tier":"web"}},"spec":{"owner":"x","notes":%q}}`, i, notes)
				if code, out := do(b, ts.admin, http.MethodPost, base, body); code != http.StatusCreated {
					b.Errorf("create: %d %s", code, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	if watching {
		<-events // every event delivered: the frames were encoded
	}
	_, one := do(b, ts.admin, http.MethodGet, base+"/w-000001", "")
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n), len(one)
}
