package authn_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/kubeclient"
)

func TestParseTokenFile(t *testing.T) {
	t.Parallel()
	tf, err := authn.ParseTokenFile(strings.NewReader(`# comment
tok1,alice,uid-a,"dev,ops"
tok2,bob,uid-b
,nobody,uid-n
tok1,alice2,uid-a2,"g"
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		token string
		want  *filters.User
	}{
		{"tok1", &filters.User{Name: "alice2", UID: "uid-a2", Groups: []string{"g"}}},
		{"tok2", &filters.User{Name: "bob", UID: "uid-b"}},
		{"", nil},
		{"nope", nil},
	}
	for _, tt := range tests {
		u, ok, err := tf.AuthenticateToken(t.Context(), tt.token)
		if err != nil || ok != (tt.want != nil) || !reflect.DeepEqual(u, tt.want) {
			t.Errorf("%q: %+v %v %v, want %+v", tt.token, u, ok, err, tt.want)
		}
	}
	if _, err := authn.ParseTokenFile(strings.NewReader("tok,user\n")); !errors.Is(err, authn.ErrTokenFile) {
		t.Errorf("two columns: %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	known := authn.TokenAuthenticatorFunc(func(_ context.Context, tok string) (*filters.User, bool, error) {
		switch tok {
		case "good":
			return &filters.User{Name: "alice"}, true, nil
		case "broken":
			return nil, false, errors.New("backend down")
		}
		return nil, false, nil
	})
	b := authn.NewBearerToken(nil, known)
	tests := []struct {
		name     string
		header   string
		wantUser string
		wantOK   bool
		wantErr  error
		kept     bool
	}{
		{name: "valid", header: "Bearer good", wantUser: "alice", wantOK: true},
		{name: "scheme_case_insensitive", header: "bEaReR good", wantUser: "alice", wantOK: true},
		{name: "surrounding_space", header: "  Bearer good  ", wantUser: "alice", wantOK: true},
		{name: "invalid_token_is_error_not_anonymous", header: "Bearer bad", wantErr: authn.ErrInvalidToken, kept: true},
		{name: "backend_error", header: "Bearer broken", wantErr: errors.New(""), kept: true},
		{name: "no_header", header: ""},
		{name: "basic_scheme_ignored", header: "Basic dXNlcjpwYXNz", kept: true},
		{name: "double_space_ignored", header: "Bearer  good", kept: true},
		{name: "scheme_only", header: "Bearer", kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := b.Authenticate(r)
			if ok != tt.wantOK || (ok && u.Name != tt.wantUser) {
				t.Errorf("got %+v %v", u, ok)
			}
			if (tt.wantErr == nil) != (err == nil) || (errors.Is(tt.wantErr, authn.ErrInvalidToken) && !errors.Is(err, authn.ErrInvalidToken)) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if kept := r.Header.Get("Authorization") != ""; kept != tt.kept {
				t.Errorf("Authorization kept = %v, want %v", kept, tt.kept)
			}
		})
	}
}

// kubeStandIn is a local HTTPS stand-in for the kube-apiserver's
// TokenReview and ConfigMap endpoints.
type kubeStandIn struct {
	srv     *httptest.Server
	reviews atomic.Int32
	// mu guards the fields below.
	mu        sync.Mutex
	down      bool
	block     chan struct{}
	configMap map[string]string
	cmCode    int
	lastSpec  authn.TokenReviewSpec
}

func newKubeStandIn(t *testing.T) *kubeStandIn {
	t.Helper()
	k := &kubeStandIn{cmCode: 200}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		down, block, cm, code := k.down, k.block, k.configMap, k.cmCode
		k.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer server-token" {
			w.WriteHeader(401)
			return
		}
		if down {
			w.WriteHeader(503)
			return
		}
		switch {
		case r.Method == "POST" && r.URL.Path == authn.TokenReviewPath:
			k.reviews.Add(1)
			if block != nil {
				<-block
			}
			var tr authn.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil || tr.Kind != "TokenReview" || tr.APIVersion != "authentication.k8s.io/v1" {
				w.WriteHeader(400)
				return
			}
			k.mu.Lock()
			k.lastSpec = tr.Spec
			k.mu.Unlock()
			switch tr.Spec.Token {
			case "alice-token":
				tr.Status = authn.TokenReviewStatus{Authenticated: true, User: authn.TokenReviewUser{Username: "alice", UID: "a-1",
					Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"x"}}}, Audiences: tr.Spec.Audiences}
			case "other-audience":
				tr.Status = authn.TokenReviewStatus{Authenticated: true, User: authn.TokenReviewUser{Username: "eve"}, Audiences: []string{"elsewhere"}}
			case "expired-token":
				tr.Status = authn.TokenReviewStatus{Error: "token has expired"}
			default:
				tr.Status = authn.TokenReviewStatus{}
			}
			w.WriteHeader(201)
			_ = json.NewEncoder(w).Encode(tr)
		case r.Method == "GET" && r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication":
			if code != 200 {
				w.WriteHeader(code)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"denied","code":403}`))
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "data": cm})
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *kubeStandIn) set(f func(k *kubeStandIn)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f(k)
}

func (k *kubeStandIn) client(t *testing.T) *kubeclient.Client {
	t.Helper()
	c, err := kubeclient.New(kubeclient.Config{Host: k.srv.URL, CAData: caPEMOf(k.srv), BearerToken: "server-token",
		Backoff: kubeclient.Backoff{Initial: time.Millisecond, Factor: 1, Jitter: -1, Steps: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clock is a manual clock for TTL tests.
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

func TestTokenReview_against_stand_in(t *testing.T) {
	t.Parallel()
	k := newKubeStandIn(t)
	tr, err := authn.NewTokenReview(authn.TokenReviewConfig{Client: k.client(t), Audiences: []string{"annex"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		token   string
		want    *filters.User
		wantErr error
	}{
		{token: "alice-token", want: &filters.User{Name: "alice", UID: "a-1", Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"x"}}}},
		{token: "other-audience"},
		{token: "expired-token", wantErr: authn.ErrInvalidToken},
		{token: "unknown"},
	}
	for _, tt := range tests {
		u, ok, err := tr.AuthenticateToken(t.Context(), tt.token)
		if !errors.Is(err, tt.wantErr) || ok != (tt.want != nil) || !reflect.DeepEqual(u, tt.want) {
			t.Errorf("%s: %+v %v %v", tt.token, u, ok, err)
		}
	}
	k.mu.Lock()
	spec := k.lastSpec
	k.mu.Unlock()
	if !reflect.DeepEqual(spec.Audiences, []string{"annex"}) {
		t.Errorf("audiences sent %v", spec.Audiences)
	}
	k.set(func(k *kubeStandIn) { k.down = true })
	if _, ok, err := tr.AuthenticateToken(t.Context(), "alice-token"); ok || !errors.Is(err, authn.ErrWebhook) {
		t.Errorf("cluster down: ok=%v err=%v, want fail closed with ErrWebhook", ok, err)
	}
}

func TestTokenCache_TTLs_and_fail_closed(t *testing.T) {
	t.Parallel()
	k := newKubeStandIn(t)
	tr, err := authn.NewTokenReview(authn.TokenReviewConfig{Client: k.client(t)})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Unix(1000, 0)}
	cache := authn.NewTokenCache(tr, authn.TokenCacheConfig{SuccessTTL: 10 * time.Second, FailureTTL: 5 * time.Second, Now: clk.Now})
	auth := func(tok string) (bool, error) {
		_, ok, err := cache.AuthenticateToken(t.Context(), tok)
		return ok, err
	}
	steps := []struct {
		name        string
		do          func()
		token       string
		wantOK      bool
		wantErr     bool
		wantReviews int32
	}{
		{name: "first_allowed_calls_webhook", token: "alice-token", wantOK: true, wantReviews: 1},
		{name: "allowed_cached", token: "alice-token", wantOK: true, wantReviews: 1},
		{name: "denied_calls_webhook", token: "unknown", wantReviews: 2},
		{name: "denied_cached", token: "unknown", wantReviews: 2},
		{name: "denied_expires_after_failure_ttl", do: func() { clk.Add(6 * time.Second) }, token: "unknown", wantReviews: 3},
		{name: "allowed_still_cached_at_9s", do: func() { clk.Add(3 * time.Second) }, token: "alice-token", wantOK: true, wantReviews: 3},
		{name: "allowed_expires_after_success_ttl", do: func() { clk.Add(2 * time.Second) }, token: "alice-token", wantOK: true, wantReviews: 4},
		{name: "cached_answer_survives_outage", do: func() { k.set(func(k *kubeStandIn) { k.down = true }) }, token: "alice-token", wantOK: true, wantReviews: 4},
		{name: "uncached_token_fails_closed_when_down", token: "new-token", wantErr: true, wantReviews: 4},
		{name: "expired_entry_fails_closed_when_down", do: func() { clk.Add(11 * time.Second) }, token: "alice-token", wantErr: true, wantReviews: 4},
		{name: "errors_not_cached", do: func() { k.set(func(k *kubeStandIn) { k.down = false }) }, token: "alice-token", wantOK: true, wantReviews: 5},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		ok, err := auth(s.token)
		if ok != s.wantOK || (err != nil) != s.wantErr {
			t.Errorf("%s: ok=%v err=%v", s.name, ok, err)
		}
		if got := k.reviews.Load(); got != s.wantReviews {
			t.Errorf("%s: %d reviews, want %d", s.name, got, s.wantReviews)
		}
	}
}

func TestTokenCache_concurrent_misses_share_one_review(t *testing.T) {
	t.Parallel()
	k := newKubeStandIn(t)
	block := make(chan struct{})
	k.set(func(k *kubeStandIn) { k.block = block })
	tr, err := authn.NewTokenReview(authn.TokenReviewConfig{Client: k.client(t)})
	if err != nil {
		t.Fatal(err)
	}
	cache := authn.NewTokenCache(tr, authn.TokenCacheConfig{})
	const n = 20
	var wg sync.WaitGroup
	var oks atomic.Int32
	for range n {
		wg.Go(func() {
			if _, ok, err := cache.AuthenticateToken(context.Background(), "alice-token"); ok && err == nil {
				oks.Add(1)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for k.reviews.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling for the first review to arrive
	}
	close(block)
	wg.Wait()
	if oks.Load() != n || k.reviews.Load() != 1 {
		t.Errorf("%d ok of %d, %d reviews; want all ok and 1 review", oks.Load(), n, k.reviews.Load())
	}
}

func TestTokenCache_caller_context_ends_wait(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := authn.TokenAuthenticatorFunc(func(ctx context.Context, _ string) (*filters.User, bool, error) {
		<-release
		return &filters.User{Name: "x"}, true, ctx.Err()
	})
	cache := authn.NewTokenCache(slow, authn.TokenCacheConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := cache.AuthenticateToken(ctx, "t"); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	close(release)
	// The detached lookup still completes and is cached for the next caller.
	deadline := time.Now().Add(5 * time.Second)
	for cache.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if u, ok, err := cache.AuthenticateToken(t.Context(), "t"); !ok || err != nil || u.Name != "x" {
		t.Errorf("after lookup: %+v %v %v", u, ok, err)
	}
}

func caPEMOf(srv *httptest.Server) []byte {
	return certs.EncodeCert(srv.Certificate())
}
