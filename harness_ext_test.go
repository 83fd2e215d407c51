package annex_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/rest"
)

// This file is the harness of the root's behaviour tests that run a server
// the way a user's test does, with package annextest, from outside the
// package.

// widgets is the resource a Builder without Resources gets in these tests
// (as annextest's servers need one).
func widgets() rest.Resource {
	return rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}
}

// do sends a request with the headers kubectl sends (Accept, User-Agent,
// Content-Type for a body) and returns the status and body.
func do(t testing.TB, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/annex-test")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// startServer runs b with annextest, with widgets when b declares no
// resource.
func startServer(t testing.TB, b annex.Builder) *annextest.Server {
	t.Helper()
	if b.Resources == nil {
		b.Resources = []rest.Resource{widgets()}
	}
	return annextest.Start(t, b)
}

// clientWith is a client of srv that verifies it with the serving CA the
// server generated and presents the certificate of certFile and keyFile
// ("" for none) whatever CAs the server advertises, as a forger would (Go's
// client otherwise withholds one that no advertised CA signed).
func clientWith(t testing.TB, srv *annextest.Server, certFile, keyFile string) *http.Client {
	t.Helper()
	cfg := srv.TLSConfig()
	if cfg == nil {
		t.Fatal("the server's serving CA is not known")
	}
	cfg.Certificates = nil
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// readAll reads and closes a response's body.
func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFile writes content to the file name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
