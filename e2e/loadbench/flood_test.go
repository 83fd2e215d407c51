package loadbench

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/storage/bbolt"
)

// The fairness measurement through the real server over HTTPS: flow A (user
// "flooder", bearer token) keeps floodConc expensive LISTs of floodObjects
// widgets in flight, 25 times the server's seats (--max-requests-inflight=3,
// --max-mutating-requests-inflight=1); flow B (user "bystander") GETs one
// widget every 20ms. Run it with
//
//	cd e2e && go test -run '^$' -bench FairnessUnderFlood -benchtime 1x -v ./loadbench
//
// It prints B's latency alone, under the flood with priority and fairness
// on, off (kube's max-in-flight limits) and with no limit at all, and A's
// 200s and 429s; then GET throughput with priority and fairness on against
// off, in one run.

const (
	floodObjects = 2000 // a LIST encodes ~1 MB: real CPU work
	floodConc    = 100  // A's requests in flight: 25x the seats
	floodRowTime = 5 * time.Second
)

// floodLevels puts the flooder in a level of its own and everyone else in
// "interactive"; with 3 + 1 seats the shares give them 1 and 3 (kube's
// suggested levels get one each but nothing runs there).
const floodLevels = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: flood}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 2500
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 10}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: interactive}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 7500
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: flood}
spec:
  priorityLevelConfiguration: {name: flood}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: flooder}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: interactive}
spec:
  priorityLevelConfiguration: {name: interactive}
  matchingPrecedence: 600
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: "system:authenticated"}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`

// testersPolicy lets the group testers (both users of the tokens file) do
// anything to test.annex.dev.
const testersPolicy = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tester}
rules:
- {apiGroups: [test.annex.dev], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: testers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tester}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: testers}
`

// floodRig is what every server of the measurement shares: the data
// directory (certificates), the store with the widgets, the token and RBAC
// files, and the serving CA (from the first server's admin kubeconfig).
type floodRig struct {
	b                      *testing.B
	dataDir                string
	store                  *bbolt.Store
	tokens, policy, levels string
	caPEM                  []byte
}

// floodModes are the servers compared.
const (
	modeAPF         = "apf"          // 3 + 1 seats, floodLevels
	modeMaxInFlight = "max-inflight" // APF off: 3 read-only, 1 mutating
	modeNone        = "none"         // APF off, both limits 0
	modeAPFDefault  = "apf-default"  // the zero FlowControl: 400 + 200 seats
	modeMaxDefault  = "max-default"  // APF off with kube's 400 + 200
)

func (r *floodRig) flowControl(mode string) flowcontrol.Config {
	switch mode {
	case modeAPF:
		return flowcontrol.Config{MaxRequestsInFlight: 3, MaxMutatingRequestsInFlight: 1, ConfigFiles: []string{r.levels}}
	case modeMaxInFlight:
		return flowcontrol.Config{Disabled: true, MaxRequestsInFlight: 3, MaxMutatingRequestsInFlight: 1}
	case modeNone:
		return flowcontrol.Config{Disabled: true, MaxRequestsInFlight: -1, MaxMutatingRequestsInFlight: -1}
	case modeMaxDefault:
		return flowcontrol.Config{Disabled: true}
	}
	return flowcontrol.Config{}
}

// start builds and runs a server in mode on the rig's store; its stop
// method ends it.
func (r *floodRig) start(mode string) *server {
	s := startServer(r.b, benchOpts{dataDir: r.dataDir, store: r.store, tokenAuthFile: r.tokens,
		authorizationPolicyFiles: []string{r.policy}, flowControl: r.flowControl(mode)})
	r.caPEM = s.kubeconfig.CAData // the same CA for every server of the rig
	return s
}

// client is a new HTTP/2 client of the rig's servers (its own connection).
func (r *floodRig) client() *http.Client {
	c := newClient(r.b, r.caPEM, nil, nil)
	c.Timeout = 2 * time.Minute
	return c
}

// get sends a GET with a bearer token and reads the whole body.
func get(c *http.Client, url, token string) (code int, retryAfter string, err error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), err
}

func newFloodRig(b *testing.B) *floodRig {
	dir := b.TempDir()
	store, err := bbolt.Open(filepath.Join(dir, "db"), bbolt.Options{UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	r := &floodRig{b: b, dataDir: filepath.Join(dir, "data"), store: store,
		tokens: writeFileB(b, dir, "tokens.csv", "flooder-token,flooder,f-1,\"testers\"\nbystander-token,bystander,b-1,\"testers\"\n"),
		policy: writeFileB(b, dir, "rbac.yaml", testersPolicy),
		levels: writeFileB(b, dir, "levels.yaml", floodLevels)}

	// Seed the widgets through a server without limits, as the admin.
	seeder := r.start(modeNone)
	defer seeder.stop(b)
	url, admin := seeder.url, seeder.admin
	spec := strings.Repeat("x", 300)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < floodObjects; i = next.Add(1) - 1 {
				body := fmt.Sprintf(`{"metadata":{"name":"w-%05d","labels":{"app":"flood","tier":"bench"}},"spec":{"owner":"team-%d","notes":%q}}`, i, i%17, spec)
				req, _ := http.NewRequest(http.MethodPost, url+"/apis/test.annex.dev/v1/namespaces/flood/widgets", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := admin.Do(req)
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					errs <- fmt.Errorf("create w-%05d: %d", i, resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return r
}

func writeFileB(b *testing.B, dir, name, content string) string {
	b.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

type floodResult struct {
	p50, p99, max   time.Duration
	bOK, bFailed    int
	a200, a429      int64
	aNoRetryAfter   int64
	aListP50        time.Duration
	aOtherErrorsSum int64
	// CPU while A floods and B measures, in cores (CPU time / wall time):
	// this process (server and B), its garbage collector, the flooder.
	serverCores, gcCores, aCores float64
}

// runFlood measures B's GETs for d in a server of mode while a flooder
// process keeps aConc LISTs in flight (none when 0); honor makes A wait the
// Retry-After it is given, as client-go does, instead of 10ms; gogc, when
// not 0, is the server's GOGC for the row; bProc runs B in a process of its
// own rather than in the server's.
func (r *floodRig) runFlood(mode string, aConc int, honor, nice, bProc bool, gogc int, d time.Duration) (res floodResult) {
	srv := r.start(mode)
	defer srv.stop(r.b)
	url := srv.url
	if gogc != 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(gogc))
	}
	listURL := url + "/apis/test.annex.dev/v1/namespaces/flood/widgets"
	getURL := listURL + "/w-00000"
	var fl *flooder
	if aConc > 0 {
		fl = startFlooder(r.b, flooderSpec{URL: listURL, CAData: r.caPEM,
			Token: "flooder-token", Conc: aConc, Honor: honor, Nice: nice})
		// Let the flood build up (every seat taken, the queues filling):
		// a ramp of the load, not a wait for an event.
		time.Sleep(time.Second)
	}
	var lat []time.Duration
	cpu0, gc0, t0 := processCPU(), gcCPU(), time.Now()
	if bProc {
		by := startFlooder(r.b, flooderSpec{URL: getURL, CAData: r.caPEM,
			Token: "bystander-token", Bystander: true})
		time.Sleep(d) // B measures in its own process
		rep, _ := by.stop(r.b)
		lat, res.bOK, res.bFailed = rep.BLatencies, len(rep.BLatencies), rep.BFailed
	} else {
		lat, res.bFailed = bystand(r.client(), getURL, "bystander-token", time.After(d))
		res.bOK = len(lat)
	}
	wall := time.Since(t0).Seconds()
	res.serverCores = (processCPU() - cpu0).Seconds() / wall
	res.gcCores = (gcCPU() - gc0) / wall
	if fl != nil {
		rep, _ := fl.stop(r.b)
		res.a200, res.a429, res.aNoRetryAfter, res.aOtherErrorsSum, res.aListP50 = rep.A200, rep.A429, rep.NoRetryAfter, rep.Other, rep.ListP50
		res.aCores = rep.CPU.Seconds() / rep.Wall.Seconds()
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		res.p50, res.p99, res.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return res
}

// gcCPU is the CPU time this process's garbage collector has used so far,
// in seconds, as the runtime estimates it: assists, dedicated workers and
// pauses, not the idle mark workers (which run only on otherwise idle Ps and
// the runtime counts at wall time, not CPU time).
func gcCPU() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"},
		{Name: "/cpu/classes/gc/pause:cpu-seconds"}}
	metrics.Read(s)
	var sum float64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindFloat64 {
			sum += v.Value.Float64()
		}
	}
	return sum
}

// overhead measures GET throughput and process CPU per GET of servers in
// modes, all running at once: rounds of one slice per mode, the order
// rotating, so the machine's other load falls on each alike. 16 clients of
// one user, each on its own HTTP/2 connection, per mode.
func (r *floodRig) overhead(modes []string, rounds int, slice time.Duration) (rate map[string][]float64, cpuPerGET map[string]time.Duration) {
	type target struct {
		url     string
		clients []*http.Client
	}
	targets := map[string]target{}
	for _, mode := range modes {
		srv := r.start(mode)
		defer srv.stop(r.b)
		tg := target{url: srv.url + "/apis/test.annex.dev/v1/namespaces/flood/widgets/w-00000"}
		for range 16 {
			tg.clients = append(tg.clients, r.client())
		}
		targets[mode] = tg
	}
	rate = map[string][]float64{}
	cpu, gets := map[string]time.Duration{}, map[string]int64{}
	for round := range rounds {
		for k := range modes {
			mode := modes[(round+k)%len(modes)]
			tg := targets[mode]
			var n atomic.Int64
			var wg sync.WaitGroup
			cpu0 := processCPU()
			end := time.Now().Add(slice)
			for _, c := range tg.clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(end) {
						if code, _, err := get(c, tg.url, "bystander-token"); err == nil && code == 200 {
							n.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			cpu[mode] += processCPU() - cpu0
			gets[mode] += n.Load()
			rate[mode] = append(rate[mode], float64(n.Load())/slice.Seconds())
		}
	}
	cpuPerGET = map[string]time.Duration{}
	for _, mode := range modes {
		cpuPerGET[mode] = cpu[mode] / time.Duration(max(gets[mode], 1))
	}
	return rate, cpuPerGET
}

// median is the middle value of v.
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func BenchmarkFairnessUnderFlood(b *testing.B) {
	b.ReportAllocs()
	r := newFloodRig(b)
	for range b.N {
		rows := []struct {
			name  string
			mode  string
			aConc int
			honor bool
			nice  bool // the flooder at nice 19: as if on another machine
			gogc  int
			bProc bool // B in its own process, not the server's
		}{
			{"B alone (APF on)", modeAPF, 0, false, false, 0, false},
			{"B under flood, APF on", modeAPF, floodConc, false, false, 0, false},
			{"B under flood, APF on, A honors Retry-After", modeAPF, floodConc, true, false, 0, false},
			{"B under flood, APF on, server GOGC=400", modeAPF, floodConc, false, false, 400, false},
			{"B under flood, APF off (max-in-flight 3+1)", modeMaxInFlight, floodConc, false, false, 0, false},
			{"B under flood, no limit", modeNone, floodConc, false, false, 0, false},
			// B's client off the server's Go scheduler: the tail is not
			// its (the slowest of B's GETs spend 50-80 µs in the server's
			// handler chain, by the audit log's timestamps, against 5-9 ms
			// seen by the client: the wait is for the CPU, in the kernel's
			// and the runtime's scheduling of the network path).
			{"B alone, B in its own process", modeAPF, 0, false, false, 0, true},
			{"B under flood, APF on, B in its own process", modeAPF, floodConc, false, false, 0, true},
			// The floor of a limiter that admits one LIST at a time: A
			// keeps exactly one in flight (idle while its client reads the
			// last answer) or two (one executing while the client reads the
			// other, as APF's one seat gives it, or both executing), and
			// nothing limits.
			{"B, A with 1 LIST in flight, no limit", modeNone, 1, false, false, 0, false},
			{"B, A with 2 LISTs in flight, no limit", modeNone, 2, false, false, 0, false},
			// The same with the flooder's own CPU (TLS and HTTP/2 of ~1 MB
			// answers) out of the server's way, as on another machine.
			{"nice: B under flood, APF on", modeAPF, floodConc, false, true, 0, false},
			{"nice: B under flood, APF on, A honors R-A", modeAPF, floodConc, true, true, 0, false},
			{"nice: B under flood, APF off (3+1)", modeMaxInFlight, floodConc, false, true, 0, false},
			{"nice: B under flood, no limit", modeNone, floodConc, false, true, 0, false},
			{"nice: B, A with 1 LIST in flight, no limit", modeNone, 1, false, true, 0, false},
		}
		b.Logf("server seats 3+1; A: %d LISTs of %d widgets in flight (bearer token, HTTP/2, HTTPS) from a separate process that discards the bodies undecoded "+
			"(a real controller decodes, on its own machine); B: one GET every 20ms on its own connection, in the server's process; %v per row; GOMAXPROCS %d; loadavg %s",
			floodConc, floodObjects, floodRowTime, runtime.GOMAXPROCS(0), loadAvg())
		b.Logf("%-44s %8s %8s %8s %5s %6s %6s %6s %9s %6s %6s %6s", "case", "B p50", "B p99", "B max", "B ok", "B fail", "A 200", "A 429", "A LIST p50",
			"srvCPU", "srvGC", "A CPU")
		var alone, on, onNice floodResult
		for i, row := range rows {
			res := r.runFlood(row.mode, row.aConc, row.honor, row.nice, row.bProc, row.gogc, floodRowTime)
			b.Logf("%-44s %8s %8s %8s %5d %6d %6d %6d %9s %6.2f %6.2f %6.2f", row.name, res.p50.Round(10*time.Microsecond), res.p99.Round(10*time.Microsecond),
				res.max.Round(10*time.Microsecond), res.bOK, res.bFailed, res.a200, res.a429, res.aListP50.Round(100*time.Microsecond),
				res.serverCores, res.gcCores, res.aCores)
			if res.aNoRetryAfter > 0 {
				b.Errorf("%s: %d rejections of A without Retry-After", row.name, res.aNoRetryAfter)
			}
			if res.aOtherErrorsSum > 0 {
				b.Logf("  (%d A requests neither 200 nor 429)", res.aOtherErrorsSum)
			}
			switch i {
			case 0:
				alone = res
			case 1:
				on = res
			}
			if row.name == "nice: B under flood, APF on" {
				onNice = res
			}
		}
		b.Logf("CPU columns are cores (CPU seconds per second): srvCPU the server's process (server and B), srvGC its garbage collector's share, A CPU the flooder process; loadavg after: %s", loadAvg())
		ratio := float64(on.p99) / float64(alone.p99)
		b.Logf("APF on: B p99 under flood / alone = %.2f (goal <= 3); B rejected %d; A rejected %d", ratio, on.bFailed, on.a429)
		b.ReportMetric(ratio, "p99-flood/alone")
		ratioNice := float64(onNice.p99) / float64(alone.p99)
		b.Logf("APF on, flooder at nice 19: B p99 under flood / alone = %.2f (goal <= 3); B rejected %d; A rejected %d", ratioNice, onNice.bFailed, onNice.a429)
		b.ReportMetric(ratioNice, "p99-flood-nice/alone")

		// Overhead: the three servers up at once, slices alternating.
		modes := []string{modeAPFDefault, modeMaxDefault, modeNone}
		rate, cpuPer := r.overhead(modes, 8, time.Second)
		var ratios []float64
		for i := range rate[modeAPFDefault] {
			ratios = append(ratios, rate[modeAPFDefault][i]/rate[modeMaxDefault][i])
		}
		tOn, tOff, tNone := median(rate[modeAPFDefault]), median(rate[modeMaxDefault]), median(rate[modeNone])
		b.Logf("GET throughput (16 clients, HTTPS, median of 8 alternating 1s slices): APF on %.0f/s, APF off (max-in-flight 400+200) %.0f/s, no limit %.0f/s; on/off = %.3f (median of per-round ratios %.3f; goal >= 0.90), on/none = %.3f",
			tOn, tOff, tNone, tOn/tOff, median(ratios), tOn/tNone)
		b.Logf("process CPU per GET (server and client): APF on %v, APF off %v, no limit %v",
			cpuPer[modeAPFDefault].Round(100*time.Nanosecond), cpuPer[modeMaxDefault].Round(100*time.Nanosecond), cpuPer[modeNone].Round(100*time.Nanosecond))
		b.ReportMetric(tOn/tOff, "apf-on/off-throughput")
	}
}

// BenchmarkServerGETFlowControl is the cost of one GET through the whole
// handler chain, no network, each request on a fresh goroutine as the HTTP
// server runs it, with priority and fairness on (kube's defaults), off
// (max-in-flight 400 + 200) and without any limit; cpu-ns/op is the
// process's CPU time per GET, steadier than wall time on a shared machine.
//
//	cd e2e && go test -run '^$' -bench ServerGETFlowControl -benchtime 20000x -count 3 ./loadbench
func BenchmarkServerGETFlowControl(b *testing.B) {
	r := newFloodRig(b)
	for _, mode := range []string{modeAPFDefault, modeMaxDefault, modeNone} {
		b.Run(mode, func(b *testing.B) {
			srv := r.start(mode) // the watch cache serves the GET
			defer srv.stop(b)
			h := srv.srv.Handler()
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				done := make(chan *httptest.ResponseRecorder)
				for pb.Next() {
					go func() {
						req := httptest.NewRequest(http.MethodGet, "/apis/test.annex.dev/v1/namespaces/flood/widgets/w-00000", nil)
						req.Header.Set("Authorization", "Bearer bystander-token")
						w := httptest.NewRecorder()
						h.ServeHTTP(w, req)
						done <- w
					}()
					if w := <-done; w.Code != 200 {
						b.Errorf("GET: %d %s", w.Code, w.Body)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// loadAvg is the machine's load average (Linux), to read a run's figures
// against the other load on a shared machine.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
