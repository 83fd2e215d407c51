package authn_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/filters"
)

// TestNew_union_semantics: first success wins; a presented but invalid
// credential is a 401 even where anonymous is allowed; anonymous only
// without credentials; system:authenticated added; metrics by result.
func TestNew_union_semantics(t *testing.T) {
	t.Parallel()
	tokens := authn.TokenAuthenticatorFunc(func(_ context.Context, tok string) (*filters.User, bool, error) {
		if tok == "good" {
			return &filters.User{Name: "alice", Groups: []string{"dev"}}, true, nil
		}
		return nil, false, nil
	})
	a, err := authn.New(authn.Config{Tokens: []authn.TokenAuthenticator{tokens}, Anonymous: &authn.AnonymousConfig{Paths: authn.StandaloneAnonymousPaths()}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := authn.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := authn.NewMetrics(reg); err != nil || again == nil {
		t.Fatalf("registering twice: %v", err)
	}
	f, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: a, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	h := f(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := filters.UserFrom(r.Context())
		w.Header().Set("X-User", u.Name)
		for _, g := range u.Groups {
			w.Header().Add("X-Group", g)
		}
	}))
	tests := []struct {
		name       string
		path, auth string
		wantCode   int
		wantUser   string
		wantGroups []string
	}{
		{name: "valid_token", path: "/apis/x", auth: "Bearer good", wantCode: 200, wantUser: "alice", wantGroups: []string{"dev", "system:authenticated"}},
		{name: "invalid_token_on_health_path_is_401_not_anonymous", path: "/healthz", auth: "Bearer bad", wantCode: 401},
		{name: "invalid_token_elsewhere", path: "/apis/x", auth: "Bearer bad", wantCode: 401},
		{name: "no_credentials_on_health_path_anonymous", path: "/healthz", wantCode: 200, wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}},
		{name: "no_credentials_elsewhere", path: "/apis/x", wantCode: 401},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", tt.path, nil)
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tt.wantCode || rec.Header().Get("X-User") != tt.wantUser {
			t.Errorf("%s: %d %q", tt.name, rec.Code, rec.Header().Get("X-User"))
		}
		if tt.wantCode == 200 && !equalStrings(rec.Header().Values("X-Group"), tt.wantGroups) {
			t.Errorf("%s: groups %v, want %v", tt.name, rec.Header().Values("X-Group"), tt.wantGroups)
		}
	}
	if got := testutil.CollectAndCount(reg, "authentication_attempts"); got != 3 {
		t.Errorf("%d result series, want success, failure and error", got)
	}
	if n := testutil.ToFloat64(m.AttemptsCounter("error")); n != 2 {
		t.Errorf("error attempts %v, want 2", n)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
