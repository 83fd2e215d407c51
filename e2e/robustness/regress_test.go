// This file holds regression cases for violations the harness found, each
// reproduced deterministically outside a randomized run.

package robustness

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestWatchListBeforeCacheReady: a WatchList (sendInitialEvents=true) sent
// to a server whose watch cache has not loaded yet (just started, or
// re-listing) was answered 500 InternalError "watch cache is not ready";
// kube-apiserver answers, and annex now answers, 429 TooManyRequests "storage is (re)initializing"
// with retryAfterSeconds, which clients retry. Found by TestRobustness
// (bbolt, kill -9 then restart, a client's WatchList to the restarted
// server).
func TestWatchListBeforeCacheReady(t *testing.T) {
	ctx := t.Context()
	s := newServer(t, bin.get(t), "bbolt")
	if err := s.startAndWait(ctx); err != nil {
		t.Fatal(err)
	}
	// Enough objects that loading the cache after a restart takes a while.
	const objects, writers = 3000, 16
	h := NewHistory(runNamespaces, ringSize)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			c := &Client{ID: g, H: h}
			for i := g; i < objects; i += writers {
				if op := c.Create(ctx, s.ep, fmt.Sprintf("rb-a/o%d", i), fmt.Sprint(i)); op.Outcome != OK {
					t.Errorf("create: %s", op.Err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	s.kill()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	// WatchLists from the moment the server listens until one is served.
	var mu sync.Mutex
	statuses := map[int]int{}
	var bad *Watch
	served := make(chan struct{})
	var once sync.Once
	for g := range writers {
		wg.Go(func() {
			c := &Client{ID: g, H: h}
			for {
				select {
				case <-served:
					return
				case <-ctx.Done():
					return
				default:
				}
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				w := c.Watch(wctx, s.ep, WatchOptions{SendInitial: true}, nil)
				cancel()
				mu.Lock()
				statuses[w.Status]++
				if w.Status == http.StatusInternalServerError && bad == nil {
					bad = w
				}
				mu.Unlock()
				if w.Status == http.StatusOK {
					once.Do(func() { close(served) })
				}
			}
		})
	}
	wg.Wait()
	t.Logf("answers while starting (0: connection refused): %v", statuses)
	if bad != nil {
		t.Errorf("WatchList before the cache is ready: %s; want 429 TooManyRequests with Retry-After, as kube-apiserver's \"storage is (re)initializing\"", bad.Err)
	}
}
