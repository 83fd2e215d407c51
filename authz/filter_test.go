package authz_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
)

// policy allows alice to get environments in ns "allowed", denies bob with a
// reason, errors for "boom", and has no opinion otherwise.
func policy(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	switch {
	case a.User != nil && a.User.Name == "bob":
		return authz.DecisionDeny, "bob is on leave", nil
	case a.Namespace == "boom":
		return authz.DecisionNoOpinion, "", errors.New("webhook unreachable <timeout>")
	case a.Namespace == "allowed-with-error":
		return authz.DecisionAllow, "", errors.New("partial rule evaluation failure")
	case a.Namespace == "allowed" && a.Verb == "get":
		return authz.DecisionAllow, "", nil
	}
	return authz.DecisionNoOpinion, "", nil
}

func TestWithAuthorization_bodies(t *testing.T) {
	t.Parallel()
	a, err := authz.New(authz.Config{Authorizers: []authz.NamedAuthorizer{{Name: "test", Authorizer: authz.AuthorizerFunc(policy)}}})
	if err != nil {
		t.Fatal(err)
	}
	type decision struct {
		d      authz.Decision
		reason string
		err    error
	}
	var seen []decision
	f, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a, OnDecision: func(_ *http.Request, d authz.Decision, reason string, err error) {
		seen = append(seen, decision{d, reason, err})
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := f(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "handled") }))
	alice := &filters.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}}
	tests := []struct {
		name     string
		user     *filters.User
		info     *filters.RequestInfo
		uri      string
		wantCode int
		wantCT   string
		wantBody string
		wantSeen authz.Decision
	}{
		{name: "allowed", user: alice, info: &filters.RequestInfo{IsResourceRequest: true, Verb: "get", APIGroup: "platform.example.com", Namespace: "allowed", Resource: "environments", Name: "e1"},
			wantCode: 200, wantBody: "handled", wantSeen: authz.DecisionAllow},
		{name: "allow_with_error_still_allows", user: alice, info: &filters.RequestInfo{IsResourceRequest: true, Verb: "get", Namespace: "allowed-with-error", Resource: "environments"},
			wantCode: 200, wantBody: "handled", wantSeen: authz.DecisionAllow},
		{name: "masters_allowed", user: &filters.User{Name: "root", Groups: []string{"system:masters"}}, info: &filters.RequestInfo{IsResourceRequest: true, Verb: "delete", Resource: "nodes", Name: "n1"},
			wantCode: 200, wantBody: "handled", wantSeen: authz.DecisionAllow},
		{name: "health_path_allowed_for_anonymous", user: &filters.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, info: &filters.RequestInfo{Verb: "get", Path: "/readyz"},
			wantCode: 200, wantBody: "handled", wantSeen: authz.DecisionAllow},
		{name: "namespaced_list", user: alice, info: &filters.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "platform.example.com", APIVersion: "v1", Namespace: "ns", Resource: "environments"},
			wantCode: 403, wantCT: "application/json", wantSeen: authz.DecisionNoOpinion,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"environments.platform.example.com is forbidden: User \"alice\" cannot list resource \"environments\" in API group \"platform.example.com\" in the namespace \"ns\"","reason":"Forbidden","details":{"group":"platform.example.com","kind":"environments"},"code":403}` + "\n"},
		{name: "core_group_named", user: alice, info: &filters.RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "p1"},
			wantCode: 403, wantCT: "application/json", wantSeen: authz.DecisionNoOpinion,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"p1\" is forbidden: User \"alice\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","details":{"name":"p1","kind":"pods"},"code":403}` + "\n"},
		{name: "cluster_scope_subresource_with_reason", user: &filters.User{Name: "bob"}, info: &filters.RequestInfo{IsResourceRequest: true, Verb: "update", APIGroup: "platform.example.com", Resource: "clusters", Subresource: "status", Name: "c1"},
			wantCode: 403, wantCT: "application/json", wantSeen: authz.DecisionDeny,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"clusters.platform.example.com \"c1\" is forbidden: User \"bob\" cannot update resource \"clusters/status\" in API group \"platform.example.com\" at the cluster scope: bob is on leave","reason":"Forbidden","details":{"name":"c1","group":"platform.example.com","kind":"clusters"},"code":403}` + "\n"},
		{name: "non_resource", user: alice, info: &filters.RequestInfo{Verb: "get", Path: "/metrics"},
			wantCode: 403, wantCT: "application/json", wantSeen: authz.DecisionNoOpinion,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{name: "no_user", info: &filters.RequestInfo{Verb: "get", Path: "/metrics"},
			wantCode: 500, wantCT: "text/plain; charset=utf-8", wantSeen: authz.DecisionNoOpinion, uri: "/metrics",
			wantBody: `Internal Server Error: "/metrics": no user on request.` + "\n"},
		{name: "html_in_message_is_escaped", user: &filters.User{Name: "<b>eve</b>&co"}, info: &filters.RequestInfo{Verb: "get", Path: "/x"},
			wantCode: 403, wantCT: "application/json", wantSeen: authz.DecisionNoOpinion,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"\u0026lt;b\u0026gt;eve\u0026lt;/b\u0026gt;\u0026amp;co\" cannot get path \"/x\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{name: "error_without_allow_is_500", user: alice, uri: "/apis/g/v1/namespaces/boom/things?limit=1&x=<y>", info: &filters.RequestInfo{IsResourceRequest: true, Verb: "list", Namespace: "boom", Resource: "things"},
			wantCode: 500, wantCT: "text/plain; charset=utf-8", wantSeen: authz.DecisionNoOpinion,
			wantBody: `Internal Server Error: "/apis/g/v1/namespaces/boom/things?limit=1&amp;x=&lt;y&gt;": webhook unreachable &lt;timeout&gt;` + "\n"},
		{name: "no_request_info_is_500", user: alice, uri: "/apis",
			wantCode: 500, wantCT: "text/plain; charset=utf-8", wantSeen: -1,
			wantBody: `Internal Server Error: "/apis": no RequestInfo found in the context` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			uri := tt.uri
			if uri == "" {
				uri = "/any"
			}
			r := httptest.NewRequest("GET", uri, nil)
			ctx := r.Context()
			if tt.user != nil {
				ctx = filters.ContextWithUser(ctx, tt.user)
			}
			if tt.info != nil {
				ctx = filters.ContextWithRequestInfo(ctx, tt.info)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r.WithContext(ctx))
			if w.Code != tt.wantCode || w.Body.String() != tt.wantBody {
				t.Fatalf("got %d %s\nwant %d %s", w.Code, w.Body.String(), tt.wantCode, tt.wantBody)
			}
			if tt.wantCT != "" && w.Header().Get("Content-Type") != tt.wantCT {
				t.Errorf("Content-Type = %q, want %q", w.Header().Get("Content-Type"), tt.wantCT)
			}
			if tt.wantCode != 200 && w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("X-Content-Type-Options: nosniff missing")
			}
			if tt.wantSeen == -1 {
				if len(seen) != 0 {
					t.Errorf("OnDecision called without a decision: %v", seen)
				}
				return
			}
			if len(seen) != 1 || seen[0].d != tt.wantSeen {
				t.Errorf("OnDecision saw %v, want one %v", seen, tt.wantSeen)
			}
		})
	}
}

func TestWithAuthorization_needs_authorizer(t *testing.T) {
	t.Parallel()
	if _, err := authz.WithAuthorization(authz.FilterConfig{}); !errors.Is(err, authz.ErrNoAuthorizer) {
		t.Errorf("err = %v, want ErrNoAuthorizer", err)
	}
	if _, err := authz.New(authz.Config{AlwaysAllowPaths: []string{"/a*b"}}); !errors.Is(err, authz.ErrInvalidPath) {
		t.Errorf("New with a bad path: err = %v, want ErrInvalidPath", err)
	}
}

func TestNew_switches(t *testing.T) {
	t.Parallel()
	masters := &filters.User{Name: "root", Groups: []string{"system:masters"}}
	health := authz.Attributes{User: &filters.User{Name: "x"}, Verb: "get", Path: "/healthz"}
	tests := []struct {
		name  string
		cfg   authz.Config
		attrs authz.Attributes
		want  authz.Decision
	}{
		{name: "zero_allows_masters", attrs: authz.Attributes{User: masters, IsResourceRequest: true, Verb: "delete"}, want: authz.DecisionAllow},
		{name: "zero_allows_health", attrs: health, want: authz.DecisionAllow},
		{name: "no_privileged_groups", cfg: authz.Config{NoPrivilegedGroups: true}, attrs: authz.Attributes{User: masters, IsResourceRequest: true, Verb: "delete"}, want: authz.DecisionNoOpinion},
		{name: "no_always_allow_paths", cfg: authz.Config{NoAlwaysAllowPaths: true}, attrs: health, want: authz.DecisionNoOpinion},
		{name: "custom_paths_replace_default", cfg: authz.Config{AlwaysAllowPaths: []string{"/version"}}, attrs: health, want: authz.DecisionNoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := authz.New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if d, _, _ := a.Authorize(t.Context(), tt.attrs); d != tt.want {
				t.Errorf("got %v, want %v", d, tt.want)
			}
		})
	}
}

// TestWithAuthorization_over_TLS runs the filter behind the request-info
// resolver on a TLS server that requests client certificates; the user comes
// from the verified certificate (a stand-in for package authn, which this
// package must not import).
func TestWithAuthorization_over_TLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := certs.EnsureCA(certs.CAConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.EnsureServingCert(certs.ServingConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := certs.NewServingCert(serving.CertFile, serving.KeyFile, certs.ReloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := certs.ServerTLSConfig(certs.ServerTLSOptions{Serving: sc})
	if err != nil {
		t.Fatal(err)
	}
	a, err := authz.New(authz.Config{Authorizers: []authz.NamedAuthorizer{{Name: "test", Authorizer: authz.AuthorizerFunc(policy)}}})
	if err != nil {
		t.Fatal(err)
	}
	authorize, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a})
	if err != nil {
		t.Fatal(err)
	}
	userFromCert := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.TLS.PeerCertificates) > 0 {
				c := r.TLS.PeerCertificates[0]
				if _, err := c.Verify(x509Opts(ca)); err == nil {
					r = r.WithContext(filters.ContextWithUser(r.Context(), &filters.User{Name: c.Subject.CommonName, Groups: c.Subject.Organization}))
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	h := filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(userFromCert(authorize(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "handled")
	}))))
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = tlsCfg
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	client := func(cn string, groups ...string) *http.Client {
		kp, err := ca.Issue(certs.Request{CommonName: cn, Organization: groups})
		if err != nil {
			t.Fatal(err)
		}
		c := kp.TLSCertificate()
		tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost",
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	tests := []struct {
		name     string
		client   *http.Client
		method   string
		path     string
		wantCode int
		wantBody string
	}{
		{name: "allowed_get", client: client("alice"), method: "GET", path: "/apis/platform.example.com/v1/namespaces/allowed/environments/e1", wantCode: 200, wantBody: "handled"},
		{name: "list_forbidden", client: client("alice"), method: "GET", path: "/apis/platform.example.com/v1/namespaces/ns/environments", wantCode: 403,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"environments.platform.example.com is forbidden: User \"alice\" cannot list resource \"environments\" in API group \"platform.example.com\" in the namespace \"ns\"","reason":"Forbidden","details":{"group":"platform.example.com","kind":"environments"},"code":403}` + "\n"},
		{name: "watch_by_field_selector_name", client: client("alice"), method: "GET", path: "/apis/platform.example.com/v1/namespaces/ns/environments?watch=true&fieldSelector=metadata.name%3De2", wantCode: 403,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"environments.platform.example.com \"e2\" is forbidden: User \"alice\" cannot watch resource \"environments\" in API group \"platform.example.com\" in the namespace \"ns\"","reason":"Forbidden","details":{"name":"e2","group":"platform.example.com","kind":"environments"},"code":403}` + "\n"},
		{name: "status_update_denied_with_reason", client: client("bob"), method: "PUT", path: "/apis/platform.example.com/v1/clusters/c1/status", wantCode: 403,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"clusters.platform.example.com \"c1\" is forbidden: User \"bob\" cannot update resource \"clusters/status\" in API group \"platform.example.com\" at the cluster scope: bob is on leave","reason":"Forbidden","details":{"name":"c1","group":"platform.example.com","kind":"clusters"},"code":403}` + "\n"},
		{name: "masters_delete", client: client("root", "system:masters"), method: "DELETE", path: "/apis/platform.example.com/v1/clusters/c1", wantCode: 200, wantBody: "handled"},
		{name: "non_resource_forbidden", client: client("alice"), method: "GET", path: "/metrics", wantCode: 403,
			wantBody: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{name: "health_allowed", client: client("alice"), method: "GET", path: "/livez", wantCode: 200, wantBody: "handled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tt.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode || string(body) != tt.wantBody {
				t.Fatalf("got %d %s\nwant %d %s", resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
			if resp.ProtoMajor != 2 {
				t.Errorf("proto %s, want HTTP/2", resp.Proto)
			}
		})
	}
}
