package loadbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// watchLoadResult is what runWatchLoad measured: the writes offered, every
// delivery's latency (sorted) and the process's resident set at the end.
type watchLoadResult struct {
	writes    int
	latencies []time.Duration
	rssKiB    int64
}

// runWatchLoad runs watchers HTTP watchers (spread over conns TLS
// connections) on one resource of a real server while writes are offered at
// rate per second for dur, then checks that every watcher saw every create
// exactly once and in order, and returns the delivery latencies (write sent
// → event read).
func runWatchLoad(t testing.TB, watchers, conns, rate int, dur time.Duration) watchLoadResult {
	s := startServer(t, benchOpts{})
	url := s.url + "/apis/test.annex.dev/v1/namespaces/load/widgets"
	kc := s.kubeconfig
	clients := make([]*http.Client, conns)
	for i := range clients {
		clients[i] = newClient(t, kc.CAData, kc.CertData, kc.KeyData)
		clients[i].Timeout = 0 // watches stay open
	}

	total := int(float64(rate) * dur.Seconds())
	sent := make([]time.Time, total) // written before the create is sent
	var sentMu sync.RWMutex
	received := make([][]time.Duration, watchers)
	errs := make(chan error, watchers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready, done sync.WaitGroup
	for w := range watchers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"?watch=1&resourceVersion=0", nil)
			resp, err := clients[w%conns].Do(req)
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			next := 0
			for next < total && sc.Scan() {
				line := sc.Bytes()
				if !bytes.HasPrefix(line, []byte(`{"type":"ADDED"`)) {
					continue
				}
				i := bytes.Index(line, []byte(`"name":"w-`))
				if i < 0 {
					errs <- fmt.Errorf("watcher %d: event without a name: %s", w, line)
					return
				}
				rest := line[i+len(`"name":"w-`):]
				seq, err := strconv.Atoi(string(rest[:bytes.IndexByte(rest, '"')]))
				if err != nil || seq != next {
					errs <- fmt.Errorf("watcher %d: got w-%d, want w-%d (lost, duplicated or out of order)", w, seq, next)
					return
				}
				sentMu.RLock()
				at := sent[seq]
				sentMu.RUnlock()
				received[w] = append(received[w], time.Since(at))
				next++
			}
			if next < total {
				errs <- fmt.Errorf("watcher %d: stream ended after %d of %d events (%v)", w, next, total, sc.Err())
			}
		}()
	}
	ready.Wait()

	// Open loop: write i is due at start + i/rate, whatever the server does.
	start := time.Now()
	for i := range total {
		due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		sentMu.Lock()
		sent[i] = time.Now()
		sentMu.Unlock()
		body := fmt.Sprintf(`{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w-%d"},"spec":{"n":%d}}`, i, i)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := clients[i%conns].Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create w-%d: %d %s", i, resp.StatusCode, readAll(t, resp))
		}
		_ = readAll(t, resp)
	}
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		t.Fatal("watchers did not receive every event within 60s")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	res := watchLoadResult{writes: total, rssKiB: processRSSKiB()}
	for _, r := range received {
		res.latencies = append(res.latencies, r...)
	}
	slices.Sort(res.latencies)
	return res
}

func (r watchLoadResult) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[int(q*float64(len(r.latencies)-1))]
}

// processRSSKiB is this process's resident set (server and clients together).
func processRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

// TestWatchFanOutOverHTTP: 200 watchers over 10 TLS connections, 100
// writes/s for 2s; every watcher sees every event once, in order.
func TestWatchFanOutOverHTTP(t *testing.T) {
	res := runWatchLoad(t, 200, 10, 100, 2*time.Second)
	if got, want := len(res.latencies), 200*res.writes; got != want {
		t.Fatalf("deliveries = %d, want %d", got, want)
	}
	t.Logf("200 HTTP watchers, %d writes at 100/s: p50 %v p99 %v max %v, process RSS %d MiB",
		res.writes, res.quantile(0.5), res.quantile(0.99), res.quantile(1), res.rssKiB/1024)
}

// BenchmarkWatchFanOutOverHTTP is the load figure: 1,000 watchers
// over real TLS connections, 100 writes/s for 5s.
//
//	cd e2e && go test -run '^$' -bench WatchFanOutOverHTTP -benchtime 1x ./loadbench
func BenchmarkWatchFanOutOverHTTP(b *testing.B) {
	for range b.N {
		res := runWatchLoad(b, 1000, 50, 100, 5*time.Second)
		b.ReportMetric(float64(res.quantile(0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(res.quantile(0.99).Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(res.quantile(1).Microseconds())/1000, "max-ms")
		b.ReportMetric(float64(len(res.latencies)), "deliveries")
		b.ReportMetric(float64(res.rssKiB)/1024, "process-RSS-MiB")
	}
}
