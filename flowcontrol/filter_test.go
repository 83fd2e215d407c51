package flowcontrol

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// blocker is a handler that holds every request until released, and tells
// when one has entered.
type blocker struct {
	entered chan string
	release chan struct{}
	ran     atomic.Int32
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan string, 100), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.ran.Add(1)
	b.entered <- r.URL.Path
	<-b.release
	w.Write([]byte("ok"))
}

func check429(t *testing.T, resp *http.Response) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After")
	}
	var st meta.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Reason != meta.StatusReasonTooManyRequests || st.Message != TooManyRequestsMessage || st.Code != 429 || st.Details == nil || st.Details.RetryAfterSeconds < 1 {
		t.Errorf("status %+v", st)
	}
}

func TestQueueFullRejects(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cfg := oneSeat(t, "      type: Queue\n      queuing: {queues: 1, handSize: 1, queueLengthLimit: 1}")
	cfg.Registerer = reg
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	srv := serve(t, c, b)
	results := make(chan int, 2)
	go func() { r := get(t, srv.URL+"/first", "alice"); r.Body.Close(); results <- r.StatusCode }()
	<-b.entered // first runs, holding the seat
	go func() { r := get(t, srv.URL+"/second", "bob"); r.Body.Close(); results <- r.StatusCode }()
	waitFor(t, func() bool { return levelWaiting(c, "tiny") == 1 })
	check429(t, get(t, srv.URL+"/third", "alice")) // the one queue is full
	close(b.release)
	for range 2 {
		if code := <-results; code != 200 {
			t.Errorf("queued request got %d", code)
		}
	}
	if n := b.ran.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2", n)
	}
	wantMetric(t, reg, "apiserver_flowcontrol_rejected_requests_total", map[string]string{"priority_level": "tiny", "flow_schema": "tiny", "reason": "queue-full"}, 1)
	wantMetric(t, reg, "apiserver_flowcontrol_dispatched_requests_total", map[string]string{"priority_level": "tiny", "flow_schema": "tiny"}, 2)
	// The gauges went up and back down, through the series the metrics
	// keep per level and flow schema.
	for _, name := range []string{"apiserver_flowcontrol_current_inqueue_requests", "apiserver_flowcontrol_current_executing_requests", "apiserver_flowcontrol_current_executing_seats"} {
		wantMetric(t, reg, name, map[string]string{"priority_level": "tiny", "flow_schema": "tiny"}, 0)
	}
}

func TestRejectLevel(t *testing.T) {
	t.Parallel()
	c, err := New(oneSeat(t, "      type: Reject"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	srv := serve(t, c, b)
	done := make(chan struct{})
	go func() { get(t, srv.URL+"/first", "alice").Body.Close(); close(done) }()
	<-b.entered
	check429(t, get(t, srv.URL+"/second", "bob"))
	close(b.release)
	<-done
}

func TestDeadlineWhileQueued(t *testing.T) {
	t.Parallel()
	c, err := New(oneSeat(t, "      type: Queue\n      queuing: {queues: 4, handSize: 2, queueLengthLimit: 10}"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	srv := serve(t, c, b)
	done := make(chan struct{})
	go func() { get(t, srv.URL+"/first", "alice").Body.Close(); close(done) }()
	<-b.entered
	// A 200ms deadline allows 50ms of queueing: the seat is still held, so
	// the request is rejected and its handler never runs.
	start := time.Now()
	check429(t, get(t, srv.URL+"/second?timeout=200ms", "bob"))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("rejection took %v", d)
	}
	if n := b.ran.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1 (the queued request must never run)", n)
	}
	if levelWaiting(c, "tiny") != 0 {
		t.Errorf("the timed-out request is still queued")
	}
	close(b.release)
	<-done
}

func TestExempt(t *testing.T) {
	t.Parallel()
	c, err := New(oneSeat(t, "      type: Reject"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	srv := serve(t, c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			b.ServeHTTP(w, r)
			return
		}
		w.Write([]byte("ok"))
	}))
	done := make(chan struct{})
	go func() { get(t, srv.URL+"/block", "alice").Body.Close(); close(done) }()
	<-b.entered
	exemptUID := StableUID(KindPriorityLevelConfiguration, NameExempt)
	tests := []struct {
		name, path, user string
		groups           []string
		wantFS           string
	}{
		{name: "masters_group", path: "/apis/g/v1/things", user: "bob", groups: []string{"system:masters", "system:authenticated"}, wantFS: "exempt"},
		{name: "healthz", path: "/healthz", user: "system:anonymous", groups: []string{"system:unauthenticated"}, wantFS: "probes"},
		{name: "livez", path: "/livez", user: "bob", groups: []string{"system:authenticated"}, wantFS: "probes"},
	}
	for _, tt := range tests {
		resp := get(t, srv.URL+tt.path, tt.user, tt.groups...)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d while the level is full", tt.name, resp.StatusCode)
		}
		if got := resp.Header.Get(HeaderPriorityLevelUID); got != exemptUID {
			t.Errorf("%s: priority level uid %q, want exempt's %q", tt.name, got, exemptUID)
		}
		if got := resp.Header.Get(HeaderFlowSchemaUID); got != StableUID(KindFlowSchema, tt.wantFS) {
			t.Errorf("%s: flow schema uid %q, want %s's", tt.name, got, tt.wantFS)
		}
	}
	// bob is in "tiny" too: not exempt, rejected.
	check429(t, get(t, srv.URL+"/apis/g/v1/things", "bob", "system:authenticated"))
	close(b.release)
	<-done
}

func TestResponseHeaders(t *testing.T) {
	t.Parallel()
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	tests := []struct {
		name, user string
		groups     []string
		fs, pl     string
	}{
		{"global_default", "alice", []string{"system:authenticated"}, "global-default", "global-default"},
		{"service_account", "system:serviceaccount:a:b", []string{"system:serviceaccounts", "system:authenticated"}, "service-accounts", "workload-low"},
		{"catch_all", "nobody", nil, "catch-all", "catch-all"},
	}
	for _, tt := range tests {
		resp := get(t, srv.URL+"/apis/g/v1/things", tt.user, tt.groups...)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", tt.name, resp.StatusCode)
		}
		if got, want := resp.Header.Get(HeaderFlowSchemaUID), StableUID(KindFlowSchema, tt.fs); got != want {
			t.Errorf("%s: %s = %q, want %q", tt.name, HeaderFlowSchemaUID, got, want)
		}
		if got, want := resp.Header.Get(HeaderPriorityLevelUID), StableUID(KindPriorityLevelConfiguration, tt.pl); got != want {
			t.Errorf("%s: %s = %q, want %q", tt.name, HeaderPriorityLevelUID, got, want)
		}
	}
	// No user: the chain is wrong, 500.
	resp, err := http.Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), ErrNoUser.Error()) {
		t.Errorf("no user: %d %s", resp.StatusCode, body)
	}
}

func TestWatchSeatsReleasedAfterInitialEvents(t *testing.T) {
	t.Parallel()
	c, err := New(oneSeat(t, "      type: Reject"))
	if err != nil {
		t.Fatal(err)
	}
	initialized, endWatch := make(chan struct{}), make(chan struct{})
	srv := serve(t, c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			w.Write([]byte("ok"))
			return
		}
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		<-initialized // the initial events are being sent: the seat is held
		filters.WatchInitialized(r.Context())
		<-endWatch
	}))
	watchDone := make(chan struct{})
	go func() {
		resp := get(t, srv.URL+"/apis/g/v1/things?watch=true", "alice")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		close(watchDone)
	}()
	waitFor(t, func() bool { return levelSeats(c, "tiny") == 1 })
	check429(t, get(t, srv.URL+"/apis/g/v1/things", "bob")) // the watch holds the one seat
	close(initialized)
	waitFor(t, func() bool { return levelSeats(c, "tiny") == 0 })
	resp := get(t, srv.URL+"/apis/g/v1/things", "bob")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after the watch's initial events, a GET got %d", resp.StatusCode)
	}
	if got := c.watches.interested(&filters.RequestInfo{APIGroup: "g", Resource: "things", Namespace: "n", Name: "x"}); got != 1 {
		t.Errorf("interested watches %d, want 1", got)
	}
	close(endWatch)
	<-watchDone
	waitFor(t, func() bool {
		return c.watches.interested(&filters.RequestInfo{APIGroup: "g", Resource: "things"}) == 0
	})
}

func TestMaxInFlightWhenDisabled(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Disabled: true, MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	srv := serve(t, c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/block") {
			b.ServeHTTP(w, r)
			return
		}
		w.Write([]byte("ok"))
	}))
	done := make(chan struct{})
	go func() { get(t, srv.URL+"/block/apis/g/v1/things", "alice").Body.Close(); close(done) }()
	<-b.entered
	resp := get(t, srv.URL+"/apis/g/v1/things", "bob")
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", resp.Header.Get("Retry-After"))
	}
	check429(t, resp)
	tests := []struct {
		name, method, path string
		groups             []string
	}{
		{"masters_bypass", "GET", "/apis/g/v1/things", []string{"system:masters"}},
		{"mutating_has_own_limit", "POST", "/apis/g/v1/things", nil},
		{"long_running_excluded", "GET", "/apis/g/v1/things?watch=true", nil},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		req.Header.Set("X-Test-User", "carol")
		req.Header.Set("X-Test-Groups", strings.Join(tt.groups, ","))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", tt.name, resp.StatusCode)
		}
	}
	close(b.release)
	<-done
}

func TestDebugDumps(t *testing.T) {
	t.Parallel()
	c, err := New(oneSeat(t, "      type: Queue\n      queuing: {queues: 2, handSize: 1, queueLengthLimit: 5}"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	srv := serve(t, c, b)
	done := make(chan struct{}, 2)
	go func() { get(t, srv.URL+"/apis/g/v1/namespaces/n/things/a", "alice").Body.Close(); done <- struct{}{} }()
	<-b.entered
	go func() { get(t, srv.URL+"/apis/g/v1/namespaces/n/things/b", "bob").Body.Close(); done <- struct{}{} }()
	waitFor(t, func() bool { return levelWaiting(c, "tiny") == 1 })
	dump := func(path string) string {
		rec := &strings.Builder{}
		w := &recorder{h: http.Header{}, b: rec}
		r, _ := http.NewRequest("GET", "/debug/api_priority_and_fairness/"+path, nil)
		c.DebugHandler().ServeHTTP(w, r)
		// Collapse the tabwriter's padding, one line per row.
		var lines []string
		for _, l := range strings.Split(rec.String(), "\n") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		return strings.Join(lines, "\n")
	}
	levels := dump("dump_priority_levels")
	if !strings.HasPrefix(levels, "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests,") {
		t.Errorf("dump_priority_levels header:\n%s", levels)
	}
	if !strings.Contains(levels, "tiny,") || !strings.Contains(levels, "false,") {
		t.Errorf("dump_priority_levels lacks tiny:\n%s", levels)
	}
	if q := dump("dump_queues"); !strings.HasPrefix(q, "PriorityLevelName, Index, PendingRequests,") || strings.Count(q, "tiny") != 2 {
		t.Errorf("dump_queues:\n%s", q)
	}
	reqs := dump("dump_requests?includeRequestDetails=1")
	if !strings.Contains(reqs, "UserName") || !strings.Contains(reqs, "bob") || !strings.Contains(reqs, "alice") || !strings.Contains(reqs, "/apis/g/v1/namespaces/n/things/b") {
		t.Errorf("dump_requests:\n%s", reqs)
	}
	close(b.release)
	<-done
	<-done
}

type recorder struct {
	h http.Header
	b *strings.Builder
}

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(p []byte) (int, error) { return r.b.Write(p) }
func (r *recorder) WriteHeader(int)             {}

// waitFor polls cond until it holds, failing after 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func levelOf(c *Controller, name string) *level {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.levels[name]
}

func levelWaiting(c *Controller, name string) int {
	l := levelOf(c, name)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

func levelSeats(c *Controller, name string) int {
	l := levelOf(c, name)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seatsInUse
}

// wantMetric checks the value of the sample of name with exactly labels.
func wantMetric(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string, want float64) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if len(got) != len(labels) {
				continue
			}
			match := true
			for k, v := range labels {
				if got[k] != v {
					match = false
				}
			}
			if !match {
				continue
			}
			var v float64
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Histogram != nil:
				v = float64(m.Histogram.GetSampleCount())
			}
			if v != want {
				t.Errorf("%s%v = %v, want %v", name, labels, v, want)
			}
			return
		}
	}
	t.Errorf("no sample %s%v", name, labels)
}
