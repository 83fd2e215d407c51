package annex_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/rest"
)

func TestServerServesResourcesBehindAuthentication(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	srv := startServer(t, annex.Builder{Observability: annex.Observability{Registerer: reg}})
	admin, anon := srv.Client(), srv.AnonymousClient()
	u := srv.URL
	base := u + "/apis/test.annex.dev/v1/namespaces/default/widgets"

	code, body := do(t, anon, http.MethodGet, base, "")
	wantUnauthorized := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	if code != 401 || strings.TrimSpace(body) != wantUnauthorized {
		t.Fatalf("anonymous list: %d %s", code, body)
	}
	if code, body := do(t, anon, http.MethodGet, u+"/readyz?verbose", ""); code != 200 || !strings.Contains(body, "[+]shutdown ok") || !strings.Contains(body, "[+]storage ok") ||
		!strings.Contains(body, "[+]watch-cache/widgets.test.annex.dev ok") {
		t.Fatalf("anonymous readyz: %d %s", code, body)
	}

	code, body = do(t, admin, http.MethodPost, base, `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":1}}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created struct {
		Metadata struct{ ResourceVersion, UID, Namespace string }
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.Metadata.UID == "" || created.Metadata.Namespace != "default" {
		t.Fatalf("created object %s (%v)", body, err)
	}
	code, body = do(t, admin, http.MethodPost, base, `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w1"}}`)
	if code != 409 || !strings.Contains(body, `widgets.test.annex.dev \"w1\" already exists`) {
		t.Fatalf("second create: %d %s", code, body)
	}
	if code, body = do(t, admin, http.MethodGet, base+"/w1", ""); code != 200 || !strings.Contains(body, `"resourceVersion":"`+created.Metadata.ResourceVersion+`"`) {
		t.Fatalf("get: %d %s", code, body)
	}
	update := `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w1","resourceVersion":"` + created.Metadata.ResourceVersion + `"},"spec":{"size":2}}`
	if code, body = do(t, admin, http.MethodPut, base+"/w1", update); code != 200 {
		t.Fatalf("update: %d %s", code, body)
	}
	// The same update again carries a resourceVersion that is now stale.
	code, body = do(t, admin, http.MethodPut, base+"/w1", update)
	if code != 409 || !strings.Contains(body, `Operation cannot be fulfilled on widgets.test.annex.dev \"w1\": the object has been modified; please apply your changes to the latest version and try again`) {
		t.Fatalf("stale update: %d %s", code, body)
	}
	if code, body = do(t, admin, http.MethodDelete, base+"/w1", ""); code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, _ = do(t, admin, http.MethodGet, base+"/w1", ""); code != 404 {
		t.Fatalf("get after delete: %d", code)
	}

	// A certificate from the client CA (the one the server generated in its
	// data directory) without system:masters is authenticated but not
	// authorized.
	ca, err := certs.EnsureCA(certs.CAConfig{Dir: filepath.Join(srv.DataDir, "certs"), Name: "annex-client-ca"})
	if err != nil {
		t.Fatal(err)
	}
	aliceDir := t.TempDir()
	if _, err := ca.EnsureClientCert(certs.ClientConfig{Dir: aliceDir, Name: "alice", User: "alice", Groups: []string{"dev"}}); err != nil {
		t.Fatal(err)
	}
	alice := clientWith(t, srv, filepath.Join(aliceDir, "alice.crt"), filepath.Join(aliceDir, "alice.key"))
	code, body = do(t, alice, http.MethodGet, base, "")
	if code != 403 || !strings.Contains(body, `User \"alice\" cannot list resource \"widgets\" in API group \"test.annex.dev\" in the namespace \"default\"`) {
		t.Fatalf("alice list: %d %s", code, body)
	}

	// A certificate from another CA is rejected, never anonymous.
	other, err := certs.NewCA(certs.CAConfig{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	if _, err := other.EnsureClientCert(certs.ClientConfig{Dir: otherDir, User: "admin", Groups: []string{"system:masters"}}); err != nil {
		t.Fatal(err)
	}
	forged := clientWith(t, srv, filepath.Join(otherDir, "admin.crt"), filepath.Join(otherDir, "admin.key"))
	if code, body = do(t, forged, http.MethodGet, u+"/readyz", ""); code != 401 {
		t.Fatalf("foreign certificate on readyz: %d %s", code, body)
	}

	code, body = do(t, admin, http.MethodGet, u+"/metrics", "")
	for _, want := range []string{
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="test.annex.dev",resource="widgets",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`annex_request_rejections_total{stage="authentication"} 2`,
		`annex_request_rejections_total{stage="authorization"} 1`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code, body = do(t, admin, http.MethodGet, u+"/version", ""); code != 200 || !strings.Contains(body, `"gitVersion"`) {
		t.Fatalf("version: %d %s", code, body)
	}
	if _, err := os.Stat(srv.KubeconfigPath()); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
}

func TestGracefulShutdownFailsReadyzFirstAndEndsWatches(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{Shutdown: annex.Shutdown{Delay: 2 * time.Second}})
	u := srv.URL
	req, err := http.NewRequest(http.MethodGet, u+"/apis/test.annex.dev/v1/widgets?watch=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	watchEnded := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, bufio.NewReader(resp.Body))
		watchEnded <- err
	}()

	srv.Shutdown()
	deadline := time.Now().Add(2 * time.Second)
	for {
		code, body := do(t, srv.AnonymousClient(), http.MethodGet, u+"/readyz", "")
		if code == 500 && strings.Contains(body, "[-]shutdown failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz did not fail during the shutdown delay: %d %s", code, body)
		}
	}
	// Still serving during the delay.
	if code, _ := do(t, srv.AnonymousClient(), http.MethodGet, u+"/livez", ""); code != 200 {
		t.Fatalf("livez during shutdown delay: %d", code)
	}
	select {
	case <-srv.Done():
		if err := srv.Close(); err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	select {
	case <-watchEnded:
	case <-time.After(5 * time.Second):
		t.Fatal("watch stream still open after shutdown")
	}
}

// TestShutdownRefusalNamesItsStage: with Shutdown.SendRetryAfter, a request
// arriving while the server drains gets 429 with Retry-After, and the
// rejection is counted under the shutdown-drain stage, as every rejection
// names its stage.
func TestShutdownRefusalNamesItsStage(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	// A request held in flight keeps the server draining (Run waits for it
	// up to RequestTimeout) until the test releases it.
	held := newGate()
	srv := startServer(t, annex.Builder{Resources: []rest.Resource{widgets(), held.resource()},
		Shutdown: annex.Shutdown{SendRetryAfter: true}, Observability: annex.Observability{Registerer: reg}})
	list := srv.URL + "/apis/test.annex.dev/v1/namespaces/a/widgets"
	if code, body := do(t, srv.Client(), http.MethodGet, list, ""); code != 200 {
		t.Fatalf("before draining: %d %s", code, body)
	}
	var once sync.Once
	release := func() { once.Do(func() { close(held.release) }) }
	t.Cleanup(release) // before the server stops, which waits for it
	heldCode := make(chan int, 1)
	go func() {
		resp, err := srv.Client().Get(srv.URL + "/apis/test.annex.dev/v1/namespaces/slow/gauges")
		if err != nil {
			heldCode <- 0
			return
		}
		resp.Body.Close()
		heldCode <- resp.StatusCode
	}()
	<-held.entered
	srv.Shutdown()
	// No shutdown delay: the drain begins at once; until it has, requests
	// are served.
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, list, nil)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/test")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") != "5" || !strings.Contains(body, "The apiserver is shutting down") {
				t.Fatalf("while draining: %d %v %s", resp.StatusCode, resp.Header, body)
			}
			break
		}
		if resp.StatusCode != 200 || time.Now().After(deadline) {
			t.Fatalf("after Shutdown: %d %s, want 200 until the drain begins, then 429", resp.StatusCode, body)
		}
		time.Sleep(time.Millisecond) // polling interval
	}
	if n := metricValue(t, reg, "annex_request_rejections_total", map[string]string{"stage": annex.StageShutdownDrain}); n != 1 {
		t.Errorf("annex_request_rejections_total{stage=%q} = %v, want 1", annex.StageShutdownDrain, n)
	}
	release()
	if code := <-heldCode; code != 200 {
		t.Errorf("the request in flight when the drain began: %d, want 200", code)
	}
	select {
	case <-srv.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return once the request in flight was done")
	}
}

func TestBuildReportsEveryProblem(t *testing.T) {
	t.Parallel()
	b := annex.Builder{DataDir: t.TempDir(), Serving: annex.Serving{CertFile: "x.crt", SecurePort: 70000}}
	_, err := b.Build()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"Resources: no resources declared", "CertFile/KeyFile: must be given together", "SecurePort: 70000 is out of range"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestBuildRejectsStageThatReadsTooEarly(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := annex.Builder{
		DataDir:   t.TempDir(),
		Resources: []rest.Resource{widgets()},
		Stages: []annex.InsertedStage{{After: annex.StageRequestInfo, Stage: annex.Stage{Name: "tenant-check", Needs: []annex.Provision{annex.ProvidesUser},
			Filter: func(next http.Handler) http.Handler { return next }}}},
		Serving: annex.Serving{Listener: ln},
	}
	_, err = b.Build()
	if err == nil || !strings.Contains(err.Error(), `stage "tenant-check" needs "user", which no earlier stage provides`) {
		t.Fatalf("Build: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("a failed Build left the listener open")
	}
}

// TestZeroBuilderServesMetrics: a Builder without a Registerer still serves
// /metrics, with the request metrics and the Go and process collectors, as
// the README promises.
func TestZeroBuilderServesMetrics(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	admin, u := srv.Client(), srv.URL
	if code, body := do(t, admin, http.MethodPost, u+"/apis/test.annex.dev/v1/namespaces/default/widgets",
		`{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"m"}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, _ := do(t, admin, http.MethodGet, u+"/apis/test.annex.dev/v1/namespaces/default/widgets/m", ""); code != 200 {
		t.Fatalf("get: %d", code)
	}
	// A watch in flight is a long-running request.
	req, _ := http.NewRequest(http.MethodGet, u+"/apis/test.annex.dev/v1/namespaces/default/widgets?watch=1&timeoutSeconds=30", nil)
	resp, err := admin.Do(req) // returns once the watch's headers are in
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The watch's first event (the existing object) is counted once read.
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	code, body := do(t, admin, http.MethodGet, u+"/metrics", "")
	for _, want := range []string{`apiserver_request_total{code="201"`, "go_goroutines ", "process_cpu_seconds_total ",
		`apiserver_longrunning_requests{component="apiserver",group="test.annex.dev",resource="widgets",scope="namespace",subresource="",verb="WATCH",version="v1"} 1`,
		// kube's families and label sets
		"# TYPE apiserver_current_inflight_requests gauge", `apiserver_current_inflight_requests{request_kind="readOnly"} 1`,
		`apiserver_current_inflight_requests{request_kind="mutating"} 0`,
		"# TYPE apiserver_longrunning_requests gauge",
		"# TYPE apiserver_response_sizes histogram",
		`apiserver_watch_events_total{group="test.annex.dev",resource="widgets",version="v1"} 1`,
		`apiserver_watch_events_sizes_count{group="test.annex.dev",resource="widgets",version="v1"} 1`,
		`apiserver_storage_objects{resource="widgets.test.annex.dev"} 1`,
		`apiserver_response_sizes_count{component="apiserver",group="test.annex.dev",resource="widgets",scope="resource",subresource="",verb="GET",version="v1"} 1`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
}

// TestDefaultLoggerSaysWhereItServes: the logger of a Builder without one
// writes Info lines a person reads, Debug lines left out: the URL and the
// kubeconfig of "serving", with the line of Run that wrote it.
func TestDefaultLoggerSaysWhereItServes(t *testing.T) {
	t.Parallel()
	var buf lockedBuf
	srv := startServer(t, annex.Builder{Observability: annex.Observability{Logging: annex.Logging{Output: &buf}}})
	// A 401 is logged at Debug ("request rejected"), which is hidden.
	if code, _ := do(t, srv.AnonymousClient(), http.MethodGet, srv.URL+"/apis/test.annex.dev/v1/namespaces/a/widgets", ""); code != 401 {
		t.Fatalf("anonymous list: %d, want 401", code)
	}
	// Run logs "serving" as it starts serving, maybe after the first answer.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "\tserving\t") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := buf.String()
	if strings.Contains(out, "request rejected") || !strings.Contains(out, "\tINFO\t") || !strings.Contains(out, "\tserving\t") || !strings.Contains(out, "server.go:") ||
		!strings.Contains(out, `"url": "`+srv.URL+`"`) || !strings.Contains(out, `"kubeconfig": "`+srv.Kubeconfig+`"`) {
		t.Errorf("default logger wrote %q", out)
	}
}

// TestProfiling: /debug/pprof/ serves Go's profiles to those allowed (the
// admin), refuses others, and is gone with DisableProfiling (--profiling=false).
func TestProfiling(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	u := srv.URL
	if code, body := do(t, srv.Client(), http.MethodGet, u+"/debug/pprof/", ""); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index as admin: %d %.200s", code, body)
	}
	if code, body := do(t, srv.Client(), http.MethodGet, u+"/debug/pprof/goroutine?debug=1", ""); code != 200 || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("goroutine profile as admin: %d %.200s", code, body)
	}
	if code, body := do(t, srv.AnonymousClient(), http.MethodGet, u+"/debug/pprof/heap", ""); code != 401 && code != 403 {
		t.Errorf("heap profile without credentials: %d %.200s, want 401 or 403", code, body)
	}
	off := startServer(t, annex.Builder{Observability: annex.Observability{DisableProfiling: true}})
	if code, _ := do(t, off.Client(), http.MethodGet, off.URL+"/debug/pprof/", ""); code != 404 {
		t.Errorf("pprof with profiling off: %d, want 404", code)
	}
}

// TestTLSHandshakeErrorsCounted: a client that refuses the server's
// certificate is counted in apiserver_tls_handshake_errors_total.
func TestTLSHandshakeErrorsCounted(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	host := strings.TrimPrefix(srv.URL, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "nobody"}) // trusts nothing
	if err == nil {
		conn.Close()
		t.Fatal("handshake succeeded with an empty root pool")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := do(t, srv.Client(), http.MethodGet, srv.URL+"/metrics", "")
		if strings.Contains(body, "apiserver_tls_handshake_errors_total 1") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no handshake error counted:\n%s", grepLines(body, "tls_handshake"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
