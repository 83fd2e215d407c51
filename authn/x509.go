// This file holds the x509 client certificate authenticator. The TLS
// handshake only requests client certificates; verification happens here,
// against a CA pool that may change at run time, so that an unverifiable
// certificate is a 401 rather than a handshake failure.

package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"
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
	// CacheSize bounds how many verified certificate chains are remembered,
	// so a client that sends many requests pays for one signature
	// verification, not one per request. Zero means DefaultX509CacheSize; a
	// negative value disables the cache.
	CacheSize int
}

// DefaultX509CacheSize is the default X509Config.CacheSize.
const DefaultX509CacheSize = 1024

// X509 authenticates requests by their verified TLS client certificate: the
// user is the subject CN, the groups are the subject O values, the UID is the
// subject UID attribute if present, and the extra CredentialIDKey is
// "X509SHA256=<hex SHA-256 of the certificate>".
//
// A verified chain is remembered (keyed by the CA pool and the SHA-256 of the
// certificates the peer sent) until the first certificate of the chain
// expires, so later requests skip the signature checks; a new pool from the
// CAProvider starts afresh.
type X509 struct {
	ca        CAProvider
	now       func() time.Time
	cacheSize int

	// cacheMu guards cache and leaves.
	cacheMu sync.RWMutex
	cache   map[verifiedKey]verifiedWindow
	// leaves remembers the peers that sent a verified leaf alone by the
	// certificate crypto/tls parsed (a connection's requests share it), so
	// they skip hashing it too; nil when the cache is off.
	leaves map[leafKey]leafEntry
}

// leafKey names a lone leaf's verification: the pool and the parsed
// certificate, which stands for its DER (crypto/tls never changes it, and
// the key keeps it alive, so its address cannot come to name another).
type leafKey struct {
	pool *x509.CertPool
	leaf *x509.Certificate
}

// leafEntry is a verified lone leaf: when it is valid, and its credential
// ID ("X509SHA256=<hex>").
type leafEntry struct {
	window verifiedWindow
	credID string
}

// verifiedKey names a verification: the pool (kept alive by the key, so its
// address cannot be reused by another pool) and the peer's certificates.
type verifiedKey struct {
	pool *x509.CertPool
	sum  [sha256.Size]byte
	// chain is false when sum is the SHA-256 of a lone leaf's DER (the
	// usual peer, whose sum is its credential ID too), true when it is of
	// the length-prefixed certificates of a longer chain.
	chain bool
}

// verifiedWindow is when the verified chain is valid.
type verifiedWindow struct{ notBefore, notAfter time.Time }

func (w verifiedWindow) contains(t time.Time) bool {
	return !t.Before(w.notBefore) && !t.After(w.notAfter)
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
	size := cfg.CacheSize
	if size == 0 {
		size = DefaultX509CacheSize
	}
	a := &X509{ca: cfg.CA, now: now, cacheSize: size}
	if size > 0 {
		a.cache, a.leaves = make(map[verifiedKey]verifiedWindow), make(map[leafKey]leafEntry)
	}
	return a, nil
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
	leaf := peer[0]
	credID, err := a.verifyPeer(pool, peer)
	if err != nil {
		return nil, false, &CertificateError{ID: certificateID(leaf), Err: err}
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	uid, err := subjectUID(leaf)
	if err != nil {
		return nil, false, err
	}
	return &filters.User{
		Name:   leaf.Subject.CommonName,
		UID:    uid,
		Groups: leaf.Subject.Organization,
		Extra:  map[string][]string{CredentialIDKey: {credID}},
	}, true, nil
}

// verifyPeer verifies peer against pool (see verify) and returns the
// credential ID of its leaf. A leaf sent alone is looked up by its parsed
// certificate first: a connection's later requests neither hash nor verify
// it again while it is valid.
func (a *X509) verifyPeer(pool *x509.CertPool, peer []*x509.Certificate) (credID string, err error) {
	lone := len(peer) == 1 && a.leaves != nil
	if lone {
		a.cacheMu.RLock()
		e, ok := a.leaves[leafKey{pool, peer[0]}]
		a.cacheMu.RUnlock()
		if ok && e.window.contains(a.now()) {
			return e.credID, nil
		}
	}
	sum := sha256.Sum256(peer[0].Raw)
	w, err := a.verify(pool, peer, &sum)
	if err != nil {
		return "", err
	}
	credID = "X509SHA256=" + hex.EncodeToString(sum[:])
	if lone {
		a.cacheMu.Lock()
		if len(a.leaves) >= a.cacheSize {
			clear(a.leaves) // as the cache: bounded, refilled by active clients
		}
		a.leaves[leafKey{pool, peer[0]}] = leafEntry{window: w, credID: credID}
		a.cacheMu.Unlock()
	}
	return credID, nil
}

// verify checks peer[0] against pool with peer[1:] as intermediates and
// ClientAuth as the key usage, consulting and filling the cache; leafSum is
// the SHA-256 of peer[0]'s DER. It returns when the verified chain is valid.
func (a *X509) verify(pool *x509.CertPool, peer []*x509.Certificate, leafSum *[sha256.Size]byte) (verifiedWindow, error) {
	now := a.now()
	var key verifiedKey
	if a.cache != nil {
		key = verifiedKey{pool: pool, sum: *leafSum}
		if len(peer) > 1 {
			h := sha256.New()
			for _, c := range peer {
				_ = binary.Write(h, binary.BigEndian, uint32(len(c.Raw)))
				h.Write(c.Raw)
			}
			key.chain = true
			h.Sum(key.sum[:0])
		}
		a.cacheMu.RLock()
		w, ok := a.cache[key]
		a.cacheMu.RUnlock()
		if ok && w.contains(now) {
			return w, nil
		}
	}
	opts := x509.VerifyOptions{
		Roots:       pool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(peer) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range peer[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := peer[0].Verify(opts)
	if err != nil {
		return verifiedWindow{}, err
	}
	w := verifiedWindow{notBefore: chains[0][0].NotBefore, notAfter: chains[0][0].NotAfter}
	for _, c := range chains[0][1:] {
		if c.NotBefore.After(w.notBefore) {
			w.notBefore = c.NotBefore
		}
		if c.NotAfter.Before(w.notAfter) {
			w.notAfter = c.NotAfter
		}
	}
	if a.cache != nil {
		a.cacheMu.Lock()
		if len(a.cache) >= a.cacheSize {
			clear(a.cache) // crude but bounded; a full cache is refilled by active clients
		}
		a.cache[key] = w
		a.cacheMu.Unlock()
	}
	return w, nil
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

// UnionCA returns a CAProvider whose pool holds the certificates of every
// provider's current pool, rebuilt only when one of them changes. Use it to
// advertise the client CA and the request-header CA together in the TLS
// handshake (certs.ServerTLSOptions.ClientCA); never to verify with, since
// each authenticator must verify against its own CA. Providers that can
// list their certificates (Certificates() []*x509.Certificate, as
// certs.CABundle and Delegated's providers) are merged; a provider that
// cannot list its certificates (StaticCA) is used alone when it is the only
// one with a pool, and otherwise left out.
func UnionCA(providers ...CAProvider) CAProvider {
	u := &unionCA{providers: providers}
	return CAProviderFunc(u.pool)
}

type unionCA struct {
	providers []CAProvider

	// mu guards last and merged.
	mu     sync.Mutex
	last   []*x509.CertPool
	merged *x509.CertPool
}

func (u *unionCA) pool() *x509.CertPool {
	type lister interface{ Certificates() []*x509.Certificate }
	current := make([]*x509.CertPool, len(u.providers))
	var only *x509.CertPool
	n := 0
	for i, p := range u.providers {
		if p != nil {
			if current[i] = p.CertPool(); current[i] != nil {
				only = current[i]
				n++
			}
		}
	}
	if n <= 1 {
		return only
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.merged != nil && slices.Equal(u.last, current) {
		return u.merged
	}
	merged := x509.NewCertPool()
	for _, p := range u.providers {
		if l, ok := p.(lister); ok {
			for _, c := range l.Certificates() {
				merged.AddCert(c)
			}
		}
	}
	u.last, u.merged = current, merged
	return merged
}
