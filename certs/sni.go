// This file holds the choice of serving certificate by the name a client
// asks for (SNI), as kube's --tls-sni-cert-key.

package certs

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
)

// SNISource serves the certificate whose names match the ClientHello's
// server name (exact, or a "*." wildcard for the first label), else
// Fallback, as kube's --tls-sni-cert-key. Add every certificate before
// serving; GetCertificate is then safe for concurrent use.
type SNISource struct {
	// Fallback is served to clients that ask for no name Add was given.
	Fallback CertificateSource
	exact    map[string]CertificateSource
	wildcard map[string]CertificateSource // by the suffix after "*."
}

var _ CertificateSource = (*SNISource)(nil)

// Add serves src to clients that ask for one of names (wildcards allowed
// in the first label); the first certificate added for a name wins. Empty
// names means the names of the certificate itself (CertificateNames).
func (s *SNISource) Add(names []string, src CertificateSource) {
	if s.exact == nil {
		s.exact, s.wildcard = map[string]CertificateSource{}, map[string]CertificateSource{}
	}
	if len(names) == 0 {
		names = CertificateNames(src)
	}
	for _, n := range names {
		n = strings.ToLower(n)
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			if _, taken := s.wildcard[rest]; !taken {
				s.wildcard[rest] = src
			}
			continue
		}
		if _, taken := s.exact[n]; !taken { // the first pair given wins
			s.exact[n] = src
		}
	}
}

// GetCertificate picks the certificate for hello's server name.
func (s *SNISource) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if src, ok := s.exact[name]; ok {
		return src.GetCertificate(hello)
	}
	if _, rest, ok := strings.Cut(name, "."); ok {
		if src, ok := s.wildcard[rest]; ok {
			return src.GetCertificate(hello)
		}
	}
	return s.Fallback.GetCertificate(hello)
}

// CertificateNames are the DNS names and IPs of src's certificate (its CN
// when it has none), the names an --tls-sni-cert-key pair without patterns
// serves.
func CertificateNames(src CertificateSource) []string {
	cert, err := src.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || cert == nil || len(cert.Certificate) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil
	}
	names := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && leaf.Subject.CommonName != "" {
		names = append(names, leaf.Subject.CommonName)
	}
	return names
}
