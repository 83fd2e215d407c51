package annex_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/rest"
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

// TestRegistrationService: with Registration.Service the generated serving
// certificate carries the Service's names, and /readyz checks the one
// kube-aggregator verifies; a certificate of the program's without it keeps
// the server unready, naming the check and the host.
func TestRegistrationService(t *testing.T) {
	t.Parallel()
	ts := startServer(t, annex.Builder{Registration: annex.Registration{Service: "environments.annex-system"}})
	st, err := tls.Dial("tcp", strings.TrimPrefix(ts.URL, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	names := st.ConnectionState().PeerCertificates[0].DNSNames
	st.Close()
	for _, want := range []string{"environments", "environments.annex-system", "environments.annex-system.svc", "environments.annex-system.svc.cluster.local"} {
		if !slices.Contains(names, want) {
			t.Errorf("serving certificate names %q, want %q among them", names, want)
		}
	}
	if code, body := do(t, ts.Client(), "GET", ts.URL+"/readyz/serving-certificate-name", ""); code != 200 {
		t.Errorf("/readyz/serving-certificate-name: %d %s", code, body)
	}

	// A certificate for localhost only, given as files.
	dir := t.TempDir()
	ca, err := certs.EnsureCA(certs.CAConfig{Dir: dir, Name: "own-ca"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.EnsureServingCert(certs.ServingConfig{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	b := annex.Builder{Registration: annex.Registration{Service: "environments.annex-system"},
		Serving: annex.Serving{CertFile: filepath.Join(dir, "serving.crt"), KeyFile: filepath.Join(dir, "serving.key")}, Resources: []rest.Resource{widgets()}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.Serving.Listener = ln
	b.DataDir = t.TempDir()
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	admin, err := tls.LoadX509KeyPair(filepath.Join(b.DataDir, "certs", "admin.crt"), filepath.Join(b.DataDir, "certs", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{admin}}}}
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := insecure.Get(srv.URL() + "/readyz/serving-certificate-name"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if code, body = resp.StatusCode, string(b); code != 0 {
				break
			}
		}
	}
	if code != 500 || !strings.Contains(body, "environments.annex-system.svc") {
		t.Errorf("/readyz/serving-certificate-name with a certificate for localhost: %d %q", code, body)
	}
}
