package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Target is a collection to drive.
type Target struct {
	// Name labels the results ("annex", "sample-apiserver").
	Name string
	// Host is the server's URL (https://host:port).
	Host string
	// Collection is the URL of the namespaced collection
	// (https://host:port/apis/<group>/<version>/namespaces/<ns>/<plural>).
	Collection string
	// TLS is the client configuration each connection gets (CA, client
	// certificate).
	TLS *tls.Config
	// Object returns the JSON of an object named name.
	Object func(name string) []byte
	// PIDs are the server processes whose footprint is read.
	PIDs []int
	// Ready is how long the server took from its process's start to
	// answering the collection (fresh data directory).
	Ready time.Duration
	// Minimal marks a server that only creates, reads, lists and
	// replaces (the floor): the suite skips the rest.
	Minimal bool
	// WatchProfile, when set, is where a watch scenario writes the
	// server's CPU profile over its writes (Profile), the watches open.
	WatchProfile string
}

// client is one connection: its own transport, so its own TLS connection.
func (t Target) client() *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: t.TLS.Clone(), ForceAttemptHTTP2: true, MaxConnsPerHost: 1}}
}

// Result is one scenario's outcome.
type Result struct {
	Scenario string
	Ops      int
	Errors   int
	Elapsed  time.Duration
	// CPU is the CPU seconds the target's processes spent during it.
	CPU time.Duration
	// Latencies of watch events (write acknowledged to delivered), sorted.
	// An event delivered before its write's acknowledgement reached the
	// writer counts as 0.
	Latencies []time.Duration
	// Early are the watch events delivered before their write's
	// acknowledgement reached the writer.
	Early int
	// FromSend are the latencies of the same watch events from the moment
	// their write was sent, sorted: Latencies favour a backend whose
	// acknowledgement is slow (its events are early more often), these do
	// not.
	FromSend []time.Duration
	// Lost are watch events never delivered.
	Lost int
	// Ended are the watches the server ended before the scenario did (a
	// watch cache ends a watcher that falls too far behind, as kube's
	// does): their events after the end count in Lost, though no backend
	// skipped them.
	Ended int
	// OpLatencies are the durations of the operations, sorted.
	OpLatencies []time.Duration
	// Skipped marks a scenario the target does not run.
	Skipped bool
	// RssAnon is the target's anonymous resident memory at the end of a
	// watch scenario, its watches still open.
	RssAnon int64
	// WriteRate is the rate at which a watch scenario sent its writes, as
	// reached (the load tool shares the machine).
	WriteRate float64
	// LoadCPU is the load tool's own CPU time over a watch scenario (its
	// writer and its watchers' readers), beside CPU, the server's.
	LoadCPU time.Duration
}

// PerSecond is the throughput.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Quantile of the watch latencies.
func (r Result) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[min(len(r.Latencies)-1, int(q*float64(len(r.Latencies))))]
}

func do(c *http.Client, method, url string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// run spreads n operations over clients goroutines, each with its own
// connection, and measures them with the target's CPU.
func (t Target) run(name string, n, clients int, op func(c *http.Client, i int) error) Result {
	cs := make([]*http.Client, clients)
	for i := range cs {
		cs[i] = t.client()
	}
	var next, errs atomic.Int64
	lats := make([][]time.Duration, len(cs)) // each operation's duration, per client
	cpu0 := t.cpu()
	start := time.Now()
	var wg sync.WaitGroup
	for k, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if op(c, i) != nil {
					errs.Add(1)
				}
				lats[k] = append(lats[k], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	r := Result{Scenario: name, Ops: n, Errors: int(errs.Load()), Elapsed: time.Since(start), CPU: t.cpu() - cpu0, OpLatencies: slices.Concat(lats...)}
	slices.Sort(r.OpLatencies)
	for _, c := range cs {
		c.CloseIdleConnections()
	}
	return r
}

func want(code, wantCode int, err error, body []byte) error {
	if err != nil {
		return err
	}
	if code != wantCode {
		return fmt.Errorf("%d: %.200s", code, body)
	}
	return nil
}

// Create creates n objects named <prefix>-<i> with clients connections.
func (t Target) Create(prefix string, n, clients int) Result {
	return t.run(fmt.Sprintf("create, %d objects, %d clients", n, clients), n, clients, func(c *http.Client, i int) error {
		code, b, err := do(c, "POST", t.Collection, t.Object(fmt.Sprintf("%s-%d", prefix, i)))
		return want(code, 201, err, b)
	})
}

// Get reads the objects <prefix>-<i mod objects> n times.
func (t Target) Get(prefix string, objects, n, clients int) Result {
	return t.run(fmt.Sprintf("GET by name, %d clients", clients), n, clients, func(c *http.Client, i int) error {
		code, b, err := do(c, "GET", fmt.Sprintf("%s/%s-%d", t.Collection, prefix, i%objects), nil)
		return want(code, 200, err, b)
	})
}

// List lists the collection n times (query: "", "limit=500" paged to the
// end, "resourceVersion=0").
func (t Target) List(query string, n, clients int) Result {
	label := map[string]string{"": "full LIST", "limit=500": "paged LIST (500)", "resourceVersion=0": "LIST resourceVersion=0"}[query]
	return t.run(fmt.Sprintf("%s, %d clients", label, clients), n, clients, func(c *http.Client, _ int) error {
		cont := ""
		for {
			u := t.Collection
			q := query
			if cont != "" {
				q += "&continue=" + cont
			}
			if q != "" {
				u += "?" + q
			}
			code, b, err := do(c, "GET", u, nil)
			if err := want(code, 200, err, b); err != nil {
				return err
			}
			var l struct {
				Metadata struct{ Continue string } `json:"metadata"`
			}
			if err := json.Unmarshal(b, &l); err != nil {
				return err
			}
			if cont = l.Metadata.Continue; cont == "" || query != "limit=500" {
				return nil
			}
		}
	})
}

// Update does n GET+PUT updates of <prefix>-<i mod objects>; a conflict
// (another client's update in between) is retried, as clients do.
func (t Target) Update(prefix string, objects, n, clients int) Result {
	return t.run(fmt.Sprintf("GET+PUT update, %d clients", clients), n, clients, func(c *http.Client, i int) error {
		u := fmt.Sprintf("%s/%s-%d", t.Collection, prefix, i%objects)
		for try := 0; try < 10; try++ {
			code, b, err := do(c, "GET", u, nil)
			if err := want(code, 200, err, b); err != nil {
				return err
			}
			var obj map[string]any
			if err := json.Unmarshal(b, &obj); err != nil {
				return err
			}
			labels, _ := obj["metadata"].(map[string]any)["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
				obj["metadata"].(map[string]any)["labels"] = labels
			}
			labels["load"] = strconv.Itoa(i)
			body, _ := json.Marshal(obj)
			code, b, err = do(c, "PUT", u, body)
			if code == 409 {
				continue
			}
			return want(code, 200, err, b)
		}
		return fmt.Errorf("%s: 10 conflicts in a row", u)
	})
}

// Conflicts sends n PUTs with a stale resourceVersion; each must be a 409.
func (t Target) Conflicts(prefix string, n, clients int) Result {
	c := t.client()
	code, b, err := do(c, "GET", fmt.Sprintf("%s/%s-0", t.Collection, prefix), nil)
	var obj map[string]any
	if err != nil || code != 200 || json.Unmarshal(b, &obj) != nil {
		return Result{Scenario: "stale PUT (409)", Errors: n}
	}
	obj["metadata"].(map[string]any)["resourceVersion"] = "1"
	stale, _ := json.Marshal(obj)
	return t.run(fmt.Sprintf("stale PUT → 409, %d clients", clients), n, clients, func(c *http.Client, _ int) error {
		code, b, err := do(c, "PUT", fmt.Sprintf("%s/%s-0", t.Collection, prefix), stale)
		return want(code, 409, err, b)
	})
}

// Watch opens watchers watches, each on its own connection, then creates
// objects at rate per second for d, and measures each event's delivery
// to each watcher after the create was acknowledged.
func (t Target) Watch(ctx context.Context, watchers int, rate float64, d time.Duration) Result {
	return t.watch(ctx, t, watchers, 1, rate, d)
}

// WatchShared is Watch with perConn watchers on each connection (HTTP/2
// streams of one client), as kube-aggregator multiplexes the watches it
// proxies. The result's RssAnon is the server's while every watch is open.
func (t Target) WatchShared(ctx context.Context, watchers, perConn int, rate float64, d time.Duration) Result {
	return t.watch(ctx, t, watchers, perConn, rate, d)
}

// WatchAcross is Watch with the creates sent to writer, another replica on
// the same storage: the delivery of another server's writes. The CPU is
// both servers'.
func (t Target) WatchAcross(ctx context.Context, writer Target, watchers int, rate float64, d time.Duration) Result {
	return t.watch(ctx, writer, watchers, 1, rate, d)
}

func (t Target) watch(ctx context.Context, writer Target, watchers, perConn int, rate float64, d time.Duration) Result {
	label := "watch fan-out"
	if writer.Collection != t.Collection {
		label = "watch fan-out across replicas"
		t.PIDs = append(slices.Clip(t.PIDs), writer.PIDs...)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var acks sync.Map  // name -> time.Time
	var sends sync.Map // name -> time.Time
	prefix := fmt.Sprintf("watch-%d", time.Now().UnixNano())
	var mu sync.Mutex
	var lat, fromSend []time.Duration
	var early []string // names of events delivered before their ack
	var delivered atomic.Int64
	var ended atomic.Int64 // watches whose stream ended before ctx did
	// Watch from the collection's current resourceVersion: only the
	// events of the writes below, not the existing objects.
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	lc := t.client()
	code, b, err := do(lc, "GET", t.Collection+"?limit=1", nil)
	lc.CloseIdleConnections()
	if err != nil || code != 200 || json.Unmarshal(b, &list) != nil {
		return Result{Scenario: "watch", Errors: watchers}
	}
	ready := make(chan error, watchers)
	var wg sync.WaitGroup
	perConn = max(perConn, 1)
	clients := make([]*http.Client, (watchers+perConn-1)/perConn)
	for i := range clients {
		clients[i] = t.client()
		// No overall timeout: it would end a watch's body mid-stream
		// (http.Client.Timeout covers reading the body), which counted
		// as events lost and watches ended. ctx bounds the watches, as
		// timeoutSeconds bounds client-go's.
		clients[i].Timeout = 0
		// Go's HTTP/2 client opens another connection when one is at
		// the server's stream limit; one connection per client here.
		clients[i].Transport.(*http.Transport).MaxConnsPerHost = 1
		defer clients[i].CloseIdleConnections()
	}
	for w := range watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w/perConn]
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
			for sc.Scan() {
				now := time.Now()
				name, ok := addedName(sc.Bytes(), prefix)
				if !ok {
					continue
				}
				delivered.Add(1)
				at, ok := acks.Load(name)
				sent, _ := sends.Load(name)
				mu.Lock()
				if sent != nil {
					fromSend = append(fromSend, now.Sub(sent.(time.Time)))
				}
				if ok {
					lat = append(lat, max(now.Sub(at.(time.Time)), 0))
				} else {
					// Delivered before the writer read its 201: a
					// latency of 0 once the write is known acknowledged.
					early = append(early, name)
				}
				mu.Unlock()
			}
			if ctx.Err() == nil {
				ended.Add(1)
			}
		}()
	}
	for range watchers {
		if err := <-ready; err != nil {
			return Result{Scenario: "watch", Errors: watchers}
		}
	}
	time.Sleep(200 * time.Millisecond) // every watch past its initial list
	profiled := make(chan error, 1)
	if t.WatchProfile != "" {
		go func() { profiled <- t.Profile(ctx, d, t.WatchProfile) }()
	} else {
		profiled <- nil
	}
	cpu0, self0 := t.cpu(), selfCPU()
	wc := writer.client()
	defer wc.CloseIdleConnections()
	n := int(rate * d.Seconds())
	start := time.Now()
	// Open loop: each write is sent at its time on a goroutine of its own
	// (up to maxWrites in flight), so that a slow acknowledgement does not
	// hold back the next write; one at a time, the writer reached 40–60
	// of 100 writes a second beside 1,000 watchers.
	const maxWrites = 64
	inFlight := make(chan struct{}, maxWrites)
	var errCount atomic.Int64
	var writes sync.WaitGroup
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		inFlight <- struct{}{}
		name := fmt.Sprintf("%s-%d", prefix, i)
		writes.Go(func() {
			defer func() { <-inFlight }()
			sends.Store(name, time.Now())
			code, _, err := do(wc, "POST", writer.Collection, writer.Object(name))
			if err != nil || code != 201 {
				errCount.Add(1)
				return
			}
			acks.Store(name, time.Now())
		})
	}
	sent := time.Since(start)
	writes.Wait()
	errs := int(errCount.Load())
	expected := int64((n - errs) * watchers)
	deadline := time.Now().Add(10 * time.Second)
	for delivered.Load() < expected && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	rssAnon := t.RssAnon()
	if t.WatchProfile != "" {
		// What the server holds with every watch open, as RssAnon is read.
		heap := strings.TrimSuffix(t.WatchProfile, ".pprof") + ".heap.pprof"
		if err := t.debugNow(ctx, "heap", heap); err != nil {
			fmt.Fprintln(os.Stderr, "watch heap profile:", err)
		}
	}
	endedEarly := int(ended.Load()) // before cancel ends the others
	if err := <-profiled; err != nil {
		fmt.Fprintln(os.Stderr, "watch profile:", err)
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, name := range early {
		if _, ok := acks.Load(name); ok {
			lat = append(lat, 0)
		}
	}
	slices.Sort(lat)
	slices.Sort(fromSend)
	name := fmt.Sprintf("%s: %d watchers, %.0f writes/s", label, watchers, rate)
	if perConn > 1 {
		name = fmt.Sprintf("%s: %d watchers, %d per connection, %.0f writes/s", label, watchers, perConn, rate)
	}
	return Result{Scenario: name, Ops: int(delivered.Load()), Errors: errs, Elapsed: elapsed, CPU: t.cpu() - cpu0,
		Latencies: lat, Early: len(early), FromSend: fromSend, Lost: int(expected - delivered.Load()), Ended: endedEarly, RssAnon: rssAnon,
		WriteRate: float64(max(n-1, 0)) / sent.Seconds(), // the first write is sent at 0
		LoadCPU:   selfCPU() - self0}
}

// cpu is the CPU time the target's processes have used (user + system,
// from /proc/<pid>/stat); zero without PIDs.
func (t Target) cpu() time.Duration {
	var total time.Duration
	for _, pid := range t.PIDs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) start after ")".
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	}
	return total
}

// RSS is the resident memory of the target's processes (VmRSS).
func (t Target) RSS() int64 { return t.status("VmRSS:") }

// RssAnon is the anonymous resident memory of the target's processes: the
// heap, stacks and other memory they own, not the pages of their binaries
// and files.
func (t Target) RssAnon() int64 { return t.status("RssAnon:") }

// PeakRSS is the most resident memory the target's processes have had
// (VmHWM).
func (t Target) PeakRSS() int64 { return t.status("VmHWM:") }

// ResetPeakRSS makes each process's peak resident memory (VmHWM) its
// current one (Linux: clear_refs 5), so that PeakRSS then reports the peak
// of what follows; false when a process refused.
func (t Target) ResetPeakRSS() bool {
	ok := len(t.PIDs) > 0
	for _, pid := range t.PIDs {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			ok = false
		}
	}
	return ok
}

// status sums a kB field of /proc/<pid>/status over the processes.
func (t Target) status(field string) int64 {
	var total int64
	for _, pid := range t.PIDs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, field); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}

// Profile writes the target's CPU profile over the next d to path (the
// server's /debug/pprof/profile, as its admin). It blocks for d.
func (t Target) Profile(ctx context.Context, d time.Duration, path string) error {
	return t.debug(ctx, "profile", d, path)
}

// Trace writes the target's execution trace over the next d to path (the
// server's /debug/pprof/trace, as its admin; `go tool trace` reads it). It
// blocks for d.
func (t Target) Trace(ctx context.Context, d time.Duration, path string) error {
	return t.debug(ctx, "trace", d, path)
}

// debug writes the target's /debug/pprof/<kind> over the next d to path.
func (t Target) debug(ctx context.Context, kind string, d time.Duration, path string) error {
	return t.fetchDebug(ctx, fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", t.Host, kind, int(d.Seconds())), d, path)
}

// debugNow writes the target's /debug/pprof/<kind> as it is now (a heap
// profile after a collection) to path.
func (t Target) debugNow(ctx context.Context, kind, path string) error {
	return t.fetchDebug(ctx, fmt.Sprintf("%s/debug/pprof/%s?gc=1", t.Host, kind), 0, path)
}

// fetchDebug writes what url answers (taking up to d) to path.
func (t Target) fetchDebug(ctx context.Context, url string, d time.Duration, path string) error {
	c := t.client()
	c.Timeout = d + 30*time.Second
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	return os.WriteFile(path, b, 0o644)
}

// addedName is the name of the object of an ADDED watch event line when it
// starts with prefix. The watchers of a fan-out read 100,000 events a
// second on the cores the server uses, so the name is found without
// decoding the object when the line has the shape kube's and annex's
// encoders give it: the event's type first, then under the object's
// metadata a "name" whose value starts with prefix (kube's encoder writes
// the name first, annex's sorts metadata's keys, so it comes after
// creationTimestamp, labels and managedFields). prefix holds the run's
// start in nanoseconds, so no other "name" in an event begins with it; any
// other line is decoded in full. Before annex's order was matched here,
// decoding took two thirds of the load tool's CPU in a fan-out, more than
// the server spent delivering.
func addedName(line []byte, prefix string) (string, bool) {
	const head, meta = `{"type":"ADDED","object":{`, `"metadata":{`
	if bytes.HasPrefix(line, []byte(head)) {
		if i := bytes.Index(line, []byte(meta)); i >= 0 {
			const name = `"name":"`
			for rest := line[i+len(meta):]; ; {
				k := bytes.Index(rest, []byte(name))
				if k < 0 {
					break
				}
				rest = rest[k+len(name):]
				if !bytes.HasPrefix(rest, []byte(prefix)) {
					continue
				}
				if j := bytes.IndexByte(rest, '"'); j >= 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
					return string(rest[:j]), true
				}
				break
			}
		}
	}
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"object"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Type != "ADDED" || !strings.HasPrefix(ev.Object.Metadata.Name, prefix) {
		return "", false
	}
	return ev.Object.Metadata.Name, true
}
