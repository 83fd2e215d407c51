package annex_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/meta"
)

const auditTestPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
- level: Metadata
`

// auditedBuilder is a server auditing everything at Metadata level to a
// log file in batch mode with a buffer that never fills and an hour-long
// batch wait: events reach the file only when the buffer is flushed, at
// shutdown. Its validator answers 403 for an object named "denied" and
// panics for one named "boom".
func auditedBuilder(t *testing.T) (annex.Builder, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := audit.ParsePolicy([]byte(auditTestPolicy))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "logs", "audit.log") // the directory is made by Build
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gr := meta.GroupResource{Group: "test.annex.dev", Resource: "widgets"}
	return annex.Builder{
		Audit: audit.Config{Policy: p, Log: audit.LogConfig{Path: logPath,
			Batch: audit.BatchConfig{Mode: audit.ModeBatch, BufferSize: 1000, MaxBatchSize: 1000, MaxBatchWait: time.Hour}}},
		Authentication: annex.Authentication{TokenAuthFile: tokens},
		Admission: annex.Admission{Validators: []admission.Validator{admission.ValidatorFunc(func(_ context.Context, a *admission.Attributes) error {
			switch a.Name {
			case "denied":
				return meta.NewForbidden(gr, a.Name, errDenied)
			case "boom":
				panic("boom")
			}
			return nil
		})}},
	}, logPath
}

const errDenied = "denied by the test validator"

// readEvents decodes the log's events, one per line.
func readEvents(t *testing.T, path string) []audit.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Event
	for line := range bytes.Lines(data) {
		var ev audit.Event
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// TestAuditThroughServer runs a sequence of requests through a built server
// with audit on and checks the events a shutdown flushes: every buffered
// event is in the file when Run returns (none before), each request has its
// stages, the authorization decision, the impersonated user, the stage
// latencies and the rejecting stage; a handler's panic is a Panic event and a
// 500, and the server keeps serving.
func TestAuditThroughServer(t *testing.T) {
	t.Parallel()
	b, logPath := auditedBuilder(t)
	ts := startServer(t, b)
	u := ts.URL + "/apis/test.annex.dev/v1/namespaces/ns/widgets"
	alice := ts.AnonymousClient() // sends alice's token, no certificate

	type request struct {
		name, method, path, body string
		client                   *http.Client
		header                   http.Header
		code                     int
	}
	widget := func(name string) string {
		return `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"` + name + `"}}`
	}
	seq := []request{
		{name: "create", method: "POST", path: u, body: widget("w1"), code: 201},
		{name: "get", method: "GET", path: u + "/w1", code: 200},
		{name: "list", method: "GET", path: u, code: 200},
		{name: "conflict", method: "POST", path: u, body: widget("w1"), code: 409},
		{name: "denied", method: "POST", path: u, body: widget("denied"), code: 403},
		{name: "forbidden", method: "GET", path: u, client: alice, header: http.Header{"Authorization": {"Bearer alice-token"}}, code: 403},
		{name: "impersonated", method: "GET", path: u + "/w1", header: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}, code: 200},
		{name: "panic", method: "POST", path: u, body: widget("boom"), code: 500},
		{name: "after_panic", method: "GET", path: u + "/w1", code: 200},
		// Failed authentication never reaches the audit stage: the
		// authentication stage reports it, as kube-apiserver's
		// WithFailedAuthenticationAudit, in one ResponseStarted event.
		{name: "bad_token", method: "GET", path: u + "/w1", client: alice, header: http.Header{"Authorization": {"Bearer nope"}}, code: 401},
		{name: "bad_token_and_query", method: "DELETE", path: u + "/w1?access_token=x", client: alice, header: http.Header{"Authorization": {"bearer nope"}}, code: 401},
	}
	ids := map[string]string{} // audit ID per request name
	for _, r := range seq {
		req, err := http.NewRequest(r.method, r.path, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range r.header {
			req.Header[k] = v
		}
		if r.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		c := r.client
		if c == nil {
			c = ts.Client()
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != r.code {
			t.Fatalf("%s: %d, want %d: %s", r.name, resp.StatusCode, r.code, body)
		}
		ids[r.name] = resp.Header.Get("Audit-Id")
		if ids[r.name] == "" {
			t.Fatalf("%s: no Audit-Id header", r.name)
		}
	}

	// A watch open when shutdown starts: its events are flushed too.
	req, _ := http.NewRequest("GET", u+"?watch=1", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	watchID := resp.Header.Get("Audit-Id")
	go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body)) }()

	// Batch mode with an hour's wait: nothing is written before shutdown.
	if data, err := os.ReadFile(logPath); err != nil || len(data) != 0 {
		t.Fatalf("before shutdown the log has %d bytes (%v), want 0: the events should be buffered", len(data), err)
	}
	if err := ts.Close(); err != nil { // Run stops the auditor after the server drained
		t.Fatalf("Run: %v", err)
	}

	byID := map[string][]audit.Event{}
	for _, ev := range readEvents(t, logPath) {
		byID[ev.AuditID] = append(byID[ev.AuditID], ev)
	}
	stages := func(evs []audit.Event) string {
		var s []string
		for _, ev := range evs {
			s = append(s, string(ev.Stage))
		}
		return strings.Join(s, ",")
	}
	last := func(name string) audit.Event {
		evs := byID[ids[name]]
		if len(evs) == 0 {
			t.Fatalf("%s: no events (audit ID %s)", name, ids[name])
		}
		return evs[len(evs)-1]
	}
	for _, r := range seq {
		want := "RequestReceived,ResponseComplete"
		switch r.name {
		case "panic":
			want = "RequestReceived,Panic"
		case "bad_token", "bad_token_and_query":
			want = "ResponseStarted"
		}
		if got := stages(byID[ids[r.name]]); got != want {
			t.Errorf("%s: stages %s, want %s", r.name, got, want)
		}
		if ev := last(r.name); ev.ResponseStatus == nil || int(ev.ResponseStatus.Code) != r.code {
			t.Errorf("%s: responseStatus %+v, want code %d", r.name, ev.ResponseStatus, r.code)
		}
	}
	if got := stages(byID[watchID]); got != "RequestReceived,ResponseStarted,ResponseComplete" {
		t.Errorf("watch open at shutdown: stages %s", got)
	}

	checks := []struct {
		name, key, want string // want "" means absent; "*" means present
	}{
		{"create", "authorization.k8s.io/decision", "allow"},
		{"create", "authorization.k8s.io/reason", "*"},
		{"create", audit.RejectedByAnnotation, ""},
		{"conflict", audit.RejectedByAnnotation, "storage"},
		{"denied", audit.RejectedByAnnotation, "admission"},
		{"forbidden", audit.RejectedByAnnotation, "authorization"},
		{"forbidden", "authorization.k8s.io/decision", "forbid"},
		{"get", audit.RejectedByAnnotation, ""},
	}
	for _, c := range checks {
		got, ok := last(c.name).Annotations[c.key]
		switch {
		case c.want == "" && ok:
			t.Errorf("%s: annotation %s = %q, want none", c.name, c.key, got)
		case c.want == "*" && !ok, c.want != "" && c.want != "*" && got != c.want:
			t.Errorf("%s: annotation %s = %q, want %q", c.name, c.key, got, c.want)
		}
	}
	// Stage latencies: from authentication on, the handler's steps last.
	for name, want := range map[string][]string{
		"create":    {"authentication=", "audit=", "impersonation=", "authorization=", "admission=", "storage="},
		"get":       {"authentication=", "audit=", "authorization=", "storage="},
		"forbidden": {"authentication=", "audit=", "authorization="},
	} {
		lat := last(name).Annotations[audit.StageLatenciesAnnotation]
		at := 0
		for _, w := range want {
			i := strings.Index(lat[at:], w)
			if i < 0 {
				t.Errorf("%s: stage latencies %q lack %q in order", name, lat, w)
				break
			}
			at += i
		}
		if strings.Contains(lat, "request-info") || strings.Count(lat, "admission=") > 1 {
			t.Errorf("%s: stage latencies %q list a generic stage or a step twice", name, lat)
		}
	}
	if lat := last("forbidden").Annotations[audit.StageLatenciesAnnotation]; strings.Contains(lat, "storage") {
		t.Errorf("forbidden: stage latencies %q name a step it never reached", lat)
	}
	if testing.Verbose() {
		for _, n := range []string{"create", "denied", "forbidden", "impersonated", "panic"} {
			b, _ := json.Marshal(last(n))
			t.Logf("%s: %s", n, b)
		}
	}
	for _, name := range []string{"bad_token", "bad_token_and_query"} {
		ev := last(name)
		if ev.ResponseStatus == nil || ev.ResponseStatus.Message != "Unauthorized" || ev.ResponseStatus.Status != "Failure" || ev.ResponseStatus.Reason != "Unauthorized" {
			t.Errorf("%s: responseStatus %+v, want kube's 401 Status", name, ev.ResponseStatus)
		}
		if ev.User.Username != "" || len(ev.User.Groups) != 0 || ev.Level != audit.LevelMetadata {
			t.Errorf("%s: user %+v level %s, want no user at Metadata", name, ev.User, ev.Level)
		}
		if ev.ObjectRef == nil || ev.ObjectRef.Name != "w1" || ev.ObjectRef.Resource != "widgets" || len(ev.Annotations) != 0 {
			t.Errorf("%s: objectRef %+v annotations %v", name, ev.ObjectRef, ev.Annotations)
		}
	}
	imp := last("impersonated")
	if imp.ImpersonatedUser == nil || imp.ImpersonatedUser.Username != "bob" || imp.User.Username != "admin" {
		t.Errorf("impersonated: user %+v impersonatedUser %+v", imp.User, imp.ImpersonatedUser)
	}
	if p := last("panic"); p.ResponseStatus == nil || !strings.Contains(p.ResponseStatus.Message, "boom") {
		t.Errorf("panic: responseStatus %+v", p.ResponseStatus)
	}
}
