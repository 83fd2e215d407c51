package annex_test

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/rest"
)

// userRecorder is a stage after authentication that keeps the last user
// each request carried, by the request's User-Agent.
type userRecorder struct {
	mu    sync.Mutex
	users map[string]filters.User
}

func (u *userRecorder) stage() annex.InsertedStage {
	return annex.InsertedStage{After: annex.StageAuthentication, Stage: annex.Stage{Name: "record-user", Needs: []annex.Provision{annex.ProvidesUser},
		Filter: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if usr, ok := filters.UserFrom(r.Context()); ok {
					u.mu.Lock()
					u.users[r.UserAgent()] = *usr
					u.mu.Unlock()
				}
				next.ServeHTTP(w, r)
			})
		}}}
}

func (u *userRecorder) get(agent string) (filters.User, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	usr, ok := u.users[agent]
	return usr, ok
}

// frontProxyPKI is a client CA, a front-proxy CA and certificates from each.
type frontProxyPKI struct {
	dir                         string
	clientCA, frontProxyCA      *certs.CA
	proxyDir, otherDir, userDir string
}

func newFrontProxyPKI(t *testing.T) *frontProxyPKI {
	t.Helper()
	p := &frontProxyPKI{dir: t.TempDir()}
	var err error
	if p.clientCA, err = certs.EnsureCA(certs.CAConfig{Dir: p.dir, Name: "client-ca"}); err != nil {
		t.Fatal(err)
	}
	if p.frontProxyCA, err = certs.EnsureCA(certs.CAConfig{Dir: p.dir, Name: "front-proxy-ca"}); err != nil {
		t.Fatal(err)
	}
	issued := func(ca *certs.CA, cn string) string {
		dir := t.TempDir()
		if _, err := ca.EnsureClientCert(certs.ClientConfig{Dir: dir, Name: "c", User: cn}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	p.proxyDir = issued(p.frontProxyCA, "front-proxy-client")
	p.otherDir = issued(p.frontProxyCA, "not-the-proxy")
	p.userDir = issued(p.clientCA, "carol")
	return p
}

// buildServed serves b (its command line is package kubeflags', whose
// tests check that the flags give these fields) and returns it with a
// client per certificate directory.
func buildServed(t *testing.T, b annex.Builder) (*annextest.Server, func(certDir string) *http.Client) {
	t.Helper()
	srv := startServer(t, b)
	client := func(dir string) *http.Client {
		if dir == "" {
			return clientWith(t, srv, "", "")
		}
		return clientWith(t, srv, filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key"))
	}
	return srv, client
}

// frontProxyCase is one request through the front door and what it must
// give: the status, and the user the request was authenticated as (nil for
// none).
type frontProxyCase struct {
	name     string
	certDir  string
	headers  map[string][]string
	wantCode int
	wantUser *filters.User
}

func runFrontProxyCases(t *testing.T, url string, client func(string) *http.Client, rec *userRecorder, cases []frontProxyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			// What kube-aggregator sends besides the identity.
			agent := "kubectl/v1.34.0 (" + tc.name + ")"
			req.Header.Set("User-Agent", agent)
			req.Header.Set("Accept", "application/json, */*")
			req.Header.Set("X-Forwarded-For", "10.0.0.7")
			for k, vs := range tc.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			resp, err := client(tc.certDir).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("got %d %.300s, want %d", resp.StatusCode, body, tc.wantCode)
			}
			got, ok := rec.get(agent)
			switch {
			case tc.wantUser == nil && ok:
				t.Errorf("authenticated as %+v, want no user", got)
			case tc.wantUser != nil && !ok:
				t.Errorf("no user, want %+v", *tc.wantUser)
			case tc.wantUser != nil:
				w := *tc.wantUser
				// x509 adds the certificate's fingerprint, as Kubernetes.
				delete(got.Extra, "authentication.kubernetes.io/credential-id")
				if got.Name != w.Name || got.UID != w.UID || !slices.Equal(got.Groups, w.Groups) || len(got.Extra) != len(w.Extra) {
					t.Errorf("user %+v, want %+v", got, w)
				}
				for k, v := range w.Extra {
					if !slices.Equal(got.Extra[k], v) {
						t.Errorf("extra %s = %v, want %v", k, got.Extra[k], v)
					}
				}
			}
		})
	}
}

// TestRequestHeaderStandalone is issue 13's item 3: with
// --client-ca-file, --requestheader-client-ca-file and
// --requestheader-allowed-names and no cluster, the front proxy's
// X-Remote-* headers authenticate the user, with a delegated server's
// header defaults.
func TestRequestHeaderStandalone(t *testing.T) {
	t.Parallel()
	pki := newFrontProxyPKI(t)
	rec := &userRecorder{users: map[string]filters.User{}}
	// --client-ca-file, --requestheader-client-ca-file, --requestheader-allowed-names
	srv, client := buildServed(t, annex.Builder{Resources: []rest.Resource{widgets()}, Stages: []annex.InsertedStage{rec.stage()},
		Authentication: annex.Authentication{ClientCAFile: pki.clientCA.CertFile, RequestHeader: &annex.RequestHeader{ClientCAFile: pki.frontProxyCA.CertFile,
			Names: authn.RequestHeaderNames{AllowedNames: []string{"front-proxy-client"}}}}})
	if srv.Kubeconfig != "" || srv.KubeconfigPath() != "" {
		t.Errorf("a server with --client-ca-file wrote an admin kubeconfig")
	}
	list := srv.URL + widgetsPath
	authenticated := "system:authenticated"
	runFrontProxyCases(t, list, client, rec, []frontProxyCase{
		{name: "front_proxy_asserts_a_master", certDir: pki.proxyDir,
			headers:  map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters", "devs"}, "X-Remote-Extra-Scopes": {"a", "b"}, "X-Remote-Extra-Acme.com%2Fteam": {"x"}},
			wantCode: 200,
			wantUser: &filters.User{Name: "alice", Groups: []string{"system:masters", "devs", authenticated}, Extra: map[string][]string{"scopes": {"a", "b"}, "acme.com/team": {"x"}}}},
		{name: "front_proxy_asserts_a_user_without_rights", certDir: pki.proxyDir,
			headers:  map[string][]string{"X-Remote-User": {"bob"}, "X-Remote-Group": {"devs"}},
			wantCode: 403, wantUser: &filters.User{Name: "bob", Groups: []string{"devs", authenticated}}},
		// Kubernetes leaves --requestheader-uid-headers empty by default.
		{name: "uid_header_not_read_by_default", certDir: pki.proxyDir,
			headers:  map[string][]string{"X-Remote-User": {"bob"}, "X-Remote-Uid": {"u-1"}},
			wantCode: 403, wantUser: &filters.User{Name: "bob", Groups: []string{authenticated}}},
		{name: "front_proxy_without_a_user_header", certDir: pki.proxyDir, wantCode: 401},
		{name: "proxy_ca_with_a_cn_not_allowed", certDir: pki.otherDir,
			headers: map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}}, wantCode: 401},
		{name: "headers_without_a_certificate", headers: map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}}, wantCode: 401},
		{name: "client_ca_certificate_never_makes_headers_trusted", certDir: pki.userDir,
			headers:  map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}},
			wantCode: 403, wantUser: &filters.User{Name: "carol", Groups: []string{authenticated}}},
	})
}

// TestRequestHeaderCustomHeaders: the header flags replace the
// defaults, in standalone mode as in delegated mode.
func TestRequestHeaderCustomHeaders(t *testing.T) {
	t.Parallel()
	pki := newFrontProxyPKI(t)
	rec := &userRecorder{users: map[string]filters.User{}}
	srv, client := buildServed(t, annex.Builder{Resources: []rest.Resource{widgets()}, Stages: []annex.InsertedStage{rec.stage()},
		Authentication: annex.Authentication{ClientCAFile: pki.clientCA.CertFile, RequestHeader: &annex.RequestHeader{ClientCAFile: pki.frontProxyCA.CertFile,
			Names: authn.RequestHeaderNames{UsernameHeaders: []string{"X-Proxy-User"}, GroupHeaders: []string{"X-Proxy-Group"},
				ExtraHeaderPrefixes: []string{"X-Proxy-Extra-"}, UIDHeaders: []string{"X-Proxy-Uid"}}}}})
	runFrontProxyCases(t, srv.URL+widgetsPath, client, rec, []frontProxyCase{
		{name: "custom_headers", certDir: pki.otherDir, // any CN: no allowed names
			headers:  map[string][]string{"X-Proxy-User": {"dora"}, "X-Proxy-Group": {"system:masters"}, "X-Proxy-Uid": {"d-1"}, "X-Proxy-Extra-K": {"v"}},
			wantCode: 200,
			wantUser: &filters.User{Name: "dora", UID: "d-1", Groups: []string{"system:masters", "system:authenticated"}, Extra: map[string][]string{"k": {"v"}}}},
		{name: "default_headers_no_longer_read", certDir: pki.proxyDir,
			headers: map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}}, wantCode: 401},
	})
}

// TestAuthenticationSkipLookup: a delegated server with
// --authentication-skip-lookup never reads the
// extension-apiserver-authentication ConfigMap; its client CA and front
// proxy come from the flags, and tokens and permissions still go to the
// cluster.
func TestAuthenticationSkipLookup(t *testing.T) {
	t.Parallel()
	pki := newFrontProxyPKI(t)
	// The cluster's ConfigMap names other CAs: were it read, the
	// certificates of the flags' CAs would not verify.
	otherClientCA, err := certs.NewCA(certs.CAConfig{Name: "cluster-client-ca"})
	if err != nil {
		t.Fatal(err)
	}
	otherProxyCA, err := certs.NewCA(certs.CAConfig{Name: "cluster-front-proxy-ca"})
	if err != nil {
		t.Fatal(err)
	}
	kube := newKubeStandIn(t, otherClientCA, otherProxyCA)
	rec := &userRecorder{users: map[string]filters.User{}}
	srv, client := buildServed(t, annex.Builder{Resources: []rest.Resource{widgets()}, Stages: []annex.InsertedStage{rec.stage()},
		Authentication: annex.Authentication{ClientCAFile: pki.clientCA.CertFile, Delegation: &annex.Delegation{SkipLookup: true,
			AuthenticationKubeconfig: kube.kubeconfig, AuthorizationKubeconfig: kube.kubeconfig,
			RequestHeader: annex.RequestHeader{ClientCAFile: pki.frontProxyCA.CertFile, Names: authn.RequestHeaderNames{AllowedNames: []string{"front-proxy-client"}}}}}})
	runFrontProxyCases(t, srv.URL+widgetsPath, client, rec, []frontProxyCase{
		// alice may list widgets by the stand-in's SubjectAccessReview.
		{name: "front_proxy_user", certDir: pki.proxyDir, headers: map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"devs"}},
			wantCode: 200, wantUser: &filters.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}},
		{name: "client_certificate_user", certDir: pki.userDir, wantCode: 403, wantUser: &filters.User{Name: "carol", Groups: []string{"system:authenticated"}}},
		{name: "token_review_user", headers: map[string][]string{"Authorization": {"Bearer good-token"}},
			wantCode: 403, wantUser: &filters.User{Name: "bob", UID: "b-1", Groups: []string{"viewers", "system:authenticated"}}},
	})
	if n := kube.configMapGets.Load(); n != 0 {
		t.Errorf("the ConfigMap was read %d times, want none", n)
	}
	code, body := do(t, client(""), http.MethodGet, srv.URL+"/readyz?verbose", "")
	if code != 200 || strings.Contains(body, "delegated-authentication") {
		t.Errorf("readyz: %d %s, want ready with no delegated-authentication check", code, body)
	}
}
