// This file holds the root's tests that cannot run from outside the package,
// as the behaviour tests do on package annextest: they reach what no
// Builder field sets or no wire shows.

package annex

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/rest"
)

// TestLimitHeaderReadTimeout: a connection whose request headers never end
// is closed after ReadHeaderTimeout, kube's 32s. No field sets it, and 32s
// is too long for a test: the test shortens it on the built http.Server.
func TestLimitHeaderReadTimeout(t *testing.T) {
	t.Parallel()
	b := Builder{DataDir: t.TempDir(), Resources: []rest.Resource{widgets()}, Serving: Serving{Listener: mustListen(t)},
		Observability: Observability{Logger: zap.NewNop()}}
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if srv.httpServer.ReadHeaderTimeout != 32*time.Second {
		t.Errorf("ReadHeaderTimeout = %v, want kube's 32s", srv.httpServer.ReadHeaderTimeout)
	}
	const timeout = 300 * time.Millisecond
	srv.httpServer.ReadHeaderTimeout = timeout
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	// As the admin, over HTTP/1.1.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srv.servingCA.CertPEM)
	admin, err := tls.X509KeyPair(srv.admin.CertPEM, srv.admin.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin},
		NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
		t.Fatalf("negotiated %q, want http/1.1", got)
	}
	start := time.Now()
	// Half a request: the headers never end.
	if _, err := io.WriteString(conn, "GET /apis/test.annex.dev/v1/namespaces/default/widgets HTTP/1.1\r\nHost: localhost\r\nUser-Agent: slow\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := conn.Read(make([]byte, 512))
	elapsed := time.Since(start)
	var ne net.Error
	if n != 0 || !errors.Is(err, io.EOF) || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("read: %d bytes, %v; want the server to close the connection", n, err)
	}
	if elapsed < timeout {
		t.Errorf("closed after %v, before the %v header timeout", elapsed, timeout)
	}
}

// TestHealthPathsAreExempt: isHealthPath, which keeps the health paths out
// of flow control, matches them and their checks, not their look-alikes.
func TestHealthPathsAreExempt(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"/healthz": true, "/livez": true, "/readyz": true, "/readyz/ping": true, "/healthz/etcd": true,
		"/healthzz": false, "/apis/healthz": false, "/metrics": false, "/": false,
	} {
		if got := isHealthPath(path); got != want {
			t.Errorf("isHealthPath(%q) = %v, want %v", path, got, want)
		}
	}
}
