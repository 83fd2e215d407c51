package loadbench

import (
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
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The flooder of BenchmarkFairnessUnderFlood runs in a process of its own,
// the test binary re-executed with flooderEnv set (as e2e's replicas are), so
// that its client work (TLS decryption and HTTP/2 framing of ~1 MB answers)
// does not take CPU from the server's process, where B is measured. In
// production a flooding controller runs on another machine; here it shares
// the cores with the server, as any other process would, at the same
// priority. It discards the bodies without decoding them: a real controller
// would decode, but on its own machine.
const flooderEnv = "ANNEX_FLOODER"

// flooderSpec is what the parent gives the flooder, as JSON in flooderEnv.
type flooderSpec struct {
	URL    string `json:"url"`
	CAData []byte `json:"caData"` // the serving CA, PEM
	Token  string `json:"token"`
	Conc   int    `json:"conc"`
	Honor  bool   `json:"honor"` // wait the Retry-After given, as client-go does
	// Nice runs the flooder at the lowest CPU priority (nice 19): it still
	// takes every cycle the server leaves idle, but no longer competes with
	// the server's threads for the two cores, as a flooder on another
	// machine would not.
	Nice bool `json:"-"`
	// Bystander makes the process B instead: one GET of URL every 20 ms
	// until stdin closes, its latencies reported (BLatencies).
	Bystander bool `json:"bystander"`
}

// flooderReport is what the flooder prints when its stdin closes.
type flooderReport struct {
	A200, A429, NoRetryAfter, Other int64
	ListP50                         time.Duration
	CPU, Wall                       time.Duration // the flooder's CPU time (user + system) and wall time while flooding
	// BLatencies and BFailed are a bystander's GET latencies and failures.
	BLatencies []time.Duration
	BFailed    int
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(flooderEnv); spec != "" {
		if err := runFlooder(spec); err != nil {
			fmt.Fprintln(os.Stderr, "flooder:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runFlooder keeps spec.Conc LISTs in flight on one HTTP/2 connection until
// its stdin closes, then prints its flooderReport on stdout.
func runFlooder(specJSON string) error {
	var spec flooderSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(spec.CAData) {
		return errors.New("no CA certificate in the spec")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	c := &http.Client{Transport: tr, Timeout: 2 * time.Minute}

	if spec.Bystander {
		return runBystander(c, spec)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var a200, a429, noRA, other atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	cpu0, start := processCPU(), time.Now()
	for range spec.Conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, spec.URL, nil)
				req.Header.Set("Authorization", "Bearer "+spec.Token)
				resp, err := c.Do(req)
				code, ra := 0, ""
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code, ra = resp.StatusCode, resp.Header.Get("Retry-After")
				}
				switch {
				case err != nil || (code != 200 && code != 429):
					if ctx.Err() == nil {
						other.Add(1)
					}
				case code == 200:
					a200.Add(1)
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
				default:
					a429.Add(1)
					if ra == "" {
						noRA.Add(1)
					}
					pause := 10 * time.Millisecond // a client that ignores Retry-After but does not spin
					if secs, err := strconv.Atoi(ra); err == nil && spec.Honor {
						pause = time.Duration(secs) * time.Second
					}
					select {
					case <-ctx.Done():
					case <-time.After(pause):
					}
				}
			}
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes it when the row ends
	rep := flooderReport{CPU: processCPU() - cpu0, Wall: time.Since(start)}
	cancel()
	wg.Wait()
	rep.A200, rep.A429, rep.NoRetryAfter, rep.Other = a200.Load(), a429.Load(), noRA.Load(), other.Load()
	slices.Sort(lat)
	if len(lat) > 0 {
		rep.ListP50 = lat[len(lat)/2]
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// runBystander GETs spec.URL every 20 ms until stdin closes, then prints
// its latencies in a flooderReport.
func runBystander(c *http.Client, spec flooderSpec) error {
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	var rep flooderReport
	rep.BLatencies, rep.BFailed = bystand(c, spec.URL, spec.Token, stop)
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// bystand is B: a GET of url every 20 ms until done, each answer read
// whole; it returns the latencies of the 200s and how many failed.
func bystand[T any](c *http.Client, url, token string, done <-chan T) (lat []time.Duration, failed int) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return lat, failed
		case <-tick.C:
		}
		start := time.Now()
		code, _, err := get(c, url, token)
		if err != nil || code != 200 {
			failed++
			continue
		}
		lat = append(lat, time.Since(start))
	}
}

// flooder is a running flooder process.
type flooder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *jsonBuffer
}

type jsonBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (j *jsonBuffer) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.b = append(j.b, p...)
	return len(p), nil
}

// startFlooder starts a flooder process on spec.
func startFlooder(b testing.TB, spec flooderSpec) *flooder {
	b.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), flooderEnv+"="+string(js))
	out := &jsonBuffer{}
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if spec.Nice {
		if err := lowestPriority(cmd.Process.Pid); err != nil {
			b.Fatalf("flooder at nice 19: %v", err)
		}
	}
	return &flooder{cmd: cmd, stdin: stdin, out: out}
}

// stop ends the flood and returns the flooder's report and its whole CPU
// time (start-up included) as the kernel accounts it.
func (f *flooder) stop(b testing.TB) (flooderReport, time.Duration) {
	b.Helper()
	_ = f.stdin.Close()
	if err := f.cmd.Wait(); err != nil {
		b.Fatalf("flooder: %v", err)
	}
	var rep flooderReport
	if err := json.Unmarshal(f.out.b, &rep); err != nil {
		b.Fatalf("flooder report %q: %v", f.out.b, err)
	}
	return rep, f.cmd.ProcessState.UserTime() + f.cmd.ProcessState.SystemTime()
}
