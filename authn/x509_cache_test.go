package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/certs"
)

// TestX509_cache_never_outlives_validity checks that a remembered
// verification is not used past the certificate's expiry, for another pool,
// or for another chain.
func TestX509_cache_never_outlives_validity(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	leaf := issue(t, p.ca, certs.Request{CommonName: "alice", Validity: 2 * time.Hour})
	viaInter := issue(t, p.intermediate, certs.Request{CommonName: "carol"})
	for _, size := range []int{0, 1, -1} {
		var now atomic.Pointer[time.Time]
		set := func(tm time.Time) { now.Store(&tm) }
		set(time.Now())
		var pool atomic.Pointer[x509.CertPool]
		pool.Store(p.ca.Pool())
		a, err := authn.NewX509(authn.X509Config{
			CA:        authn.CAProviderFunc(func() *x509.CertPool { return pool.Load() }),
			Now:       func() time.Time { return *now.Load() },
			CacheSize: size,
		})
		if err != nil {
			t.Fatal(err)
		}
		auth := func(chain ...*x509.Certificate) error {
			r := httptest.NewRequest("GET", "/", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: chain}
			_, ok, err := a.Authenticate(r)
			if err == nil && !ok {
				t.Fatal("not ok without error")
			}
			return err
		}
		for range 2 { // the second round is served from the cache when enabled
			if err := auth(leaf.Cert); err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if err := auth(viaInter.Cert, p.intermediate.Cert); err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
		}
		// Another parse of the same certificate (another connection's, say)
		// is the same credential.
		again, err := x509.ParseCertificate(leaf.Cert.Raw)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, c := range []*x509.Certificate{leaf.Cert, again, leaf.Cert} {
			r := httptest.NewRequest("GET", "/", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
			u, ok, err := a.Authenticate(r)
			if !ok || err != nil {
				t.Fatalf("size %d: %v %v", size, ok, err)
			}
			ids[u.Extra[authn.CredentialIDKey][0]] = true
		}
		if len(ids) != 1 {
			t.Errorf("size %d: credential IDs %v, want one", size, ids)
		}
		// The same leaf without its intermediate is another chain.
		if err := auth(viaInter.Cert); !errors.Is(err, authn.ErrInvalidCertificate) {
			t.Errorf("size %d: leaf without intermediate: %v", size, err)
		}
		// Past the leaf's expiry the cached success does not count.
		set(time.Now().Add(3 * time.Hour))
		if err := auth(leaf.Cert); !errors.Is(err, authn.ErrInvalidCertificate) {
			t.Errorf("size %d: expired leaf: %v", size, err)
		}
		set(time.Now())
		if err := auth(leaf.Cert); err != nil {
			t.Errorf("size %d: back in validity: %v", size, err)
		}
		// A pool without the CA does not reuse verifications made with the old one.
		pool.Store(p.stranger.Pool())
		if err := auth(leaf.Cert); !errors.Is(err, authn.ErrInvalidCertificate) {
			t.Errorf("size %d: after CA removal: %v", size, err)
		}
	}
}
