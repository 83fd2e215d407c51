package authz_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/kubeclient"
)

// sarStandIn is a local HTTPS stand-in for the kube-apiserver's
// SubjectAccessReview endpoint. Policy: alice may get/list things in ns
// "dev"; bob is denied with a reason; "confused" gets allowed+denied;
// everyone else no opinion.
type sarStandIn struct {
	srv   *httptest.Server
	calls atomic.Int32
	down  atomic.Bool
	mu    sync.Mutex
	last  authz.SubjectAccessReview
}

func newSARStandIn(t *testing.T) *sarStandIn {
	t.Helper()
	s := &sarStandIn{}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != authz.SubjectAccessReviewPath || r.Header.Get("Authorization") != "Bearer sa" {
			w.WriteHeader(404)
			return
		}
		s.calls.Add(1)
		if s.down.Load() {
			w.WriteHeader(503)
			return
		}
		var sar authz.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil || sar.Kind != "SubjectAccessReview" || sar.APIVersion != "authorization.k8s.io/v1" {
			w.WriteHeader(400)
			return
		}
		s.mu.Lock()
		s.last = sar
		s.mu.Unlock()
		ra := sar.Spec.ResourceAttributes
		switch {
		case sar.Spec.User == "alice" && ra != nil && ra.Namespace == "dev" && (ra.Verb == "get" || ra.Verb == "list"):
			sar.Status = authz.SubjectAccessReviewStatus{Allowed: true, Reason: "alice may read dev"}
		case sar.Spec.User == "alice" && sar.Spec.NonResourceAttributes != nil && sar.Spec.NonResourceAttributes.Path == "/metrics":
			sar.Status = authz.SubjectAccessReviewStatus{Allowed: true}
		case sar.Spec.User == "bob":
			sar.Status = authz.SubjectAccessReviewStatus{Denied: true, Reason: "bob is suspended"}
		case sar.Spec.User == "confused":
			sar.Status = authz.SubjectAccessReviewStatus{Allowed: true, Denied: true}
		default:
			sar.Status = authz.SubjectAccessReviewStatus{Reason: "no RBAC policy matched"}
		}
		w.WriteHeader(201)
		_ = json.NewEncoder(w).Encode(sar)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sarStandIn) client(t *testing.T) *kubeclient.Client {
	t.Helper()
	c, err := kubeclient.New(kubeclient.Config{Host: s.srv.URL, CAData: certs.EncodeCert(s.srv.Certificate()), BearerToken: "sa",
		Backoff: kubeclient.Backoff{Initial: time.Millisecond, Factor: 1, Jitter: -1, Steps: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func res(user, verb, ns string) authz.Attributes {
	return authz.Attributes{User: &filters.User{Name: user, UID: "u-" + user, Groups: []string{"g1"}, Extra: map[string][]string{"k": {"v"}}},
		Verb: verb, IsResourceRequest: true, APIGroup: "example.com", APIVersion: "v1", Namespace: ns, Resource: "things"}
}

func TestWebhook_decisions(t *testing.T) {
	t.Parallel()
	s := newSARStandIn(t)
	w, err := authz.NewWebhook(authz.WebhookConfig{Client: s.client(t)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		attrs      authz.Attributes
		want       authz.Decision
		wantReason string
		wantErr    bool
	}{
		{name: "allowed", attrs: res("alice", "get", "dev"), want: authz.DecisionAllow, wantReason: "alice may read dev"},
		{name: "no_opinion", attrs: res("alice", "delete", "dev"), want: authz.DecisionNoOpinion, wantReason: "no RBAC policy matched"},
		{name: "denied", attrs: res("bob", "get", "dev"), want: authz.DecisionDeny, wantReason: "bob is suspended"},
		{name: "allowed_and_denied_is_deny_with_error", attrs: res("confused", "get", "dev"), want: authz.DecisionDeny, wantErr: true},
		{name: "non_resource", attrs: authz.Attributes{User: &filters.User{Name: "alice"}, Verb: "get", Path: "/metrics"}, want: authz.DecisionAllow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := w.Authorize(t.Context(), tt.attrs)
			if d != tt.want || reason != tt.wantReason || (err != nil) != tt.wantErr {
				t.Errorf("got %v %q %v", d, reason, err)
			}
		})
	}
}

func TestWebhook_sends_every_attribute(t *testing.T) {
	t.Parallel()
	s := newSARStandIn(t)
	w, err := authz.NewWebhook(authz.WebhookConfig{Client: s.client(t)})
	if err != nil {
		t.Fatal(err)
	}
	a := res("alice", "list", "dev")
	a.Subresource, a.Name, a.FieldSelector, a.LabelSelector = "status", "n1", "metadata.name=n1", "app=x"
	if _, _, err := w.Authorize(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	got, _ := json.Marshal(s.last.Spec)
	s.mu.Unlock()
	want := `{"resourceAttributes":{"namespace":"dev","verb":"list","group":"example.com","version":"v1","resource":"things","subresource":"status","name":"n1","fieldSelector":{"rawSelector":"metadata.name=n1"},"labelSelector":{"rawSelector":"app=x"}},"user":"alice","groups":["g1"],"extra":{"k":["v"]},"uid":"u-alice"}`
	if string(got) != want {
		t.Errorf("spec\n got %s\nwant %s", got, want)
	}
}

func TestWebhook_cache_TTLs_size_and_fail_closed(t *testing.T) {
	t.Parallel()
	s := newSARStandIn(t)
	clk := &clock{now: time.Unix(1000, 0)}
	reg := prometheus.NewRegistry()
	m, err := authz.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := authz.NewWebhook(authz.WebhookConfig{Client: s.client(t), AllowTTL: 10 * time.Second, DenyTTL: 3 * time.Second, CacheSize: 4, Now: clk.Now, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		do        func()
		attrs     authz.Attributes
		want      authz.Decision
		wantErr   bool
		wantCalls int32
	}{
		{name: "allow_miss", attrs: res("alice", "get", "dev"), want: authz.DecisionAllow, wantCalls: 1},
		{name: "allow_hit", attrs: res("alice", "get", "dev"), want: authz.DecisionAllow, wantCalls: 1},
		{name: "deny_miss", attrs: res("bob", "get", "dev"), want: authz.DecisionDeny, wantCalls: 2},
		{name: "deny_hit", attrs: res("bob", "get", "dev"), want: authz.DecisionDeny, wantCalls: 2},
		{name: "no_opinion_cached_with_deny_ttl", attrs: res("carol", "get", "dev"), want: authz.DecisionNoOpinion, wantCalls: 3},
		{name: "deny_expires_after_3s", do: func() { clk.Add(4 * time.Second) }, attrs: res("bob", "get", "dev"), want: authz.DecisionDeny, wantCalls: 4},
		{name: "allow_still_cached_at_4s", attrs: res("alice", "get", "dev"), want: authz.DecisionAllow, wantCalls: 4},
		{name: "cached_allow_survives_outage", do: func() { s.down.Store(true) }, attrs: res("alice", "get", "dev"), want: authz.DecisionAllow, wantCalls: 4},
		{name: "uncached_fails_closed", attrs: res("alice", "list", "dev"), want: authz.DecisionNoOpinion, wantErr: true, wantCalls: 6},
		{name: "allow_expires_after_10s_then_fails_closed", do: func() { clk.Add(7 * time.Second) }, attrs: res("alice", "get", "dev"), want: authz.DecisionNoOpinion, wantErr: true, wantCalls: 8},
		{name: "error_not_cached", do: func() { s.down.Store(false) }, attrs: res("alice", "get", "dev"), want: authz.DecisionAllow, wantCalls: 9},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		d, _, err := w.Authorize(t.Context(), st.attrs)
		if d != st.want || (err != nil) != st.wantErr {
			t.Errorf("%s: %v %v", st.name, d, err)
		}
		if st.wantErr && !errors.Is(err, authz.ErrWebhook) {
			t.Errorf("%s: err %v does not wrap ErrWebhook", st.name, err)
		}
		if got := s.calls.Load(); got != st.wantCalls {
			t.Errorf("%s: %d calls, want %d", st.name, got, st.wantCalls)
		}
	}
	for i := range 10 {
		_, _, _ = w.Authorize(t.Context(), res("user"+string(rune('a'+i)), "get", "dev"))
	}
	if n := w.CacheLen(); n > 4 {
		t.Errorf("cache holds %d entries, bound is 4", n)
	}
	if hits := testutil.ToFloat64(m.CacheCounter("hit")); hits != 4 {
		t.Errorf("cache hits metric %v, want 4", hits)
	}
	big := res("alice", "get", "dev")
	big.Name = strings.Repeat("n", 10000)
	before := s.calls.Load()
	_, _, _ = w.Authorize(t.Context(), big)
	_, _, _ = w.Authorize(t.Context(), big)
	if s.calls.Load()-before != 2 {
		t.Errorf("a review over 10000 bytes was cached")
	}
}

// TestWebhook_through_filter_fails_closed: with the cluster down, the
// delegated chain answers 500 (never allows); with it up, 403 with the
// webhook's reason.
func TestWebhook_through_filter_fails_closed(t *testing.T) {
	t.Parallel()
	s := newSARStandIn(t)
	w, err := authz.NewWebhook(authz.WebhookConfig{Client: s.client(t)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := authz.New(authz.Config{Authorizers: []authz.NamedAuthorizer{{Name: authz.NameWebhook, Authorizer: w}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a})
	if err != nil {
		t.Fatal(err)
	}
	h := f(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	do := func(user string) (int, string) {
		r := httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/dev/things", nil)
		info := &filters.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "example.com", APIVersion: "v1", Namespace: "dev", Resource: "things"}
		r = r.WithContext(filters.ContextWithRequestInfo(filters.ContextWithUser(r.Context(), &filters.User{Name: user}), info))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	if code, body := do("alice"); code != 200 {
		t.Errorf("alice: %d %s", code, body)
	}
	if code, body := do("carol"); code != 403 || !strings.Contains(body, `cannot list resource \"things\" in API group \"example.com\" in the namespace \"dev\": kubernetes.io/webhook: no RBAC policy matched`) {
		t.Errorf("carol: %d %s", code, body)
	}
	s.down.Store(true)
	if code, body := do("dave"); code != 500 || !strings.HasPrefix(body, "Internal Server Error: ") {
		t.Errorf("cluster down: %d %s", code, body)
	}
}

// BenchmarkWebhook_cache_hit measures a cached SubjectAccessReview answer
// (the JSON key of the spec and an LRU lookup).
func BenchmarkWebhook_cache_hit(b *testing.B) {
	s := &sarStandIn{}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sar authz.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&sar)
		sar.Status.Allowed = true
		_ = json.NewEncoder(w).Encode(sar)
	}))
	defer s.srv.Close()
	c, err := kubeclient.New(kubeclient.Config{Host: s.srv.URL, CAData: certs.EncodeCert(s.srv.Certificate())})
	if err != nil {
		b.Fatal(err)
	}
	w, err := authz.NewWebhook(authz.WebhookConfig{Client: c, AllowTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	a := res("alice", "get", "dev")
	if d, _, err := w.Authorize(b.Context(), a); d != authz.DecisionAllow || err != nil {
		b.Fatal(d, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if d, _, _ := w.Authorize(b.Context(), a); d != authz.DecisionAllow {
			b.Fatal(d)
		}
	}
}
