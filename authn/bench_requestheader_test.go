package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"testing"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
)

// BenchmarkRequestHeader_Authenticate measures a front-proxy request: a
// cached chain verification, the CN check and the header reads.
func BenchmarkRequestHeader_Authenticate(b *testing.B) {
	ca, err := certs.NewCA(certs.CAConfig{})
	if err != nil {
		b.Fatal(err)
	}
	kp, err := ca.Issue(certs.Request{CommonName: "front-proxy-client"})
	if err != nil {
		b.Fatal(err)
	}
	rh, err := authn.NewRequestHeader(authn.RequestHeaderConfig{CA: authn.StaticCA(ca.Pool()),
		Names: authn.StaticRequestHeaderNames(authn.RequestHeaderNames{AllowedNames: []string{"front-proxy-client"}})})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("GET", "/apis/x/v1/y", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{kp.Cert}}
		r.Header.Set("X-Remote-User", "alice")
		r.Header.Add("X-Remote-Group", "dev")
		r.Header.Set("X-Remote-Extra-Scopes", "s")
		if _, ok, err := rh.Authenticate(r); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
