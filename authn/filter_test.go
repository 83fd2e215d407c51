package authn_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
)

const unauthorizedBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"

// echo is what the test server's handler reports.
type echo struct {
	User    *filters.User `json:"user"`
	Headers http.Header   `json:"headers"`
}

// failure is one OnFailure call.
type failure struct {
	err error
	msg string
}

// rig is a TLS server behind the authentication filter, as standalone mode
// configures it: x509 against a reloading client CA file, anonymous on the
// health paths.
type rig struct {
	srv      *httptest.Server
	serverCA *certs.CA
	caFile   string
	newConns atomic.Int64

	mu       sync.Mutex
	failures []failure
}

func newRig(t *testing.T, clientCA *certs.CA) *rig {
	t.Helper()
	dir := t.TempDir()
	serverCA, err := certs.EnsureCA(certs.CAConfig{Dir: dir, Name: "server-ca"})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := serverCA.EnsureServingCert(certs.ServingConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := certs.WriteFileAtomic(caFile, clientCA.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	bundle, err := certs.NewCABundle(caFile, certs.ReloadConfig{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := certs.NewServingCert(serving.CertFile, serving.KeyFile, certs.ReloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := certs.ServerTLSConfig(certs.ServerTLSOptions{Serving: sc, ClientCA: bundle})
	if err != nil {
		t.Fatal(err)
	}
	a, err := authn.New(authn.Config{ClientCA: bundle, Anonymous: &authn.AnonymousConfig{Paths: authn.StandaloneAnonymousPaths()}})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{serverCA: serverCA, caFile: caFile}
	authenticate, err := authn.WithAuthentication(authn.FilterConfig{
		Authenticator: a,
		OnFailure: func(r *http.Request, err error) {
			rg.mu.Lock()
			rg.failures = append(rg.failures, failure{err: err, msg: authn.FailureMessage(r)})
			rg.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	handler := authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := filters.UserFrom(r.Context())
		_ = json.NewEncoder(w).Encode(echo{User: u, Headers: r.Header})
	}))
	rg.srv = httptest.NewUnstartedServer(handler)
	rg.srv.TLS = tlsCfg
	rg.srv.EnableHTTP2 = true
	rg.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			rg.newConns.Add(1)
		}
	}
	rg.srv.StartTLS()
	t.Cleanup(rg.srv.Close)
	return rg
}

// client returns an HTTP client that presents kp (and intermediates) and
// speaks HTTP/2 when h2 is set.
func (rg *rig) client(t *testing.T, kp *certs.KeyPair, h2 bool, intermediates ...*x509.Certificate) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: rg.serverCA.Pool(), ServerName: "localhost"}
	if kp != nil {
		// Present the certificate whatever CAs the server advertises: Go's
		// client (like kubectl) otherwise withholds a certificate that no
		// advertised CA issued, and these tests need the server to see it.
		c := kp.TLSCertificate(intermediates...)
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func (rg *rig) lastFailure() failure {
	rg.mu.Lock()
	defer rg.mu.Unlock()
	if len(rg.failures) == 0 {
		return failure{msg: "<none>"}
	}
	return rg.failures[len(rg.failures)-1]
}

func get(t *testing.T, c *http.Client, url string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestWithAuthentication_over_TLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	rg := newRig(t, p.ca)
	alice := issue(t, p.ca, certs.Request{CommonName: "alice", Organization: []string{"dev"}})
	carol := issue(t, p.intermediate, certs.Request{CommonName: "carol"})
	mallory := issue(t, p.stranger, certs.Request{CommonName: "mallory", Organization: []string{"system:masters"}})
	expired := issue(t, p.ca, certs.Request{CommonName: "old", Validity: -time.Hour})
	noCN := issue(t, p.ca, certs.Request{Organization: []string{"g"}})
	spoof := http.Header{
		"Authorization":          {"Bearer some-token"},
		"X-Remote-User":          {"admin"},
		"X-Remote-Uid":           {"0"},
		"X-Remote-Group":         {"system:masters"},
		"X-Remote-Extra-Scopes":  {"all"},
		"X-REMOTE-EXTRA-Another": {"x"},
		"X-Other":                {"kept"},
	}
	tests := []struct {
		name       string
		client     *http.Client
		path       string
		wantCode   int
		wantUser   string
		wantGroups []string
		wantErr    error  // OnFailure's error, for 401s
		wantMsg    string // FailureMessage, for 401s (every request also carries a bearer token)
	}{
		{name: "client_cert", client: rg.client(t, alice, false), path: "/apis", wantCode: 200,
			wantUser: "alice", wantGroups: []string{"dev", "system:authenticated"}},
		{name: "client_cert_via_intermediate", client: rg.client(t, carol, false, p.intermediate.Cert), path: "/apis", wantCode: 200,
			wantUser: "carol", wantGroups: []string{"system:authenticated"}},
		{name: "anonymous_on_health_path", client: rg.client(t, nil, false), path: "/readyz", wantCode: 200,
			wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}},
		{name: "no_credentials_elsewhere", client: rg.client(t, nil, false), path: "/apis", wantCode: 401,
			wantMsg: "Authentication failed, attempted: bearer"},
		{name: "version_needs_credentials", client: rg.client(t, nil, false), path: "/version", wantCode: 401,
			wantMsg: "Authentication failed, attempted: bearer"},
		{name: "unknown_ca_is_401_not_anonymous", client: rg.client(t, mallory, false), path: "/healthz", wantCode: 401,
			wantErr: authn.ErrInvalidCertificate, wantMsg: "Authentication failed, attempted: bearer, x509"},
		{name: "expired_cert", client: rg.client(t, expired, false), path: "/apis", wantCode: 401,
			wantErr: authn.ErrInvalidCertificate, wantMsg: "Authentication failed, attempted: bearer, x509"},
		{name: "intermediate_missing", client: rg.client(t, carol, false), path: "/apis", wantCode: 401,
			wantErr: authn.ErrInvalidCertificate, wantMsg: "Authentication failed, attempted: bearer, x509"},
		{name: "empty_cn_on_api_path", client: rg.client(t, noCN, false), path: "/apis", wantCode: 401,
			wantMsg: "Authentication failed, attempted: bearer, x509"},
		{name: "empty_cn_on_health_path_is_anonymous", client: rg.client(t, noCN, false), path: "/livez", wantCode: 200,
			wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, tt.client, rg.srv.URL+tt.path, spoof)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("code = %d, want %d; body %s", resp.StatusCode, tt.wantCode, body)
			}
			if tt.wantCode == 401 {
				if body != unauthorizedBody {
					t.Errorf("body = %q, want %q", body, unauthorizedBody)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				f := rg.lastFailure()
				if tt.wantErr == nil && f.err != nil {
					t.Errorf("OnFailure err = %v, want nil", f.err)
				}
				if tt.wantErr != nil && !errors.Is(f.err, tt.wantErr) {
					t.Errorf("OnFailure err = %v, want %v", f.err, tt.wantErr)
				}
				if f.msg != tt.wantMsg {
					t.Errorf("FailureMessage = %q, want %q", f.msg, tt.wantMsg)
				}
				return
			}
			var e echo
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatal(err)
			}
			if e.User == nil || e.User.Name != tt.wantUser || !reflect.DeepEqual(e.User.Groups, tt.wantGroups) {
				t.Fatalf("user = %+v, want %s %v", e.User, tt.wantUser, tt.wantGroups)
			}
			for _, h := range []string{"Authorization", "X-Remote-User", "X-Remote-Uid", "X-Remote-Group", "X-Remote-Extra-Scopes", "X-Remote-Extra-Another"} {
				if v, ok := e.Headers[h]; ok {
					t.Errorf("header %s reached the handler: %v", h, v)
				}
			}
			if e.Headers.Get("X-Other") != "kept" {
				t.Error("an unrelated header was deleted")
			}
		})
	}
}

// TestWithAuthentication_http2_unauthenticated_connection_closed checks the
// CVE-2023-44487 mitigation: over HTTP/2, a failed or anonymous request ends
// its connection, so each one costs the client a new handshake, while an
// authenticated client keeps its connection.
func TestWithAuthentication_http2_unauthenticated_connection_closed(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	alice := issue(t, p.ca, certs.Request{CommonName: "alice"})
	tests := []struct {
		name      string
		kp        *certs.KeyPair
		path      string
		wantCode  int
		wantConns int64
	}{
		{name: "authenticated_reuses", kp: alice, path: "/apis", wantCode: 200, wantConns: 1},
		{name: "unauthorized_closes", path: "/apis", wantCode: 401, wantConns: 3},
		{name: "anonymous_closes", path: "/healthz", wantCode: 200, wantConns: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rg := newRig(t, p.ca)
			c := rg.client(t, tt.kp, true)
			for range 3 {
				resp, body := get(t, c, rg.srv.URL+tt.path, nil)
				if resp.StatusCode != tt.wantCode || resp.ProtoMajor != 2 {
					t.Fatalf("%s: code %d, want %d; body %s", resp.Proto, resp.StatusCode, tt.wantCode, body)
				}
			}
			if got := rg.newConns.Load(); got != tt.wantConns {
				t.Errorf("connections = %d, want %d", got, tt.wantConns)
			}
		})
	}
}

func TestWithAuthentication_connection_close_header(t *testing.T) {
	t.Parallel()
	a := authn.NewAnonymous(authn.AnonymousConfig{Paths: []string{"/healthz"}})
	f, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: a})
	if err != nil {
		t.Fatal(err)
	}
	h := f(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tests := []struct {
		name  string
		path  string
		major int
		want  string
	}{
		{name: "h2_anonymous", path: "/healthz", major: 2, want: "close"},
		{name: "h2_failed", path: "/x", major: 2, want: "close"},
		{name: "h1_anonymous", path: "/healthz", major: 1, want: ""},
		{name: "h1_failed", path: "/x", major: 1, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", tt.path, nil)
			r.ProtoMajor = tt.major
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if got := w.Header().Get("Connection"); got != tt.want {
				t.Errorf("Connection = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWithAuthentication_client_CA_rotation: a certificate from a CA added to
// the client CA file is accepted once the file is reloaded, without a restart.
func TestWithAuthentication_client_CA_rotation(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	rg := newRig(t, p.ca)
	mallory := issue(t, p.stranger, certs.Request{CommonName: "mallory"})
	c := rg.client(t, mallory, false)
	if resp, _ := get(t, c, rg.srv.URL+"/apis", nil); resp.StatusCode != 401 {
		t.Fatalf("before rotation: %d, want 401", resp.StatusCode)
	}
	bundle := append(append([]byte{}, p.ca.CertPEM...), p.stranger.CertPEM...)
	if err := certs.WriteFileAtomic(rg.caFile, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for {
		resp, body := get(t, c, rg.srv.URL+"/apis", nil)
		if resp.StatusCode == 200 {
			var e echo
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.User.Name != "mallory" {
				t.Fatalf("after rotation: %s (%v)", body, err)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the new client CA was not picked up")
		case <-time.After(10 * time.Millisecond): // poll interval
		}
	}
}
