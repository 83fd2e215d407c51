package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
)

// frontProxy is a TLS server in delegated shape: request-header CA with an
// allowed name, a distinct client CA, no anonymous access except health.
type frontProxy struct {
	srv                          *httptest.Server
	clientCA, proxyCA, strangers *certs.CA
	// seen holds every header name the handler saw that starts with X-Remote-.
	seen chan []string
	// conns counts new TLS connections.
	conns atomic.Int32
}

func newFrontProxy(t *testing.T, names authn.RequestHeaderNames) *frontProxy {
	t.Helper()
	fp := &frontProxy{seen: make(chan []string, 1)}
	var err error
	for _, p := range []**certs.CA{&fp.clientCA, &fp.proxyCA, &fp.strangers} {
		if *p, err = certs.NewCA(certs.CAConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := authn.New(authn.Config{
		RequestHeader: &authn.RequestHeaderConfig{CA: authn.StaticCA(fp.proxyCA.Pool()), Names: authn.StaticRequestHeaderNames(names)},
		ClientCA:      authn.StaticCA(fp.clientCA.Pool()),
		Anonymous:     &authn.AnonymousConfig{Paths: authn.StandaloneAnonymousPaths()},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: a, RequestHeaders: authn.StaticRequestHeaderNames(names)})
	if err != nil {
		t.Fatal(err)
	}
	fp.srv = httptest.NewUnstartedServer(f(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var remote []string
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-remote-") || strings.HasPrefix(strings.ToLower(k), "x-proxy-") {
				remote = append(remote, k)
			}
		}
		select { // never block: a failing case must not hang the next
		case fp.seen <- remote:
		default:
		}
		u, _ := filters.UserFrom(r.Context())
		_ = json.NewEncoder(w).Encode(echo{User: u})
	})))
	fp.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	fp.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			fp.conns.Add(1)
		}
	}
	fp.srv.StartTLS()
	t.Cleanup(fp.srv.Close)
	return fp
}

func (fp *frontProxy) client(t *testing.T, kp *certs.KeyPair) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: x509.NewCertPool()}
	tc.RootCAs.AddCert(fp.srv.Certificate())
	if kp != nil {
		c := kp.TLSCertificate()
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	tr := &http.Transport{TLSClientConfig: tc}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestRequestHeader_front_proxy_over_TLS is the issue's table: identity
// headers are trusted only from a certificate of the request-header CA with
// an allowed CN; every other combination is refused or the headers ignored,
// and the handler never sees an X-Remote-* header.
func TestRequestHeader_front_proxy_over_TLS(t *testing.T) {
	t.Parallel()
	fp := newFrontProxy(t, authn.RequestHeaderNames{AllowedNames: []string{"front-proxy-client"}})
	proxy := issue(t, fp.proxyCA, certs.Request{CommonName: "front-proxy-client"})
	proxyOtherCN := issue(t, fp.proxyCA, certs.Request{CommonName: "kubelet"})
	proxyExpired := issue(t, fp.proxyCA, certs.Request{CommonName: "front-proxy-client", Validity: -time.Hour})
	stranger := issue(t, fp.strangers, certs.Request{CommonName: "front-proxy-client"})
	clientCert := issue(t, fp.clientCA, certs.Request{CommonName: "bob", Organization: []string{"devs"}})
	clientCertAsProxy := issue(t, fp.clientCA, certs.Request{CommonName: "front-proxy-client"})

	alice := http.Header{
		"X-Remote-User":                     {"alice"},
		"X-Remote-Group":                    {"g1", "", "g2"},
		"X-Remote-Extra-Acme.com%2fProject": {"p1", "p2"},
		"X-Remote-Extra-Scopes":             {"s"},
		"X-Remote-Uid":                      {"uid-is-not-trusted-by-default"},
	}
	tests := []struct {
		name     string
		cert     *certs.KeyPair
		path     string
		hdr      http.Header
		wantCode int
		wantUser *filters.User
	}{
		{name: "trusted_proxy", cert: proxy, hdr: alice, wantCode: 200,
			wantUser: &filters.User{Name: "alice", Groups: []string{"g1", "g2", "system:authenticated"},
				Extra: map[string][]string{"acme.com/project": {"p1", "p2"}, "scopes": {"s"}}}},
		{name: "headers_without_client_cert", hdr: alice, wantCode: 401},
		{name: "headers_without_client_cert_on_health_path_are_anonymous", path: "/healthz", hdr: alice, wantCode: 200,
			wantUser: &filters.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}},
		{name: "cert_from_wrong_ca", cert: stranger, hdr: alice, wantCode: 401},
		{name: "cert_from_wrong_ca_on_health_path_is_not_anonymous", cert: stranger, path: "/healthz", hdr: alice, wantCode: 401},
		{name: "right_ca_cn_not_allowed", cert: proxyOtherCN, hdr: alice, wantCode: 401},
		{name: "client_ca_cert_authenticates_as_itself_headers_ignored", cert: clientCert, hdr: alice, wantCode: 200,
			wantUser: &filters.User{Name: "bob", Groups: []string{"devs", "system:authenticated"}}},
		{name: "client_ca_cert_with_allowed_cn_never_trusted_for_headers", cert: clientCertAsProxy, hdr: alice, wantCode: 200,
			wantUser: &filters.User{Name: "front-proxy-client", Groups: []string{"system:authenticated"}}},
		{name: "expired_proxy_cert", cert: proxyExpired, hdr: alice, wantCode: 401},
		{name: "conflicting_user_headers_first_wins", cert: proxy, hdr: http.Header{"X-Remote-User": {"alice", "mallory"}}, wantCode: 200,
			wantUser: &filters.User{Name: "alice", Groups: []string{"system:authenticated"}}},
		{name: "trusted_proxy_without_user_header", cert: proxy, hdr: http.Header{"X-Remote-Group": {"system:masters"}}, wantCode: 401},
		{name: "trusted_proxy_empty_user_header", cert: proxy, hdr: http.Header{"X-Remote-User": {""}, "X-Remote-Group": {"system:masters"}}, wantCode: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			select { // drain what a failed case left behind
			case <-fp.seen:
			default:
			}
			path := tt.path
			if path == "" {
				path = "/apis/example.com/v1/things"
			}
			resp, body := get(t, fp.client(t, tt.cert), fp.srv.URL+path, tt.hdr)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantCode, body)
			}
			if tt.wantCode != 200 {
				if body != unauthorizedBody {
					t.Errorf("body %s", body)
				}
				select {
				case <-fp.seen:
					t.Fatal("handler ran for a refused request")
				default:
				}
				return
			}
			if remote := <-fp.seen; len(remote) != 0 {
				t.Errorf("handler saw identity headers %v", remote)
			}
			var e echo
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatal(err)
			}
			if tt.wantUser.Extra == nil && e.User != nil && e.User.Extra != nil {
				e.User.Extra = nil // x509 adds the credential id; compared elsewhere
			}
			if !reflect.DeepEqual(e.User, tt.wantUser) {
				t.Errorf("user %+v, want %+v", e.User, tt.wantUser)
			}
		})
	}
}

// TestRequestHeader_custom_headers covers configured header names: several
// user headers (first non-empty wins), a UID header, an extra prefix other
// than X-Remote-Extra-, all stripped before the handler.
func TestRequestHeader_custom_headers(t *testing.T) {
	t.Parallel()
	fp := newFrontProxy(t, authn.RequestHeaderNames{
		UsernameHeaders:     []string{"X-Proxy-User", "X-Remote-User"},
		UIDHeaders:          []string{"X-Proxy-Uid"},
		GroupHeaders:        []string{"X-Proxy-Group", "X-Remote-Group"},
		ExtraHeaderPrefixes: []string{"x-proxy-extra-"},
	})
	proxy := issue(t, fp.proxyCA, certs.Request{CommonName: "anything-goes-when-no-allowed-names"})
	hdr := http.Header{"X-Proxy-User": {""}, "X-Remote-User": {"carol"}, "X-Proxy-Uid": {"u-1"},
		"X-Proxy-Group": {"a"}, "X-Remote-Group": {"b"}, "X-Proxy-Extra-Bad%zzEscape": {"v"}}
	resp, body := get(t, fp.client(t, proxy), fp.srv.URL+"/apis/x/v1/y", hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if remote := <-fp.seen; len(remote) != 0 {
		t.Errorf("handler saw %v", remote)
	}
	var e echo
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	want := &filters.User{Name: "carol", UID: "u-1", Groups: []string{"a", "b", "system:authenticated"}, Extra: map[string][]string{"bad%zzescape": {"v"}}}
	if !reflect.DeepEqual(e.User, want) {
		t.Errorf("user %+v, want %+v", e.User, want)
	}
}

func TestRequestHeader_errors(t *testing.T) {
	t.Parallel()
	ca, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rh, err := authn.NewRequestHeader(authn.RequestHeaderConfig{CA: authn.StaticCA(ca.Pool()),
		Names: authn.StaticRequestHeaderNames(authn.RequestHeaderNames{AllowedNames: []string{"aggregator"}})})
	if err != nil {
		t.Fatal(err)
	}
	kp := issue(t, ca, certs.Request{CommonName: "someone"})
	r := httptest.NewRequest("GET", "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{kp.Cert}}
	r.Header.Set("X-Remote-User", "x")
	if _, _, err := rh.Authenticate(r); !errors.Is(err, authn.ErrNotAllowedProxy) {
		t.Errorf("err = %v, want ErrNotAllowedProxy", err)
	}
	if r.Header.Get("X-Remote-User") != "" {
		t.Error("header kept after a failed authentication")
	}
	if _, err := authn.NewRequestHeader(authn.RequestHeaderConfig{}); !errors.Is(err, authn.ErrNoCA) {
		t.Errorf("no CA: %v", err)
	}
}

func TestNew_refuses_shared_CA(t *testing.T) {
	t.Parallel()
	ca, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	shared := authn.StaticCA(ca.Pool())
	_, err = authn.New(authn.Config{ClientCA: shared, RequestHeader: &authn.RequestHeaderConfig{CA: authn.StaticCA(ca.Pool())}})
	if !errors.Is(err, authn.ErrSharedCA) {
		t.Errorf("shared: %v", err)
	}
	if _, err := authn.New(authn.Config{ClientCA: shared, AllowSharedCA: true, RequestHeader: &authn.RequestHeaderConfig{CA: shared}}); err != nil {
		t.Errorf("override: %v", err)
	}
	if _, err := authn.New(authn.Config{ClientCA: shared, RequestHeader: &authn.RequestHeaderConfig{CA: authn.StaticCA(other.Pool())}}); err != nil {
		t.Errorf("distinct: %v", err)
	}
}

func TestUnionCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var bundles []authn.CAProvider
	var cas []*certs.CA
	for _, name := range []string{"client", "proxy"} {
		ca, err := certs.NewCA(certs.CAConfig{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		f := dir + "/" + name + ".crt"
		if err := certs.WriteFileAtomic(f, ca.CertPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := certs.NewCABundle(f, certs.ReloadConfig{})
		if err != nil {
			t.Fatal(err)
		}
		bundles, cas = append(bundles, b), append(cas, ca)
	}
	u := authn.UnionCA(bundles...)
	p := u.CertPool()
	for _, ca := range cas {
		kp := issue(t, ca, certs.Request{CommonName: "x"})
		if _, err := kp.Cert.Verify(x509.VerifyOptions{Roots: p, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s not in union: %v", ca.Cert.Subject.CommonName, err)
		}
	}
	if u.CertPool() != p {
		t.Error("union rebuilt without a change")
	}
	if got := authn.UnionCA(nil, authn.StaticCA(nil)).CertPool(); got != nil {
		t.Errorf("no pools: %v", got)
	}
	only := cas[0].Pool()
	if got := authn.UnionCA(authn.StaticCA(only), authn.StaticCA(nil)).CertPool(); got != only {
		t.Error("single static pool not passed through")
	}
}

// TestRequestHeader_identity_is_per_request (CVE-2018-1002105): on one
// reused TLS connection, an identity asserted by the front proxy in one
// request is not carried over to the next.
func TestRequestHeader_identity_is_per_request(t *testing.T) {
	t.Parallel()
	fp := newFrontProxy(t, authn.RequestHeaderNames{AllowedNames: []string{"front-proxy-client"}})
	proxy := issue(t, fp.proxyCA, certs.Request{CommonName: "front-proxy-client"})
	c := fp.client(t, proxy)
	steps := []struct {
		hdr      http.Header
		wantCode int
		wantUser string
	}{
		{http.Header{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}}, 200, "alice"},
		{http.Header{}, 401, ""},
		{http.Header{"X-Remote-User": {"bob"}}, 200, "bob"},
	}
	for i, s := range steps {
		select {
		case <-fp.seen:
		default:
		}
		resp, body := get(t, c, fp.srv.URL+"/apis/x/v1/y", s.hdr)
		if resp.StatusCode != s.wantCode {
			t.Fatalf("step %d: %d %s", i, resp.StatusCode, body)
		}
		if s.wantCode == 200 {
			var e echo
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.User.Name != s.wantUser {
				t.Errorf("step %d: user %+v (%v)", i, e.User, err)
			}
		}
	}
	if n := fp.conns.Load(); n != 1 {
		t.Errorf("%d connections; the test needs one reused connection", n)
	}
}
