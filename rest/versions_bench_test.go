package rest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkWatchFanOutVersions: 100 watchers, each on its own connection,
// all at one version (v1beta1, the storage version) or half at v1alpha1 and
// half at v1beta1; b.N creates; the figure is events delivered per second,
// from the first write to the last delivery. Frames encoded are asserted:
// events × versions watched, whatever the number of watchers.
//
//	go test -run '^$' -bench WatchFanOutVersions -benchtime 2000x ./rest/
func BenchmarkWatchFanOutVersions(b *testing.B) {
	const watchers = 100
	for _, tc := range []struct {
		name     string
		versions []string // a watcher's version is versions[i%len]
	}{
		{"one-version", []string{"v1beta1"}},
		{"two-versions", []string{"v1beta1", "v1alpha1"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e, h := newVersionedEnvB(b)
			var ready, done sync.WaitGroup
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errs := make(chan error, watchers)
			for w := range watchers {
				ready.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					url := e.srv.URL + "/apis/platform.example.com/" + tc.versions[w%len(tc.versions)] + "/namespaces/ns/environments?watch=true&resourceVersion=1"
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
					tr := &http.Transport{}
					defer tr.CloseIdleConnections()
					resp, err := (&http.Client{Transport: tr}).Do(req)
					ready.Done()
					if err != nil {
						errs <- err
						return
					}
					defer resp.Body.Close()
					sc := bufio.NewScanner(resp.Body)
					for n := 0; n < b.N; {
						if !sc.Scan() {
							errs <- fmt.Errorf("watcher %d ended after %d of %d events: %v", w, n, b.N, sc.Err())
							return
						}
						if bytes.HasPrefix(sc.Bytes(), []byte(`{"type":"ADDED"`)) {
							n++
						}
					}
				}()
			}
			ready.Wait()
			time.Sleep(50 * time.Millisecond) // every watch is registered
			start := h.frameEncodes.Load()
			b.ResetTimer()
			began := time.Now()
			for i := range b.N {
				body := fmt.Sprintf(`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"e-%d"},"spec":{"team":"t","tier":"dev"}}`, i)
				req, _ := http.NewRequest(http.MethodPost, e.srv.URL+betaBase+"/namespaces/ns/environments", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := e.srv.Client().Do(req)
				if err != nil || resp.StatusCode != http.StatusCreated {
					b.Fatalf("create %d: %v %v", i, err, resp)
				}
				resp.Body.Close()
			}
			done.Wait()
			took := time.Since(began)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			if got, want := h.frameEncodes.Load()-start, int64(b.N*len(tc.versions)); got != want {
				b.Fatalf("%d frames encoded for %d events at %d versions; want %d", got, b.N, len(tc.versions), want)
			}
			b.ReportMetric(float64(b.N*watchers)/took.Seconds(), "deliveries/s")
			b.ReportMetric(float64(h.frameEncodes.Load()-start)/float64(b.N), "encodes/event")
		})
	}
}
