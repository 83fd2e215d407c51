// This file holds the request-header (front proxy) authenticator: the
// identity kube-aggregator asserts in X-Remote-* headers, trusted only from a
// client certificate that verifies against the request-header CA and whose
// CN is allowed.

package authn

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/annexapi/annex/filters"
)

// RequestHeaderNames are the front-proxy settings besides the CA: which
// certificate CNs may assert identities, and in which headers.
type RequestHeaderNames struct {
	// AllowedNames are the client certificate CNs trusted to assert
	// identities. Empty means any certificate from the request-header CA.
	AllowedNames []string
	// UsernameHeaders are tried in order; the first non-empty value is the
	// user name.
	UsernameHeaders []string
	// UIDHeaders are tried in order; the first non-empty value is the UID.
	UIDHeaders []string
	// GroupHeaders: every non-empty value of every header is a group.
	GroupHeaders []string
	// ExtraHeaderPrefixes: a header named <prefix><key> (prefix matched
	// case-insensitively) adds its values to extra[key], the key lower-cased
	// and %-unescaped.
	ExtraHeaderPrefixes []string
}

// DefaultRequestHeaderNames returns Kubernetes' defaults: X-Remote-User,
// X-Remote-Group, X-Remote-Extra-, any CN, and no UID header (Kubernetes
// leaves --requestheader-uid-headers empty on purpose: an older front proxy
// may pass a client's X-Remote-Uid through).
func DefaultRequestHeaderNames() RequestHeaderNames {
	return RequestHeaderNames{
		UsernameHeaders:     []string{"X-Remote-User"},
		GroupHeaders:        []string{"X-Remote-Group"},
		ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
	}
}

// RequestHeaderNamesProvider provides the current front-proxy settings.
// RequestHeaderNames is called once per request, from many goroutines; it
// must be cheap, and the returned value must not be modified afterwards. nil
// means the front proxy is not configured: no request is authenticated by
// headers. The delegated configuration (Delegated) implements it.
type RequestHeaderNamesProvider interface {
	RequestHeaderNames() *RequestHeaderNames
}

// StaticRequestHeaderNames returns a provider of n with Kubernetes' defaults
// filled in for empty user, group and extra lists.
func StaticRequestHeaderNames(n RequestHeaderNames) RequestHeaderNamesProvider {
	d := DefaultRequestHeaderNames()
	if len(n.UsernameHeaders) == 0 {
		n.UsernameHeaders = d.UsernameHeaders
	}
	if len(n.GroupHeaders) == 0 {
		n.GroupHeaders = d.GroupHeaders
	}
	if len(n.ExtraHeaderPrefixes) == 0 {
		n.ExtraHeaderPrefixes = d.ExtraHeaderPrefixes
	}
	p := canonicalNames(n)
	return staticNames{&p}
}

type staticNames struct{ n *RequestHeaderNames }

func (s staticNames) RequestHeaderNames() *RequestHeaderNames { return s.n }

// canonicalNames returns n with header names in canonical form, so lookups
// need no per-request canonicalization.
func canonicalNames(n RequestHeaderNames) RequestHeaderNames {
	canon := func(hs []string) []string {
		out := make([]string, 0, len(hs))
		for _, h := range hs {
			if h = strings.TrimSpace(h); h != "" {
				out = append(out, http.CanonicalHeaderKey(h))
			}
		}
		return out
	}
	return RequestHeaderNames{
		AllowedNames:        slices.Clone(n.AllowedNames),
		UsernameHeaders:     canon(n.UsernameHeaders),
		UIDHeaders:          canon(n.UIDHeaders),
		GroupHeaders:        canon(n.GroupHeaders),
		ExtraHeaderPrefixes: canon(n.ExtraHeaderPrefixes),
	}
}

// RequestHeaderConfig configures NewRequestHeader.
type RequestHeaderConfig struct {
	// CA provides the request-header CA pool: the front proxy's client
	// certificate must chain to it. Required. It must not be the client CA
	// (see CheckDistinctCAs): a certificate from the client CA never makes
	// headers trusted.
	CA CAProvider
	// Names provides the allowed names and header names. nil means
	// StaticRequestHeaderNames(RequestHeaderNames{}): Kubernetes' defaults,
	// any CN.
	Names RequestHeaderNamesProvider
	// Now returns the time certificates are verified at; nil means time.Now.
	Now func() time.Time
}

// RequestHeader authenticates requests from a trusted front proxy by the
// identity it asserts in headers.
//
// A request without a client certificate, or with one the proxy settings do
// not know yet, is not-ok (the next authenticator runs). A certificate that
// does not verify against the request-header CA, or whose CN is not allowed,
// is an error, as Kubernetes' verifier returns: the union then tries the
// other authenticators (a certificate from the client CA still
// authenticates as itself through X509) and, if none succeeds, the request
// is a 401. Whatever the outcome, Authenticate deletes every header the
// current settings name, so nothing later reads an untrusted identity.
type RequestHeader struct {
	names    RequestHeaderNamesProvider
	verifier *X509
}

var _ Authenticator = (*RequestHeader)(nil)

// NewRequestHeader returns the request-header authenticator for cfg.
func NewRequestHeader(cfg RequestHeaderConfig) (*RequestHeader, error) {
	if cfg.CA == nil {
		return nil, ErrNoCA
	}
	v, err := NewX509(X509Config{CA: cfg.CA, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	names := cfg.Names
	if names == nil {
		names = StaticRequestHeaderNames(RequestHeaderNames{})
	}
	return &RequestHeader{names: names, verifier: v}, nil
}

// Authenticate verifies the front proxy's certificate and reads the
// identity from the headers; see RequestHeader.
func (a *RequestHeader) Authenticate(r *http.Request) (*filters.User, bool, error) {
	n := a.names.RequestHeaderNames()
	if n == nil {
		return nil, false, nil
	}
	defer ClearRequestHeaders(r.Header, n)
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	pool := a.verifier.ca.CertPool()
	if pool == nil {
		return nil, false, nil
	}
	peer := r.TLS.PeerCertificates
	if _, err := a.verifier.verifyPeer(pool, peer); err != nil {
		return nil, false, &CertificateError{ID: certificateID(peer[0]), Err: err}
	}
	if cn := peer[0].Subject.CommonName; len(n.AllowedNames) > 0 && !slices.Contains(n.AllowedNames, cn) {
		return nil, false, fmt.Errorf("%w: x509: subject with cn=%s is not in the allowed list", ErrNotAllowedProxy, cn)
	}
	return UserFromRequestHeaders(r.Header, n)
}

// UserFromRequestHeaders reads the identity headers n names from h, as
// Kubernetes' header authenticator does, without any trust decision: callers
// must have verified the sender. No user name is not-ok.
func UserFromRequestHeaders(h http.Header, n *RequestHeaderNames) (*filters.User, bool, error) {
	name := firstValue(h, n.UsernameHeaders)
	if name == "" {
		return nil, false, nil
	}
	u := &filters.User{Name: name, UID: firstValue(h, n.UIDHeaders)}
	for _, gh := range n.GroupHeaders {
		for _, g := range h[gh] {
			if g != "" {
				u.Groups = append(u.Groups, g)
			}
		}
	}
	for _, prefix := range n.ExtraHeaderPrefixes {
		for k, vs := range h {
			if len(k) < len(prefix) || !strings.EqualFold(k[:len(prefix)], prefix) {
				continue
			}
			key := UnescapeExtraKey(strings.ToLower(k[len(prefix):]))
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[key] = append(u.Extra[key], vs...)
		}
	}
	return u, true, nil
}

// UnescapeExtraKey %-unescapes an extra key as a URL path segment, returning
// it unchanged when it is not validly escaped (Kubernetes' unescapeExtraKey).
func UnescapeExtraKey(k string) string {
	if u, err := url.PathUnescape(k); err == nil {
		return u
	}
	return k
}

func firstValue(h http.Header, names []string) string {
	for _, n := range names {
		// Kubernetes reads h.Get: the first value of the header.
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// ClearRequestHeaders deletes every header n names from h: user, UID and
// group headers, and every header starting with an extra prefix. Names are
// compared case-insensitively, so a header put into the map under a
// non-canonical key is deleted too.
func ClearRequestHeaders(h http.Header, n *RequestHeaderNames) {
	for k := range h {
		if matchesAny(k, n.UsernameHeaders) || matchesAny(k, n.UIDHeaders) || matchesAny(k, n.GroupHeaders) || hasAnyPrefix(k, n.ExtraHeaderPrefixes) {
			delete(h, k)
		}
	}
}

func matchesAny(k string, names []string) bool {
	for _, n := range names {
		if strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(k string, prefixes []string) bool {
	for _, p := range prefixes {
		if len(k) >= len(p) && strings.EqualFold(k[:len(p)], p) {
			return true
		}
	}
	return false
}

// CheckDistinctCAs returns ErrSharedCA when the client CA and the
// request-header CA share a certificate (when both offer
// Certificates() []*x509.Certificate, as certs.CABundle does) or have equal
// pools: any client of the cluster CA could then assert any identity in
// X-Remote-* headers (Kubernetes PR #47094). Either being nil is fine.
func CheckDistinctCAs(clientCA, requestHeaderCA CAProvider) error {
	if clientCA == nil || requestHeaderCA == nil {
		return nil
	}
	type lister interface{ Certificates() []*x509.Certificate }
	la, okA := clientCA.(lister)
	lb, okB := requestHeaderCA.(lister)
	if okA && okB {
		for _, a := range la.Certificates() {
			for _, b := range lb.Certificates() {
				if a.Equal(b) {
					return fmt.Errorf("%w: %q is in both", ErrSharedCA, a.Subject.CommonName)
				}
			}
		}
		return nil
	}
	pa, pb := clientCA.CertPool(), requestHeaderCA.CertPool()
	if pa != nil && pb != nil && pa.Equal(pb) {
		return ErrSharedCA
	}
	return nil
}

// nextPEMCert returns the DER bytes of the next CERTIFICATE block in data
// and the rest, skipping other blocks; nil when there is none.
func nextPEMCert(data []byte) ([]byte, []byte) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, nil
		}
		if b.Type == "CERTIFICATE" {
			return b.Bytes, data
		}
	}
}
