package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
)

// BenchmarkX509_Authenticate measures the per-request cost of verifying a
// client certificate (Kubernetes also verifies on every request).
func BenchmarkX509_Authenticate(b *testing.B) {
	ca, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		b.Fatal(err)
	}
	kp, err := ca.Issue(certs.Request{CommonName: "alice", Organization: []string{"dev"}})
	if err != nil {
		b.Fatal(err)
	}
	a, err := authn.NewX509(authn.X509Config{CA: authn.StaticCA(ca.Pool())})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/apis", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{kp.Cert}}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := a.Authenticate(r); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkWithAuthentication_anonymous measures the filter around the
// cheapest authenticator.
func BenchmarkWithAuthentication_anonymous(b *testing.B) {
	f, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: authn.NewAnonymous(authn.AnonymousConfig{})})
	if err != nil {
		b.Fatal(err)
	}
	h := f(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/healthz", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
