package load

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/annexapi/annex/kubeclient"
)

// FloodConfig sizes the server-bound flood: flow A (user "flooder") keeps
// InFlight LISTs in flight whose label selector matches none of Objects
// objects (the server scans them all, the answer is a few hundred bytes),
// from a process of its own; flow B (user "bystander") GETs one object
// every BInterval, open loop, from this process.
type FloodConfig struct {
	Objects int
	// Seats and MutatingSeats are the server's --max-requests-inflight and
	// --max-mutating-requests-inflight.
	Seats, MutatingSeats int
	// InFlight is A's requests in flight.
	InFlight int
	// BInterval is the time between two of B's GETs.
	BInterval time.Duration
	// Row is how long B measures in each row, after A ran for Ramp: long
	// enough for the flood to fill the queues and for priority and
	// fairness to re-allocate seats between levels (every 10 s, as kube
	// does), as in a flood that lasts.
	Row, Ramp time.Duration
	// Self is the executable that runs A: annexload, whose "flood-a"
	// command is RunFlooder.
	Self string
	// FlooderProcs, when not zero, is A's GOMAXPROCS (zero: Go's default,
	// every core). A's process shares the server's cores here, where a
	// real noisy neighbour is another machine; on one P it keeps as many
	// LISTs in flight for less CPU (0.23 cores against 0.30 on two).
	FlooderProcs int
	// ProfileDir, when set, receives the server's CPU profile over B's
	// measurement in each row (row1.pprof, row2.pprof, ...).
	ProfileDir string
	// Trace, with ProfileDir, takes the server's execution trace instead
	// (row1.trace, ...): where its goroutines waited for a core.
	Trace bool
	// Rows, when not empty, are the rows to run (1 to 4, in FloodRows'
	// order); empty runs them all.
	Rows []int
}

// FullFlood is issue 36's flood: 50,000 objects, 3 + 1 seats for two
// cores (more seats than cores only timeshare them: with 8 + 4, borrowing
// gave the flooded level 9 seats and B waited longer), A at 25 times the
// seats, B at 50 GETs/s.
func FullFlood() FloodConfig {
	return FloodConfig{Objects: 50000, Seats: 3, MutatingSeats: 1, InFlight: 100, BInterval: 20 * time.Millisecond, Row: 10 * time.Second, Ramp: 12 * time.Second}
}

// ShortFlood is what CI runs: the same shape, smaller and shorter.
func ShortFlood() FloodConfig {
	c := FullFlood()
	c.Objects, c.Row, c.Ramp = 5000, 3*time.Second, time.Second
	return c
}

// FloodRow is one row of the measurement.
type FloodRow struct {
	Name string
	// Flood says whether A ran.
	Flood bool
	// B holds the latencies of B's GETs (sorted), from the first try to
	// the final answer, Retry-After waits included, as client-go sees it.
	B []time.Duration
	// Slowest are B's ten slowest GETs: when each was sent (wall clock, to
	// find it in a trace of the server) and how long it took.
	Slowest []SlowGet
	// BRejected counts B's 429 answers (each then retried after its
	// Retry-After, as client-go does); BFailed the GETs that never got a
	// 200.
	BRejected, BFailed int
	// A is the flooder's report.
	A FloodReport
	// ServerCPU and BCPU are the CPU time of the server and of this
	// process (B) over Wall.
	ServerCPU, BCPU, Wall time.Duration
	// Seats is global-default's current limit at the end of the row (the
	// level both users are in), with priority and fairness on.
	Seats string
}

// SlowGet is one of B's GETs.
type SlowGet struct {
	At   time.Time
	Took time.Duration
}

// Quantile is a quantile of B's latencies.
func (r FloodRow) Quantile(q float64) time.Duration {
	if len(r.B) == 0 {
		return 0
	}
	return r.B[min(len(r.B)-1, int(q*float64(len(r.B))))]
}

// FloodReport is what the flooder process prints when it stops.
type FloodReport struct {
	OK, Rejected, NoRetryAfter, Other int64
	// ListP50 is the median latency of A's successful LISTs.
	ListP50 time.Duration
	CPU     time.Duration
	Wall    time.Duration
}

// floodTokens are the users of the flood: both in the group "testers".
const floodTokens = "flooder-token,flooder,f-1,\"testers\"\nbystander-token,bystander,b-1,\"testers\"\n"

// floodPolicy lets the group testers read and write environments.
const floodPolicy = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tester}
rules:
- {apiGroups: [platform.example.com], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: testers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tester}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: testers}
`

// Flood runs the rows: B alone; B under A's flood with priority and
// fairness on (kube's suggested FlowSchemas and levels: both users are in
// global-default, one flow each); with it off (kube's max-in-flight
// limits); and with no limit at all. Each row runs a fresh server process
// (the environments example on bbolt with fsync) on the same data.
func Flood(ctx context.Context, dir string, c FloodConfig) ([]FloodRow, error) {
	tokens, policy := filepath.Join(dir, "tokens.csv"), filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(tokens, []byte(floodTokens), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(policy, []byte(floodPolicy), 0o600); err != nil {
		return nil, err
	}
	common := []string{"--token-auth-file", tokens, "--authorization-policy-file", policy}
	seats := []string{"--max-requests-inflight", strconv.Itoa(c.Seats), "--max-mutating-requests-inflight", strconv.Itoa(c.MutatingSeats)}
	modes := map[string][]string{
		"apf":          seats,
		"max-inflight": append([]string{"--enable-priority-and-fairness=false"}, seats...),
		"none":         {"--enable-priority-and-fairness=false", "--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"},
	}

	// Seed through a server without limits, as its admin.
	t, stop, err := StartAnnexWith(ctx, dir, append(common, modes["none"]...)...)
	if err != nil {
		return nil, err
	}
	seed := t.Create("obj", c.Objects, 16)
	stop()
	if seed.Errors > 0 {
		return nil, fmt.Errorf("seeding %d objects: %d errors", c.Objects, seed.Errors)
	}

	rows := []struct {
		name, mode string
		flood      bool
	}{
		{"B alone, APF on", "apf", false},
		{"B under flood, APF on", "apf", true},
		{"B under flood, APF off (max-in-flight)", "max-inflight", true},
		{"B under flood, no limit", "none", true},
	}
	var out []FloodRow
	for i, row := range rows {
		if len(c.Rows) > 0 && !slices.Contains(c.Rows, i+1) {
			continue
		}
		profile := ""
		if c.ProfileDir != "" {
			ext := ".pprof"
			if c.Trace {
				ext = ".trace"
			}
			profile = filepath.Join(c.ProfileDir, fmt.Sprintf("row%d%s", i+1, ext))
		}
		r, err := floodRow(ctx, dir, c, append(common, modes[row.mode]...), row.flood, profile)
		if err != nil {
			return out, fmt.Errorf("%s: %w", row.name, err)
		}
		r.Name = row.name
		out = append(out, r)
	}
	return out, nil
}

// floodRow starts a server with flags, A when flood, and measures B
// (writing the server's CPU profile over it to profile when set).
func floodRow(ctx context.Context, dir string, c FloodConfig, flags []string, flood bool, profile string) (FloodRow, error) {
	r := FloodRow{Flood: flood}
	t, stop, err := StartAnnexWith(ctx, dir, flags...)
	if err != nil {
		return r, err
	}
	defer stop()
	// A starts once the server is ready (its watch cache loaded), as an
	// operator's server is before it gets traffic: the collection answers
	// a page of one earlier, and A's LISTs then fell through to bbolt.
	if _, err := t.WaitReadyz(2 * time.Minute); err != nil {
		return r, err
	}
	kubeconfig := filepath.Join(dir, "data", "kubeconfig")
	listURL := t.Collection + "?labelSelector=" + "app%3Dnobody"
	var a *flooder
	if flood {
		if a, err = startFlooder(c.Self, kubeconfig, listURL, c.InFlight, c.FlooderProcs); err != nil {
			return r, err
		}
		defer a.kill()
	}
	// The flood builds up (every seat taken, the queues filling); alone,
	// the server settles as long (its watch cache loaded, the garbage of
	// loading it collected), so that B alone is not measured against a
	// server still starting: that inflated the alone row's tail tenfold.
	time.Sleep(c.Ramp)
	bc, err := tokenClients(kubeconfig, 1)
	if err != nil {
		return r, err
	}
	defer bc[0].CloseIdleConnections()
	profiled := make(chan error, 1)
	if profile != "" {
		take := t.Profile
		if c.Trace {
			take = t.Trace
		}
		go func() { profiled <- take(ctx, c.Row, profile) }()
	} else {
		profiled <- nil
	}
	cpu0, self0, t0 := t.cpu(), selfCPU(), time.Now()
	r.B, r.Slowest, r.BRejected, r.BFailed = bystand(bc[0], t.Collection+"/obj-0", c.BInterval, c.Row)
	if err := <-profiled; err != nil {
		return r, fmt.Errorf("profile: %w", err)
	}
	r.Wall = time.Since(t0)
	r.ServerCPU, r.BCPU = t.cpu()-cpu0, selfCPU()-self0
	r.Seats = t.metric(`apiserver_flowcontrol_current_limit_seats{priority_level="global-default"}`)
	if a != nil {
		if r.A, err = a.stop(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// metric is the value of a series in the server's /metrics ("—" when it
// is not there), read as its admin.
func (t Target) metric(series string) string {
	c := t.client()
	defer c.CloseIdleConnections()
	base, _, _ := strings.Cut(t.Collection, "/apis/")
	code, b, err := do(c, http.MethodGet, base+"/metrics", nil)
	if err != nil || code != http.StatusOK {
		return "—"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return "—"
}

// bystand sends one GET every interval for d, each on its own goroutine so
// that a slow answer does not delay the next request (open loop), and
// waits for the answers.
func bystand(c *http.Client, url string, interval, d time.Duration) (lat []time.Duration, slowest []SlowGet, rejected, failed int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(interval)
	defer tick.Stop()
	end := time.After(d)
	var all []SlowGet
	for {
		select {
		case <-end:
			wg.Wait()
			slices.Sort(lat)
			slices.SortFunc(all, func(a, b SlowGet) int { return int(b.Took - a.Took) })
			return lat, all[:min(10, len(all))], rejected, failed
		case <-tick.C:
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				rej, ok := getRetrying(c, url, "bystander-token")
				mu.Lock()
				defer mu.Unlock()
				rejected += rej
				if !ok {
					failed++
					return
				}
				took := time.Since(t0)
				lat = append(lat, took)
				all = append(all, SlowGet{At: t0, Took: took})
			}()
		}
	}
}

// getRetrying GETs url as client-go does: a 429 is retried after its
// Retry-After, up to 10 times.
func getRetrying(c *http.Client, url, token string) (rejected int, ok bool) {
	for range 10 {
		code, retryAfter, err := getToken(c, url, token)
		if err != nil {
			return rejected, false
		}
		if code != http.StatusTooManyRequests {
			return rejected, code == http.StatusOK
		}
		rejected++
		secs, err := strconv.Atoi(retryAfter)
		if err != nil || secs < 1 {
			secs = 1
		}
		time.Sleep(time.Duration(secs) * time.Second)
	}
	return rejected, false
}

// getToken sends a GET with a bearer token and reads the whole body.
func getToken(c *http.Client, url, token string) (code int, retryAfter string, err error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), err
}

// tokenClients returns n clients, each on its own HTTP/2 connection, that
// trust the serving CA of kubeconfig (and send no client certificate).
func tokenClients(kubeconfig string, n int) ([]*http.Client, error) {
	cfg, err := kubeclient.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, errors.New("the kubeconfig has no CA")
	}
	out := make([]*http.Client, n)
	for i := range out {
		out[i] = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true, MaxConnsPerHost: 1}}
	}
	return out, nil
}

// flooder is the flooder process.
type flooder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startFlooder(self, kubeconfig, url string, inFlight, procs int) (*flooder, error) {
	cmd := exec.Command(self, "flood-a", "--kubeconfig", kubeconfig, "--url", url, "--in-flight", strconv.Itoa(inFlight))
	cmd.Stderr = os.Stderr
	if procs > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &flooder{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}, nil
}

// stop closes the flooder's stdin, which ends it, and reads its report.
func (f *flooder) stop() (FloodReport, error) {
	var rep FloodReport
	f.stdin.Close()
	line, err := f.out.ReadBytes('\n')
	if err != nil {
		return rep, fmt.Errorf("flooder report: %w", err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("flooder report %q: %w", line, err)
	}
	return rep, f.cmd.Wait()
}

// kill ends the flooder if it still runs.
func (f *flooder) kill() {
	if f.cmd.ProcessState == nil {
		_ = f.cmd.Process.Kill()
		_ = f.cmd.Wait()
	}
}

// RunFlooder is the flooder process: inFlight workers LIST url with the
// flooder's token, each at once again after a 200 and 10 ms after a 429 (a
// noisy neighbour, not a polite client), over one HTTP/2 connection per 100
// workers, until stdin closes; then it prints its FloodReport as JSON.
func RunFlooder(kubeconfig, url string, inFlight int, stdin io.Reader, stdout io.Writer) error {
	clients, err := tokenClients(kubeconfig, (inFlight+99)/100)
	if err != nil {
		return err
	}
	var ok, rejected, noRetryAfter, other atomic.Int64
	var stopped atomic.Bool
	lats := make([][]time.Duration, inFlight)
	cpu0, t0 := selfCPU(), time.Now()
	var wg sync.WaitGroup
	for w := range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			for !stopped.Load() {
				start := time.Now()
				code, retryAfter, err := getToken(c, url, "flooder-token")
				switch {
				case err != nil:
					other.Add(1)
					time.Sleep(10 * time.Millisecond)
				case code == http.StatusOK:
					ok.Add(1)
					lats[w] = append(lats[w], time.Since(start))
				case code == http.StatusTooManyRequests:
					rejected.Add(1)
					if retryAfter == "" {
						noRetryAfter.Add(1)
					}
					time.Sleep(10 * time.Millisecond)
				default:
					other.Add(1)
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	_, _ = io.Copy(io.Discard, stdin)
	stopped.Store(true)
	wall, cpu := time.Since(t0), selfCPU()-cpu0
	wg.Wait()
	all := slices.Concat(lats...)
	slices.Sort(all)
	rep := FloodReport{OK: ok.Load(), Rejected: rejected.Load(), NoRetryAfter: noRetryAfter.Load(), Other: other.Load(), CPU: cpu, Wall: wall}
	if len(all) > 0 {
		rep.ListP50 = all[len(all)/2]
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// selfCPU is this process's CPU time (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// FloodTable writes the rows as a markdown table and the goals' verdicts;
// it returns an error when the server broke kube's contract (a 429 without
// Retry-After). B's GETs may fail (ten 429s in a row) where nothing
// protects them: that is the starvation the table shows.
func FloodTable(w io.Writer, c FloodConfig, rows []FloodRow) error {
	fmt.Fprintf(w, "%d objects; seats %d + %d; A: %d LISTs in flight matching none of them, from its own process; B: a GET every %v for %v\n\n",
		c.Objects, c.Seats, c.MutatingSeats, c.InFlight, c.BInterval, c.Row)
	fmt.Fprintln(w, "| row | B p50 | B p99 | B max | B GETs answered | B 429s | B GETs failed | A LISTs answered | A 429s | A LIST p50 | global-default seats | server CPU | A CPU | B CPU |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	cores := func(d, wall time.Duration) string {
		if wall <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f cores", d.Seconds()/wall.Seconds())
	}
	var errs []string
	for _, r := range rows {
		aOK, aRej, aP50, aCPU := "—", "—", "—", "—"
		if r.Flood {
			aOK, aRej, aP50, aCPU = strconv.FormatInt(r.A.OK, 10), strconv.FormatInt(r.A.Rejected, 10), r.A.ListP50.Round(100*time.Microsecond).String(), cores(r.A.CPU, r.A.Wall)
			if r.A.NoRetryAfter > 0 {
				errs = append(errs, fmt.Sprintf("%s: %d of A's 429s without Retry-After", r.Name, r.A.NoRetryAfter))
			}
		}
		slowest := time.Duration(0)
		if len(r.B) > 0 {
			slowest = r.B[len(r.B)-1]
		}
		fmt.Fprintf(w, "| %s | %v | %v | %v | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Name,
			r.Quantile(0.5).Round(10*time.Microsecond), r.Quantile(0.99).Round(10*time.Microsecond), slowest.Round(10*time.Microsecond),
			len(r.B), r.BRejected, r.BFailed, aOK, aRej, aP50, r.Seats, cores(r.ServerCPU, r.Wall), aCPU, cores(r.BCPU, r.Wall))
	}
	if len(rows) == 4 && rows[0].Quantile(0.99) > 0 {
		alone := float64(rows[0].Quantile(0.99))
		on, off, none := float64(rows[1].Quantile(0.99))/alone, float64(rows[2].Quantile(0.99))/alone, float64(rows[3].Quantile(0.99))/alone
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "missed"
		}
		fmt.Fprintf(w, "\nB's p99 under flood ÷ alone: APF on %.2f× with %d of B's GETs rejected (goal ≤ 3× and none: %s); APF off %.1f×, no limit %.1f× (goal: starvation with APF off or no limit, ≥ 10×: %s)\n",
			on, rows[1].BRejected+rows[1].BFailed, verdict(on <= 3 && rows[1].BRejected+rows[1].BFailed == 0), off, none, verdict(off >= 10 || none >= 10))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
