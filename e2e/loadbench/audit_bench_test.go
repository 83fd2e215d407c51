package loadbench

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/storage/bbolt"
)

// benchServer is a running server for the audit overhead benchmark and the
// admin's client.
type benchServer struct {
	name   string
	base   string // the collection's URL
	client *http.Client
	n      atomic.Int64 // created objects, for unique names
	// wall and cpu sum each operation's rounds; allocs and bytes count the
	// process's allocations during them.
	wall, cpu     map[string]time.Duration
	allocs, bytes map[string]uint64
}

// startBenchServer runs a standalone server over HTTPS (client
// certificates, HTTP/2) on a bbolt store without fsync, so the figures show
// the request path rather than the disk; policy "" means no audit, else
// the log backend writes to a file in kube's default mode (blocking), or in
// batch mode when batch is set.
func startBenchServer(b *testing.B, name, policy string, batch audit.BatchConfig) *benchServer {
	b.Helper()
	store, err := bbolt.Open(filepath.Join(b.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	o := benchOpts{store: store}
	if policy != "" {
		p, err := audit.ParsePolicy([]byte(policy))
		if err != nil {
			b.Fatal(err)
		}
		o.audit = audit.Config{Policy: p, Log: audit.LogConfig{Path: filepath.Join(b.TempDir(), "audit.log")}}
		o.audit.Log.Batch = batch
	}
	ts := startServer(b, o)
	ts.admin.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	s := &benchServer{name: name, base: ts.url + "/apis/test.annex.dev/v1/namespaces/ns/widgets", client: ts.admin,
		wall: map[string]time.Duration{}, cpu: map[string]time.Duration{}, allocs: map[string]uint64{}, bytes: map[string]uint64{}}
	if code, body := do(b, s.client, "POST", s.base, widgetJSON("seed")); code != 201 {
		b.Fatalf("%s: seed: %d %s", name, code, body)
	}
	return s
}

func widgetJSON(name string) string {
	return `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"` + name +
		`","labels":{"team":"platform"}},"spec":{"owner":"payments-team","tier":"prod","replicas":3}}`
}

// round sends n requests of op from workers goroutines and adds the wall and
// process CPU time to s's sums.
func (s *benchServer) round(b *testing.B, op string, n, workers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	var m0, m1 runtime.MemStats
	runtime.GC() // the garbage of the previous round is not collected in this one
	runtime.ReadMemStats(&m0)
	cpu0, t0 := processCPU(), time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				var req *http.Request
				if op == "get" {
					req, _ = http.NewRequest("GET", s.base+"/seed", nil)
				} else {
					name := fmt.Sprintf("w-%d", s.n.Add(1))
					req, _ = http.NewRequest("POST", s.base, strings.NewReader(widgetJSON(name)))
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := s.client.Do(req)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if want := map[string]int{"get": 200, "create": 201}[op]; resp.StatusCode != want {
					failed.Store(fmt.Sprintf("%s %s: %d", s.name, op, resp.StatusCode))
					return
				}
			}
		}()
	}
	wg.Wait()
	s.wall[op] += time.Since(t0)
	s.cpu[op] += processCPU() - cpu0
	runtime.ReadMemStats(&m1)
	s.allocs[op] += m1.Mallocs - m0.Mallocs
	s.bytes[op] += m1.TotalAlloc - m0.TotalAlloc
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
}

// BenchmarkAuditOverhead measures GET and create throughput through the
// whole server over HTTPS with no audit, a Metadata-level log file and a
// RequestResponse-level log file (kube's default log mode, blocking; both
// stages, RequestReceived and ResponseComplete), and a Metadata-level log in
// batch mode (kube's defaults for it: a buffer of 10,000 events, batches of
// up to 400 or 30 s, written by one goroutine), in one run: the servers run
// side by side and take turns, round after round, so a noisy neighbour
// slows them alike. b.N is the requests per server, operation and round.
// It reports each audited server's throughput as a ratio of the
// unaudited one's (wall-time, <level>-<op>-throughput) and the process CPU
// per request as a ratio (<level>-<op>-cpu, the figure other processes on a
// shared machine do not disturb):
//
//	cd e2e && go test -run '^$' -bench AuditOverhead -benchtime 2000x ./loadbench
func BenchmarkAuditOverhead(b *testing.B) {
	const (
		metadata        = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
		requestResponse = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"
		rounds, workers = 10, 8 // rounds: a multiple of the servers, each goes first equally often
	)
	servers := []*benchServer{
		startBenchServer(b, "none", "", audit.BatchConfig{}),
		startBenchServer(b, "metadata", metadata, audit.BatchConfig{}),
		startBenchServer(b, "request-response", requestResponse, audit.BatchConfig{}),
		startBenchServer(b, "metadata-batch", metadata, audit.BatchConfig{Mode: audit.ModeBatch}),
		startBenchServer(b, "metadata-batch400", metadata, audit.BatchConfig{Mode: audit.ModeBatch, MaxBatchSize: 400, MaxBatchWait: time.Second}),
	}
	ops := []string{"get", "create"}
	for _, s := range servers { // warm connections, caches and the JIT-free rest
		for _, op := range ops {
			s.round(b, op, 200, workers)
		}
		clear(s.wall)
		clear(s.cpu)
		clear(s.allocs)
		clear(s.bytes)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for r := range rounds {
		for _, op := range ops {
			for i := range servers { // rotate who goes first
				servers[(i+r)%len(servers)].round(b, op, b.N, workers)
			}
		}
	}
	b.StopTimer()
	base := servers[0]
	for _, s := range servers[1:] {
		for _, op := range ops {
			b.ReportMetric(float64(base.wall[op])/float64(s.wall[op]), s.name+"-"+op+"-throughput")
			b.ReportMetric(float64(s.cpu[op])/float64(base.cpu[op]), s.name+"-"+op+"-cpu")
		}
	}
	n := float64(rounds * b.N)
	for _, op := range ops {
		b.ReportMetric(n/base.wall[op].Seconds(), "none-"+op+"-req/s")
		for _, s := range servers {
			b.ReportMetric(float64(s.cpu[op].Microseconds())/n, s.name+"-"+op+"-cpu-µs/req")
			b.ReportMetric(float64(s.allocs[op])/n, s.name+"-"+op+"-allocs/req")
			b.ReportMetric(float64(s.bytes[op])/n, s.name+"-"+op+"-B/req")
		}
	}
}
