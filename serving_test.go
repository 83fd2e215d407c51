package annex_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
)

// TestKubeServingFlags drives the serving flags over real TLS: the minimum
// version and ciphers refuse a client outside them, --disable-http2-serving
// offers HTTP/1.1 only, an SNI certificate is served for its name and the
// default one otherwise, --cert-dir is where certificates are generated.
func TestKubeServingFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A certificate of its own for sni.example.com, from another CA.
	sniDir := filepath.Join(dir, "sni")
	ca, err := certs.EnsureCA(certs.CAConfig{Dir: sniDir, Name: "sni-ca"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.EnsureServingCert(certs.ServingConfig{Dir: sniDir, Hosts: []string{"sni.example.com"}}); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "elsewhere")
	ts := startServer(t, annex.Builder{
		Serving: annex.Serving{CertDir: certDir, TLSMinVersion: tls.VersionTLS13, DisableHTTP2: true, SNICertKeys: []annex.SNICertKey{{CertFile: filepath.Join(sniDir, "serving.crt"), KeyFile: filepath.Join(sniDir, "serving.key"), Names: []string{"*.example.com"}}}},
	})
	if _, err := os.Stat(filepath.Join(certDir, "serving.crt")); err != nil {
		t.Fatalf("--cert-dir: %v", err)
	}
	addr := strings.TrimPrefix(ts.URL, "https://")
	handshake := func(cfg *tls.Config) (tls.ConnectionState, error) {
		cfg.InsecureSkipVerify = true // the chain is not what is checked here
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer c.Close()
		return c.ConnectionState(), nil
	}
	if _, err := handshake(&tls.Config{MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("a TLS 1.2 client was served with --tls-min-version=VersionTLS13")
	}
	st, err := handshake(&tls.Config{NextProtos: []string{"h2", "http/1.1"}})
	if err != nil || st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("ALPN with --disable-http2-serving: %q, %v", st.NegotiatedProtocol, err)
	}
	if st, err := handshake(&tls.Config{ServerName: "api.example.com"}); err != nil || !slices.Contains(st.PeerCertificates[0].DNSNames, "sni.example.com") {
		t.Errorf("SNI api.example.com: %v, %v", err, st.PeerCertificates)
	}
	if st, err := handshake(&tls.Config{ServerName: "localhost"}); err != nil || slices.Contains(st.PeerCertificates[0].DNSNames, "sni.example.com") {
		t.Errorf("SNI localhost got the SNI certificate: %v", err)
	}
	if code, _ := do(t, ts.Client(), "GET", ts.URL+"/readyz", ""); code != 200 {
		t.Fatalf("readyz %d", code)
	}
}
