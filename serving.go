// This file holds the serving options of kubeflags.go that act on the
// socket and the handshake: SNI certificates, socket sharing, the certificate
// directory and the debug socket.

package annex

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"

	"github.com/annexapi/annex/certs"
)

// certDir is where generated certificates go.
func (c *Builder) certDir() string {
	if c.CertDir != "" {
		return c.CertDir
	}
	return filepath.Join(c.DataDir, "certs")
}

// sniSource serves the certificate whose names match the ClientHello's
// server name (exact, or a "*." wildcard for the first label), else the
// default one, as kube's --tls-sni-cert-key.
type sniSource struct {
	fallback certs.CertificateSource
	exact    map[string]certs.CertificateSource
	wildcard map[string]certs.CertificateSource // by the suffix after "*."
}

func (s *sniSource) add(names []string, src certs.CertificateSource) {
	if s.exact == nil {
		s.exact, s.wildcard = map[string]certs.CertificateSource{}, map[string]certs.CertificateSource{}
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
func (s *sniSource) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if src, ok := s.exact[name]; ok {
		return src.GetCertificate(hello)
	}
	if _, rest, ok := strings.Cut(name, "."); ok {
		if src, ok := s.wildcard[rest]; ok {
			return src.GetCertificate(hello)
		}
	}
	return s.fallback.GetCertificate(hello)
}

// certNames are the DNS names and IPs of a certificate (its CN when it has
// none), the names an --tls-sni-cert-key pair without patterns serves.
func certNames(src certs.CertificateSource) []string {
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

// debugSocket serves Go's profiles on a unix socket, without
// authentication or authorization, as kube's --debug-socket-path.
func debugSocket(path string) (net.Listener, *http.Server, error) {
	_ = os.Remove(path) // a socket left by an earlier run
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return ln, &http.Server{Handler: mux, ReadHeaderTimeout: 32e9}, nil
}
