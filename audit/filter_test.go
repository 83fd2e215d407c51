package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// lockedBuffer is an io.Writer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSuffix(l.b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

var (
	received = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	stageAt  = received.Add(2 * time.Millisecond)
)

// newLogAuditor returns an auditor writing to a buffer in blocking mode with
// a fixed clock.
func newLogAuditor(t testing.TB, policy string, mod func(*audit.Config)) (*audit.Auditor, *lockedBuffer) {
	t.Helper()
	buf := &lockedBuffer{}
	cfg := audit.Config{
		Policy: mustPolicy(t, policy),
		Log:    audit.LogConfig{Writer: buf},
		Now:    func() time.Time { return stageAt },
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := audit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, buf
}

// chain is what runs before audit in a server: audit ID, received time,
// request info, authentication (user) and, after audit, impersonation.
func chain(a *audit.Auditor, user, impersonate *filters.User, h http.Handler) http.Handler {
	if impersonate != nil {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := filters.ContextWithImpersonator(filters.ContextWithUser(r.Context(), impersonate), user)
			filters.RecordImpersonatedUser(ctx, impersonate)
			inner.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	h = a.Filter(h)
	h = filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := filters.ContextWithAuditID(r.Context(), "aid-1")
		ctx = filters.ContextWithReceivedTimestamp(ctx, received)
		if user != nil {
			ctx = filters.ContextWithUser(ctx, user)
		}
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

const allPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: [nobody]
- level: RequestResponse
  users: [rr]
- level: Request
  users: [req]
- level: Metadata
`

const (
	envURI  = "/apis/example.annex.dev/v1/namespaces/ns1/environments"
	rrBegin = `{"kind":"Event","apiVersion":"audit.k8s.io/v1",`
	recvTS  = `"requestReceivedTimestamp":"2025-03-04T05:06:07.123456Z"`
	stageTS = `"stageTimestamp":"2025-03-04T05:06:07.125456Z"`
)

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

func TestFilter_events(t *testing.T) {
	t.Parallel()
	alice := &filters.User{Name: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a"}}}
	rr := &filters.User{Name: "rr", Groups: []string{"system:authenticated"}}
	req := &filters.User{Name: "req"}
	created := `{"apiVersion":"example.annex.dev/v1","kind":"Environment","metadata":{"name":"e2","namespace":"ns1","uid":"uid-2","resourceVersion":"7"},"spec":{"x":1}}`
	updateBody := "{\n  \"apiVersion\": \"example.annex.dev/v1\",\n  \"kind\": \"Environment\",\n  \"metadata\": {\"name\": \"e1\", \"uid\": \"uid-1\", \"resourceVersion\": \"5\", \"managedFields\": [{\"manager\": \"kubectl\"}]},\n  \"spec\": {\"x\": 2}\n}"
	aliceJSON := `"user":{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"],"extra":{"scopes":["a"]}}`
	cases := []struct {
		name        string
		policy      string
		user        *filters.User
		impersonate *filters.User
		method, uri string
		body        string
		header      http.Header
		handler     http.HandlerFunc
		wantCode    int
		want        []string
	}{
		{
			name: "metadata_get", user: alice, method: "GET", uri: envURI + "/e1?pretty=1",
			header: http.Header{"User-Agent": {"kubectl/v1.33"}, "X-Forwarded-For": {"10.0.0.1, bogus"}},
			handler: func(w http.ResponseWriter, r *http.Request) {
				filters.RecordAuthorizationDecision(r.Context(), true, `RBAC: allowed by ClusterRoleBinding "admins"`, nil)
				writeJSON(w, 200, `{"kind":"Environment"}`)
			},
			wantCode: 200,
			want: []string{
				rrBegin + `"level":"Metadata","auditID":"aid-1","stage":"RequestReceived","requestURI":"` + envURI + `/e1?pretty=1","verb":"get",` + aliceJSON + `,"sourceIPs":["10.0.0.1","192.0.2.1"],"userAgent":"kubectl/v1.33","objectRef":{"resource":"environments","namespace":"ns1","name":"e1","apiGroup":"example.annex.dev","apiVersion":"v1"},` + recvTS + `,"stageTimestamp":"2025-03-04T05:06:07.123456Z"}`,
				rrBegin + `"level":"Metadata","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `/e1?pretty=1","verb":"get",` + aliceJSON + `,"sourceIPs":["10.0.0.1","192.0.2.1"],"userAgent":"kubectl/v1.33","objectRef":{"resource":"environments","namespace":"ns1","name":"e1","apiGroup":"example.annex.dev","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},` + recvTS + `,` + stageTS + `,"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"admins\""}}`,
			},
		},
		{
			name: "metadata_create_completes_object_ref_without_body", user: alice, method: "POST", uri: envURI, body: created,
			policy: "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
			handler: func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				writeJSON(w, 201, string(b))
			},
			wantCode: 201,
			want: []string{
				rrBegin + `"level":"Metadata","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `","verb":"create",` + aliceJSON + `,"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"e2","uid":"uid-2","apiGroup":"example.annex.dev","apiVersion":"v1","resourceVersion":"7"},"responseStatus":{"metadata":{},"code":201},` + recvTS + `,` + stageTS + `}`,
			},
		},
		{
			name: "request_create_records_body_as_sent", user: req, method: "POST", uri: envURI, body: created,
			policy: "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Request\n",
			handler: func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				filters.AddAuditAnnotation(r.Context(), "mutation.webhook.admission.k8s.io/round_0_index_0", `{"configuration":"c","webhook":"w","mutated":false}`)
				filters.AddAuditAnnotationWithLevel(r.Context(), "patch.webhook.admission.k8s.io/round_0_index_0", `{"patch":[]}`, "Request")
				filters.AddAuditAnnotationWithLevel(r.Context(), "too.detailed/key", "v", "RequestResponse")
				writeJSON(w, 201, string(b))
			},
			wantCode: 201,
			want: []string{
				rrBegin + `"level":"Request","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `","verb":"create","user":{"username":"req"},"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"e2","uid":"uid-2","apiGroup":"example.annex.dev","apiVersion":"v1","resourceVersion":"7"},"responseStatus":{"metadata":{},"code":201},"requestObject":` + created + `,` + recvTS + `,` + stageTS + `,"annotations":{"mutation.webhook.admission.k8s.io/round_0_index_0":"{\"configuration\":\"c\",\"webhook\":\"w\",\"mutated\":false}","patch.webhook.admission.k8s.io/round_0_index_0":"{\"patch\":[]}"}}`,
			},
		},
		{
			name: "request_response_update_omits_managed_fields", user: rr, method: "PUT", uri: envURI + "/e1", body: updateBody,
			policy: "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nomitManagedFields: true\nrules:\n- level: RequestResponse\n",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				writeJSON(w, 200, `{"kind":"Environment","metadata":{"managedFields":[{"manager":"kubectl"}],"name":"e1","resourceVersion":"6"},"spec":{"x":2}}`+"\n")
			},
			wantCode: 200,
			want: []string{
				rrBegin + `"level":"RequestResponse","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `/e1","verb":"update","user":{"username":"rr","groups":["system:authenticated"]},"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"e1","uid":"uid-1","apiGroup":"example.annex.dev","apiVersion":"v1","resourceVersion":"5"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"apiVersion":"example.annex.dev/v1","kind":"Environment","metadata":{"name":"e1","resourceVersion":"5","uid":"uid-1"},"spec":{"x":2}},"responseObject":{"kind":"Environment","metadata":{"name":"e1","resourceVersion":"6"},"spec":{"x":2}},` + recvTS + `,` + stageTS + `}`,
			},
		},
		{
			name: "metadata_forbidden_status", user: alice, method: "DELETE", uri: envURI + "/e1",
			policy: "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
			handler: func(w http.ResponseWriter, r *http.Request) {
				filters.RecordAuthorizationDecision(r.Context(), false, "", nil)
				filters.WriteStatus(w, meta.NewForbidden(meta.GroupResource{Group: "example.annex.dev", Resource: "environments"}, "e1", `User "alice" cannot delete resource "environments"`))
			},
			wantCode: 403,
			want: []string{
				rrBegin + `"level":"Metadata","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `/e1","verb":"delete",` + aliceJSON + `,"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"e1","apiGroup":"example.annex.dev","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"environments.example.annex.dev \"e1\" is forbidden: User \"alice\" cannot delete resource \"environments\"","reason":"Forbidden","details":{"name":"e1","group":"example.annex.dev","kind":"environments"},"code":403},` + recvTS + `,` + stageTS + `,"annotations":{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""}}`,
			},
		},
		{
			name: "request_response_not_found_records_status_object", user: rr, method: "GET", uri: envURI + "/gone",
			policy: "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n",
			handler: func(w http.ResponseWriter, r *http.Request) {
				filters.WriteStatus(w, meta.NewNotFound(meta.GroupResource{Group: "example.annex.dev", Resource: "environments"}, "gone"))
			},
			wantCode: 404,
			want: []string{
				rrBegin + `"level":"RequestResponse","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `/gone","verb":"get","user":{"username":"rr","groups":["system:authenticated"]},"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"gone","apiGroup":"example.annex.dev","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"environments.example.annex.dev \"gone\" not found","reason":"NotFound","details":{"name":"gone","group":"example.annex.dev","kind":"environments"},"code":404},"responseObject":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"environments.example.annex.dev \"gone\" not found","reason":"NotFound","details":{"name":"gone","group":"example.annex.dev","kind":"environments"},"code":404},` + recvTS + `,` + stageTS + `}`,
			},
		},
		{
			name: "non_resource_has_no_object_ref", user: alice, method: "GET", uri: "/healthz",
			policy: "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n  nonResourceURLs: ['/healthz*']\n",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				_, _ = io.WriteString(w, "ok")
			},
			wantCode: 200,
			want: []string{
				rrBegin + `"level":"RequestResponse","auditID":"aid-1","stage":"ResponseComplete","requestURI":"/healthz","verb":"get",` + aliceJSON + `,"sourceIPs":["192.0.2.1"],"responseStatus":{"metadata":{},"code":200},` + recvTS + `,` + stageTS + `}`,
			},
		},
		{
			name: "impersonation_records_both_users", user: alice, impersonate: &filters.User{Name: "bob", Groups: []string{"system:authenticated"}},
			method: "GET", uri: envURI + "/e1",
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, `{}`)
			},
			wantCode: 200,
			want: []string{
				rrBegin + `"level":"Metadata","auditID":"aid-1","stage":"RequestReceived","requestURI":"` + envURI + `/e1","verb":"get",` + aliceJSON + `,"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"e1","apiGroup":"example.annex.dev","apiVersion":"v1"},` + recvTS + `,"stageTimestamp":"2025-03-04T05:06:07.123456Z"}`,
				rrBegin + `"level":"Metadata","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `/e1","verb":"get",` + aliceJSON + `,"impersonatedUser":{"username":"bob","groups":["system:authenticated"]},"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"e1","apiGroup":"example.annex.dev","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},` + recvTS + `,` + stageTS + `}`,
			},
		},
		{
			name: "nothing_written_is_connection_closed_early", user: alice, method: "GET", uri: envURI + "/e1",
			policy:   "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
			handler:  func(w http.ResponseWriter, r *http.Request) {},
			wantCode: 200,
			want: []string{
				rrBegin + `"level":"Metadata","auditID":"aid-1","stage":"ResponseComplete","requestURI":"` + envURI + `/e1","verb":"get",` + aliceJSON + `,"sourceIPs":["192.0.2.1"],"objectRef":{"resource":"environments","namespace":"ns1","name":"e1","apiGroup":"example.annex.dev","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Success","message":"Connection closed early","code":200},` + recvTS + `,` + stageTS + `}`,
			},
		},
		{
			name: "level_none_writes_nothing", user: &filters.User{Name: "nobody"}, method: "GET", uri: envURI,
			handler: func(w http.ResponseWriter, r *http.Request) {
				filters.AddAuditAnnotation(r.Context(), "k", "v") // no recorder: a no-op
				writeJSON(w, 200, `{}`)
			},
			wantCode: 200,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			policy := c.policy
			if policy == "" {
				policy = allPolicy
			}
			a, buf := newLogAuditor(t, policy, nil)
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			r := httptest.NewRequest(c.method, c.uri, body)
			for k, v := range c.header {
				r.Header[k] = v
			}
			if c.body != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			w := httptest.NewRecorder()
			chain(a, c.user, c.impersonate, c.handler).ServeHTTP(w, r)
			if w.Code != c.wantCode {
				t.Fatalf("code = %d, want %d", w.Code, c.wantCode)
			}
			got := buf.lines()
			if len(got) != len(c.want) {
				t.Fatalf("%d events, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("event %d:\n got %s\nwant %s", i, got[i], c.want[i])
				}
				var ev audit.Event
				dec := json.NewDecoder(strings.NewReader(got[i]))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&ev); err != nil {
					t.Errorf("event %d does not decode strictly: %v", i, err)
				}
			}
		})
	}
}

func TestFilter_stage_latencies_and_rejection(t *testing.T) {
	t.Parallel()
	type traceKey struct{}
	a, buf := newLogAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n", func(c *audit.Config) {
		c.Stages = func(ctx context.Context, code int) (string, string) {
			rejected, _ := ctx.Value(traceKey{}).(*string)
			if code != http.StatusOK {
				t.Errorf("Stages got code %d, want 200", code)
			}
			return "authentication=0.2ms,authorization=1.1ms", *rejected
		}
	})
	for _, rejectedBy := range []string{"", "authorization"} {
		h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{}`)
		}))
		r := httptest.NewRequest("GET", envURI, nil)
		rb := rejectedBy
		r = r.WithContext(context.WithValue(r.Context(), traceKey{}, &rb))
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	lines := buf.lines()
	if len(lines) != 2 {
		t.Fatalf("events: %q", lines)
	}
	var first, second audit.Event
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if got := first.Annotations[audit.StageLatenciesAnnotation]; got != "authentication=0.2ms,authorization=1.1ms" {
		t.Errorf("latencies = %q", got)
	}
	if _, ok := first.Annotations[audit.RejectedByAnnotation]; ok {
		t.Errorf("rejected-by set on an accepted request: %v", first.Annotations)
	}
	if got := second.Annotations[audit.RejectedByAnnotation]; got != "authorization" {
		t.Errorf("rejected-by = %q", got)
	}
}

func TestFilter_first_annotation_value_wins(t *testing.T) {
	t.Parallel()
	a, buf := newLogAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n", nil)
	h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var wg sync.WaitGroup
		for i := range 8 { // validating webhooks annotate in parallel
			wg.Add(1)
			go func() {
				defer wg.Done()
				filters.AddAuditAnnotation(r.Context(), "w"+string(rune('0'+i))+"/k", "v")
			}()
		}
		wg.Wait()
		filters.AddAuditAnnotation(r.Context(), "w0/k", "other")
		writeJSON(w, 200, `{}`)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", envURI, nil))
	var ev audit.Event
	if err := json.Unmarshal([]byte(buf.lines()[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Annotations) != 8 || ev.Annotations["w0/k"] != "v" {
		t.Fatalf("annotations = %v", ev.Annotations)
	}
}

func TestFilter_response_over_limit_is_marked_truncated(t *testing.T) {
	t.Parallel()
	a, buf := newLogAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: RequestResponse\n", func(c *audit.Config) {
		c.MaxObjectBytes = 64
	})
	h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"items":[`+strings.Repeat(`{"a":1},`, 20)+`{}]}`)
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", envURI, nil))
	if !strings.HasSuffix(w.Body.String(), `{}]}`) {
		t.Fatalf("client did not get the whole body: %q", w.Body.String())
	}
	var ev audit.Event
	if err := json.Unmarshal([]byte(buf.lines()[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ResponseObject != nil || ev.Annotations[audit.TruncatedAnnotation] != "true" {
		t.Fatalf("responseObject = %s, annotations = %v", ev.ResponseObject, ev.Annotations)
	}
}

func TestFilter_panic_event_then_repanic(t *testing.T) {
	t.Parallel()
	a, buf := newLogAuditor(t, allPolicy, nil)
	var recovered any
	h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			panic("boom")
		}
	}))
	h = filters.WithPanicRecovery(filters.PanicRecoveryConfig{OnPanic: func(_ *http.Request, v any, _ []byte) { recovered = v }})(h)
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + envURI + "/e1")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 500 || recovered != "boom" {
		t.Fatalf("code = %d, recovered = %v", resp.StatusCode, recovered)
	}
	// The server keeps serving.
	resp, err = srv.Client().Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	lines := buf.lines()
	if len(lines) != 4 || !strings.Contains(lines[3], `"stage":"ResponseComplete"`) { // RequestReceived, Panic; then /healthz's two
		t.Fatalf("events:\n%s", strings.Join(lines, "\n"))
	}
	var ev audit.Event
	if err := json.Unmarshal([]byte(lines[1]), &ev); err != nil {
		t.Fatal(err)
	}
	want := audit.ResponseStatus{Code: 500, Status: "Failure", Reason: "InternalError", Message: "APIServer panic'd: boom"}
	if ev.Stage != audit.StagePanic || ev.ResponseStatus == nil || *ev.ResponseStatus != want {
		t.Fatalf("panic event = %s", lines[1])
	}
}

func TestFilter_response_started_for_streaming(t *testing.T) {
	t.Parallel()
	a, buf := newLogAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n", nil)
	sent := make(chan struct{})
	release := make(chan struct{})
	h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Error(err)
		}
		close(sent)
		<-release
		_, _ = io.WriteString(w, `{"type":"ADDED","object":{}}`+"\n")
	}))
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + envURI + "?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	// While the watch is open: RequestReceived and ResponseStarted only.
	lines := buf.lines()
	if len(lines) != 2 {
		t.Fatalf("events while streaming:\n%s", strings.Join(lines, "\n"))
	}
	var started audit.Event
	if err := json.Unmarshal([]byte(lines[1]), &started); err != nil {
		t.Fatal(err)
	}
	if started.Stage != audit.StageResponseStarted || started.Verb != "watch" || started.ResponseStatus == nil || started.ResponseStatus.Code != 200 {
		t.Fatalf("started = %s", lines[1])
	}
	close(release)
	_, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for len(buf.lines()) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	lines = buf.lines()
	var done audit.Event
	if len(lines) != 3 || json.Unmarshal([]byte(lines[2]), &done) != nil || done.Stage != audit.StageResponseComplete {
		t.Fatalf("events:\n%s", strings.Join(lines, "\n"))
	}
	if done.ResponseObject != nil {
		t.Errorf("a watch's stream was recorded: %s", done.ResponseObject)
	}
}

func TestFilter_long_running_without_response_fakes_started(t *testing.T) {
	t.Parallel()
	a, buf := newLogAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n", nil)
	h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", envURI+"?watch=1", nil))
	lines := buf.lines()
	if len(lines) != 2 || !strings.Contains(lines[0], `"stage":"ResponseStarted"`) || !strings.Contains(lines[0], `"message":"Connection closed early"`) ||
		!strings.Contains(lines[1], `"stage":"ResponseComplete"`) {
		t.Fatalf("events:\n%s", strings.Join(lines, "\n"))
	}
}

// failingWriter fails every write after ok succeeded.
type failingWriter struct {
	mu sync.Mutex
	ok int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ok <= 0 {
		return 0, errors.New("disk full")
	}
	f.ok--
	return len(p), nil
}

func TestFilter_blocking_strict_rejects_when_backend_fails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode     audit.Mode
		wantCode int
	}{
		{audit.ModeBlockingStrict, 500},
		{audit.ModeBlocking, 200},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			t.Parallel()
			reg := newRegistry()
			a, err := audit.New(audit.Config{
				Policy:     mustPolicy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"),
				Log:        audit.LogConfig{Writer: &failingWriter{}, Batch: audit.BatchConfig{Mode: c.mode}},
				Registerer: reg,
			})
			if err != nil {
				t.Fatal(err)
			}
			called := false
			h := chain(a, &filters.User{Name: "u"}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				writeJSON(w, 200, `{}`)
			}))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", envURI, nil))
			if w.Code != c.wantCode || called != (c.wantCode == 200) {
				t.Fatalf("code = %d, handler called = %v", w.Code, called)
			}
			if c.wantCode == 500 {
				if want := "Internal Server Error: \"" + envURI + "\": failed to store audit event\n"; w.Body.String() != want {
					t.Errorf("body = %q, want %q", w.Body.String(), want)
				}
				if got := reg.value(t, "apiserver_audit_requests_rejected_total", nil); got != 1 {
					t.Errorf("rejected = %v", got)
				}
				if got := reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "log"}); got != 1 {
					t.Errorf("errors = %v", got)
				}
			} else if got := reg.value(t, "apiserver_audit_error_total", map[string]string{"plugin": "log"}); got != 2 {
				t.Errorf("errors = %v, want 2 (both stages lost)", got)
			}
		})
	}
}

func TestNew_zero_config_is_no_audit(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]audit.Config{
		"zero":       {},
		"no_backend": {Policy: mustPolicy(t, allPolicy)},
		"no_policy":  {Log: audit.LogConfig{Writer: io.Discard}},
	} {
		a, err := audit.New(cfg)
		if err != nil || a != nil || a.Enabled() {
			t.Fatalf("%s: a = %v, err = %v", name, a, err)
		}
		h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
		if got := a.Filter(h); got == nil {
			t.Fatalf("%s: nil filter", name)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNew_rejects(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, allPolicy)
	for name, cfg := range map[string]audit.Config{
		"legacy_format":    {Policy: p, Log: audit.LogConfig{Writer: io.Discard, Format: "legacy"}},
		"unknown_mode":     {Policy: p, Log: audit.LogConfig{Writer: io.Discard, Batch: audit.BatchConfig{Mode: "fast"}}},
		"negative_size":    {Policy: p, Log: audit.LogConfig{Path: "x", MaxSize: -1}},
		"truncate_sizes":   {Policy: p, Log: audit.LogConfig{Writer: io.Discard, Truncate: audit.TruncateConfig{Enabled: true, MaxEventSize: 10, MaxBatchSize: 5}}},
		"missing_kubeconf": {Policy: p, Webhook: audit.WebhookConfig{ConfigFile: "/nonexistent/kubeconfig"}},
	} {
		if _, err := audit.New(cfg); !errors.Is(err, audit.ErrInvalidConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestFilter_level_metric counts requests by policy level, each level's
// series appearing once a request had it.
func TestFilter_level_metric(t *testing.T) {
	t.Parallel()
	reg := newRegistry()
	a, err := audit.New(audit.Config{
		Policy:     mustPolicy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  users: [quiet]\n- level: Metadata\n"),
		Log:        audit.LogConfig{Writer: io.Discard},
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"u", "u", "quiet", "u"} {
		h := chain(a, &filters.User{Name: user}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{}`) }))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", envURI, nil))
	}
	for level, want := range map[string]float64{"Metadata": 3, "None": 1, "Request": 0} {
		if got := reg.value(t, "apiserver_audit_level_total", map[string]string{"level": level}); got != want {
			t.Errorf("level %s: %v requests, want %v", level, got, want)
		}
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_audit_level_total" && len(mf.GetMetric()) != 2 {
			t.Errorf("%d level series, want 2 (the levels seen)", len(mf.GetMetric()))
		}
	}
}
