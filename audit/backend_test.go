package audit_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/filters"
)

// receiver is an audit webhook: an HTTPS server that decodes EventLists
// strictly and keeps the events.
type receiver struct {
	t    testing.TB
	addr string
	srv  *httptest.Server

	mu      sync.Mutex
	events  []audit.Event
	batches int
	bodies  []int // body sizes
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{t: t}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc.addr = l.Addr().String()
	rc.start(l)
	t.Cleanup(func() { rc.stop() })
	return rc
}

func (rc *receiver) start(l net.Listener) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	srv.Listener = l
	srv.StartTLS()
	rc.mu.Lock()
	rc.srv = srv
	rc.mu.Unlock()
}

// restart serves again at the same address (httptest's certificate is the
// same for every server, so the kubeconfig still verifies it).
func (rc *receiver) restart() {
	var l net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for {
		if l, err = net.Listen("tcp", rc.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		rc.t.Fatalf("relisten on %s: %v", rc.addr, err)
	}
	rc.start(l)
}

func (rc *receiver) stop() {
	rc.mu.Lock()
	srv := rc.srv
	rc.srv = nil
	rc.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var list audit.EventList
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil || list.Kind != "EventList" || list.APIVersion != "audit.k8s.io/v1" ||
		r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		rc.t.Errorf("bad batch (%v): %s %s", err, r.Method, body)
		http.Error(w, "bad batch", 400)
		return
	}
	rc.mu.Lock()
	rc.events = append(rc.events, list.Items...)
	rc.batches++
	rc.bodies = append(rc.bodies, len(body))
	rc.mu.Unlock()
	w.WriteHeader(200)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.events)
}

func (rc *receiver) hasPrefix(prefix string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, e := range rc.events {
		if strings.HasPrefix(e.RequestURI, prefix) {
			return true
		}
	}
	return false
}

// kubeconfig writes a kubeconfig pointing at the receiver, trusting
// httptest's certificate.
func (rc *receiver) kubeconfig(t testing.TB) string {
	rc.mu.Lock()
	cert := rc.srv.Certificate()
	rc.mu.Unlock()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: https://%s/audit
    certificate-authority-data: %s
users:
- name: apiserver
  user:
    token: secret
contexts:
- name: default
  context: {cluster: audit, user: apiserver}
current-context: default
`, rc.addr, base64.StdEncoding.EncodeToString(ca))
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

const completePolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"

// apiServer serves the audited chain over HTTPS with a trivial handler.
func apiServer(t testing.TB, a *audit.Auditor, h http.HandlerFunc) *httptest.Server {
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"kind":"Environment"}`) }
	}
	srv := httptest.NewTLSServer(chain(a, &filters.User{Name: "u"}, nil, h))
	t.Cleanup(srv.Close)
	return srv
}

func get(t testing.TB, srv *httptest.Server, uri string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + uri)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", uri, resp.StatusCode)
	}
}

func startAuditor(t testing.TB, a *audit.Auditor) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Start: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestWebhook_batches_as_event_lists(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	a, err := audit.New(audit.Config{
		Policy: mustPolicy(t, completePolicy),
		Webhook: audit.WebhookConfig{ConfigFile: rc.kubeconfig(t),
			Batch: audit.BatchConfig{MaxBatchSize: 10, MaxBatchWait: 20 * time.Millisecond, ThrottleQPS: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	startAuditor(t, a)
	srv := apiServer(t, a, nil)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 25 {
				get(t, srv, fmt.Sprintf("%s/e-%d-%d", envURI, i, j))
			}
		}()
	}
	wg.Wait()
	waitFor(t, "100 events", func() bool { return rc.count() == 100 })
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.batches >= 100 || rc.batches < 10 {
		t.Errorf("%d batches for 100 events with batches of at most 10", rc.batches)
	}
	for _, e := range rc.events {
		if e.Stage != audit.StageResponseComplete || e.AuditID != "aid-1" || e.ObjectRef == nil || e.ResponseStatus.Code != 200 {
			t.Fatalf("event = %+v", e)
		}
	}
}

func TestWebhook_receiver_down_under_load(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	reg := newRegistry()
	a, err := audit.New(audit.Config{
		Policy: mustPolicy(t, completePolicy),
		Webhook: audit.WebhookConfig{ConfigFile: rc.kubeconfig(t), InitialBackoff: 5 * time.Millisecond,
			Batch: audit.BatchConfig{BufferSize: 40, MaxBatchSize: 10, MaxBatchWait: 5 * time.Millisecond, ThrottleQPS: -1}},
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := startAuditor(t, a)
	srv := apiServer(t, a, nil)
	load := func(prefix string, n int) {
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range n / 4 {
					get(t, srv, fmt.Sprintf("%s/%s-%d-%d", envURI, prefix, i, j)) // fails the test unless 200
				}
			}()
		}
		wg.Wait()
	}
	lost := func() float64 {
		return reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "buffered"}) +
			reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "webhook"})
	}

	load("before", 40)
	waitFor(t, "delivery", func() bool { return rc.count() == 40 })

	rc.stop()
	start := time.Now()
	load("down", 400) // every request succeeds while the receiver is gone
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("requests were slowed down by the dead receiver: %v", d)
	}
	waitFor(t, "losses to be counted", func() bool { return lost() > 0 })

	rc.restart()
	// Delivery resumes: requests keep coming after the receiver is back and
	// one of them reaches it. (The first ones may find the buffer still full
	// of the backlog being retried, and be dropped and counted, as the sums
	// below check; on a loaded machine that is common.)
	after := 0
	waitFor(t, "delivery to resume", func() bool {
		get(t, srv, fmt.Sprintf("%s/after-%d", envURI, after))
		after++
		return rc.hasPrefix(envURI + "/after-")
	})

	stop() // flushes
	emitted := reg.value(t, "apiserver_audit_event_total", nil)
	if want := float64(40 + 400 + after); emitted != want {
		t.Errorf("apiserver_audit_event_total = %v, want %v", emitted, want)
	}
	if got := float64(rc.count()) + lost(); got != emitted {
		t.Errorf("received %d + lost %v != emitted %v: a loss went uncounted", rc.count(), lost(), emitted)
	}
	t.Logf("received %d, lost %v (buffered %v, webhook %v)", rc.count(), lost(),
		reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "buffered"}),
		reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "webhook"}))
}

// TestBatch_larger_than_buffer_loses_nothing: a batch size beyond what the
// buffer holds writes smaller batches instead of leaving events to fill the
// buffer and be dropped while the batch waits.
func TestBatch_larger_than_buffer_loses_nothing(t *testing.T) {
	t.Parallel()
	reg := newRegistry()
	logPath := filepath.Join(t.TempDir(), "audit.log")
	a, err := audit.New(audit.Config{
		Policy:     mustPolicy(t, completePolicy),
		Log:        audit.LogConfig{Path: logPath, Batch: audit.BatchConfig{Mode: audit.ModeBatch, BufferSize: 20, MaxBatchSize: 1000, MaxBatchWait: time.Hour}},
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := startAuditor(t, a)
	srv := apiServer(t, a, nil)
	for i := range 100 {
		get(t, srv, fmt.Sprintf("%s/e%d", envURI, i))
		if (i+1)%10 == 0 {
			// Ten events are half the buffer: they must be written now,
			// not after a batch of 1,000 or an hour. Waiting for them
			// keeps a busy machine's scheduling (a batcher not run for
			// ten requests) from filling the buffer, which kube's batch
			// mode drops by design.
			waitLines(t, logPath, i+1)
		}
	}
	stop()
	if lost := reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "buffered"}); lost != 0 {
		t.Errorf("%v events lost to a full buffer", lost)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 100 {
		t.Errorf("log has %d lines, want 100", n)
	}
}

// waitLines waits up to 10 s for the file at path to hold at least n lines.
func waitLines(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if bytes.Count(data, []byte("\n")) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d events the log has %d lines: the batch waits for more than half the buffer", n, bytes.Count(data, []byte("\n")))
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

func TestStart_flushes_everything_on_shutdown(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	logPath := filepath.Join(t.TempDir(), "audit", "audit.log")
	a, err := audit.New(audit.Config{
		Policy: mustPolicy(t, completePolicy),
		// Nothing is written before shutdown: batches of 1000 or an hour.
		Log: audit.LogConfig{Path: logPath, Batch: audit.BatchConfig{Mode: audit.ModeBatch, MaxBatchSize: 1000, MaxBatchWait: time.Hour}},
		Webhook: audit.WebhookConfig{ConfigFile: rc.kubeconfig(t),
			Batch: audit.BatchConfig{MaxBatchSize: 1000, MaxBatchWait: time.Hour, ThrottleQPS: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := startAuditor(t, a)
	srv := apiServer(t, a, nil)
	for i := range 150 {
		get(t, srv, fmt.Sprintf("%s/e%d", envURI, i))
	}
	if n := rc.count(); n != 0 {
		t.Fatalf("%d events sent before shutdown", n)
	}
	stop()
	if n := rc.count(); n != 150 {
		t.Errorf("webhook got %d events after shutdown, want 150", n)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 150 {
		t.Errorf("log has %d lines after shutdown, want 150", n)
	}
	for _, p := range []string{logPath, filepath.Dir(logPath)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	// After Start returned, events are lost, and counted.
	resp, err := srv.Client().Get(srv.URL + envURI + "/late")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("late request: %d", resp.StatusCode)
	}
}

func TestLog_rotation_keeps_maxbackup_files(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	a, err := audit.New(audit.Config{
		Policy: mustPolicy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n"),
		Log:    audit.LogConfig{Path: path, MaxSize: 1, MaxBackups: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := startAuditor(t, a)
	big := `{"kind":"Environment","spec":{"blob":"` + strings.Repeat("x", 100<<10) + `"}}`
	h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, big)
	}))
	// 50 events of 100 KiB: about 5 MB, so 4 rotations of 1 MB files.
	for i := range 50 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", fmt.Sprintf("%s/e%d", envURI, i), nil))
		if i%9 == 8 {
			time.Sleep(2 * time.Millisecond) // rotated names carry milliseconds: keep them apart
		}
	}
	backups := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
		return m
	}
	waitFor(t, "old backups to be removed", func() bool { return len(backups()) == 2 })
	stop()
	for _, f := range append(backups(), path) {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, over maxsize", f, fi.Size())
		}
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev audit.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.ResponseObject == nil {
				t.Fatalf("%s: bad line (%v)", f, err)
			}
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	reg := newRegistry()
	a, err := audit.New(audit.Config{
		Policy: mustPolicy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n"),
		Webhook: audit.WebhookConfig{ConfigFile: rc.kubeconfig(t),
			Batch:    audit.BatchConfig{MaxBatchSize: 100, MaxBatchWait: time.Hour, ThrottleQPS: -1},
			Truncate: audit.TruncateConfig{Enabled: true, MaxEventSize: 2000, MaxBatchSize: 5000}},
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := startAuditor(t, a)
	var body string
	h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("annotate") { // too large even without objects
			filters.AddAuditAnnotation(r.Context(), "big", strings.Repeat("a", 3000))
		}
		writeJSON(w, 200, body)
	}))
	for i, size := range []int{1200, 5000, 10, 1200, 1200} {
		body = `{"blob":"` + strings.Repeat("b", size) + `"}`
		uri := fmt.Sprintf("%s/e%d", envURI, i)
		if i == 2 {
			uri += "?annotate=1"
		}
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", uri, nil))
	}
	stop()
	if got := reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "truncate"}); got != 1 {
		t.Errorf("truncate errors = %v, want 1", got)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.events) != 4 {
		t.Fatalf("%d events, want 4", len(rc.events))
	}
	for _, e := range rc.events {
		truncated := e.Annotations[audit.TruncatedAnnotation] == "true"
		if (e.RequestURI == envURI+"/e1") != truncated || truncated == (e.ResponseObject != nil) {
			t.Errorf("%s: truncated=%v responseObject=%d bytes", e.RequestURI, truncated, len(e.ResponseObject))
		}
	}
	if rc.batches < 2 {
		t.Errorf("4 events of up to 2000 bytes in %d batch(es) of at most 5000 bytes", rc.batches)
	}
	for _, n := range rc.bodies {
		if n > 5000+200 {
			t.Errorf("batch of %d bytes over the 5000 limit", n)
		}
	}
}
