// This file holds the x509 client certificate authenticator. The TLS
// handshake only requests client certificates; verification happens here,
// against a CA pool that may change at run time, so that an unverifiable
// certificate is a 401 rather than a handshake failure.

package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/annexapi/annex/filters"
)

// CAProvider provides the pool client certificates must chain to.
//
// CertPool is called once per request that carries a client certificate,
// from many goroutines at once; it must be cheap and safe for concurrent
// use. The returned pool must not be modified by anyone afterwards (return a
// new pool when the CAs change). nil means no CA is available yet: client
// certificates then authenticate nobody (not-ok, no error).
//
// certs.CABundle implements it for a file that is reloaded when it changes.
type CAProvider interface {
	CertPool() *x509.CertPool
}

// CAProviderFunc adapts a function to a CAProvider.
type CAProviderFunc func() *x509.CertPool

// CertPool calls f().
func (f CAProviderFunc) CertPool() *x509.CertPool { return f() }

var _ CAProvider = CAProviderFunc(nil)

// StaticCA returns a CAProvider that always returns pool.
func StaticCA(pool *x509.CertPool) CAProvider {
	return CAProviderFunc(func() *x509.CertPool { return pool })
}

// isUIDOID reports whether oid is the subject attribute Kubernetes reads the
// user UID from (0.9.2342.19200300.100.1.1).
func isUIDOID(oid asn1.ObjectIdentifier) bool {
	return oid.Equal(asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1})
}

// X509Config configures NewX509.
type X509Config struct {
	// CA provides the pool client certificates must chain to. Required.
	CA CAProvider
	// Now returns the time certificates are verified at; nil means time.Now.
	Now func() time.Time
}

// X509 authenticates requests by their verified TLS client certificate: the
// user is the subject CN, the groups are the subject O values, the UID is the
// subject UID attribute if present, and the extra CredentialIDKey is
// "X509SHA256=<hex SHA-256 of the certificate>".
type X509 struct {
	ca  CAProvider
	now func() time.Time
}

var _ Authenticator = (*X509)(nil)

// NewX509 returns the x509 authenticator for cfg.
func NewX509(cfg X509Config) (*X509, error) {
	if cfg.CA == nil {
		return nil, ErrNoCA
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &X509{ca: cfg.CA, now: now}, nil
}

// Authenticate verifies the peer's leaf certificate against the current CA
// pool, with the peer's other certificates as intermediates and ClientAuth as
// the required key usage. No certificate, or no pool, is not-ok; a
// certificate that does not verify is a *CertificateError; a verified one
// with an empty CN is not-ok.
func (a *X509) Authenticate(r *http.Request) (*filters.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	pool := a.ca.CertPool()
	if pool == nil {
		return nil, false, nil
	}
	peer := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{
		Roots:       pool,
		CurrentTime: a.now(),
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(peer) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range peer[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	leaf := peer[0]
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, &CertificateError{ID: certificateID(leaf), Err: err}
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	uid, err := subjectUID(leaf)
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256(leaf.Raw)
	return &filters.User{
		Name:   leaf.Subject.CommonName,
		UID:    uid,
		Groups: leaf.Subject.Organization,
		Extra:  map[string][]string{CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(sum[:])}},
	}, true, nil
}

// subjectUID returns the subject's UID attribute: "" when absent, an error
// when repeated, empty, or not a string.
func subjectUID(c *x509.Certificate) (string, error) {
	var uids []string
	for _, n := range c.Subject.Names {
		if !isUIDOID(n.Type) {
			continue
		}
		s, ok := n.Value.(string)
		if !ok {
			return "", fmt.Errorf("%w: unable to parse UID into a string", ErrInvalidUID)
		}
		uids = append(uids, s)
	}
	switch {
	case len(uids) == 0:
		return "", nil
	case len(uids) > 1:
		return "", fmt.Errorf("%w: expected 1 UID, but found multiple: %v", ErrInvalidUID, uids)
	case uids[0] == "":
		return "", fmt.Errorf("%w: UID cannot be an empty string", ErrInvalidUID)
	}
	return uids[0], nil
}
