// This file holds the lost-events scenario: many concurrent writers, every
// event checked at every watcher.

package load

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// WatchWriters opens watchers watches (each on its own connection) from the
// collection's current resourceVersion, then runs writers goroutines that
// each create perWriter objects as fast as the server takes them. Every
// acknowledged create must reach every watcher, once, in resourceVersion
// order: Lost counts the (watcher, object) pairs never delivered within ten
// seconds of the last write, Errors the failed creates and the events out
// of order or repeated. Ops is the creates acknowledged.
func (t Target) WatchWriters(ctx context.Context, watchers, writers, perWriter int) Result {
	return t.WatchWritersAcross(ctx, t, watchers, writers, perWriter)
}

// WatchWritersAcross is WatchWriters with the creates sent to writer,
// another replica on the same storage. The CPU is both servers'.
func (t Target) WatchWritersAcross(ctx context.Context, writer Target, watchers, writers, perWriter int) Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	name := fmt.Sprintf("lost events: %d writers, %d watchers", writers, watchers)
	if writer.Collection != t.Collection {
		name = fmt.Sprintf("lost events across replicas: %d writers, %d watchers", writers, watchers)
		t.PIDs = append(slices.Clip(t.PIDs), writer.PIDs...)
	}
	prefix := fmt.Sprintf("lost-%d", time.Now().UnixNano())
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	lc := t.client()
	code, b, err := do(lc, "GET", t.Collection+"?limit=1", nil)
	lc.CloseIdleConnections()
	if err != nil || code != 200 || json.Unmarshal(b, &list) != nil {
		return Result{Scenario: name, Errors: 1}
	}
	seen := make([]map[string]bool, watchers)
	var disorder atomic.Int64
	var delivered atomic.Int64
	ready := make(chan error, watchers)
	var wg sync.WaitGroup
	for w := range watchers {
		seen[w] = map[string]bool{}
		wg.Go(func() {
			c := t.client()
			defer c.CloseIdleConnections()
			req, _ := http.NewRequestWithContext(ctx, "GET", t.Collection+"?watch=1&resourceVersion="+list.Metadata.ResourceVersion, nil)
			resp, err := c.Do(req)
			if err != nil {
				ready <- err
				return
			}
			defer resp.Body.Close()
			ready <- nil
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			var last uint64
			for sc.Scan() {
				var ev struct {
					Type   string `json:"type"`
					Object struct {
						Metadata struct{ Name, ResourceVersion string } `json:"metadata"`
					} `json:"object"`
				}
				if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "ADDED" || !strings.HasPrefix(ev.Object.Metadata.Name, prefix) {
					continue
				}
				rv, _ := strconv.ParseUint(ev.Object.Metadata.ResourceVersion, 10, 64)
				if rv <= last || seen[w][ev.Object.Metadata.Name] {
					disorder.Add(1)
				}
				last = rv
				seen[w][ev.Object.Metadata.Name] = true
				delivered.Add(1)
			}
		})
	}
	for range watchers {
		if err := <-ready; err != nil {
			return Result{Scenario: name, Errors: watchers}
		}
	}
	var mu sync.Mutex
	var acked []string
	var errs atomic.Int64
	cpu0 := t.cpu()
	start := time.Now()
	var ww sync.WaitGroup
	for g := range writers {
		ww.Go(func() {
			c := writer.client()
			defer c.CloseIdleConnections()
			for i := range perWriter {
				n := fmt.Sprintf("%s-%d-%d", prefix, g, i)
				code, _, err := do(c, "POST", writer.Collection, writer.Object(n))
				if err != nil || code != 201 {
					errs.Add(1)
					continue
				}
				mu.Lock()
				acked = append(acked, n)
				mu.Unlock()
			}
		})
	}
	ww.Wait()
	elapsed := time.Since(start)
	expected := int64(len(acked) * watchers)
	deadline := time.Now().Add(10 * time.Second)
	for delivered.Load() < expected && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	lost := 0
	for w := range watchers {
		for _, n := range acked {
			if !seen[w][n] {
				lost++
			}
		}
	}
	return Result{Scenario: name, Ops: len(acked), Errors: int(errs.Load() + disorder.Load()), Elapsed: elapsed, CPU: t.cpu() - cpu0, Lost: lost}
}
