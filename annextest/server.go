// This file holds Server: a Builder's server run in process on a loopback
// port, its clients, and Close.

package annextest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/kubeclient"
)

// Bounds of the kit. A server built by a test is usually ready in
// milliseconds; the readiness deadline is generous for loaded CI machines.
const (
	readyTimeout  = 30 * time.Second
	readyPoll     = 10 * time.Millisecond
	clientTimeout = 30 * time.Second
)

// Server is a running server built from a Builder. Its methods are safe for
// concurrent use. Do not call the embedded Server's Run: NewServer already
// runs it, and Shutdown or Close stops it.
type Server struct {
	// Server is the built server (KubeconfigPath, Handler, Addr). Its URL
	// method is shadowed by the URL field, which holds the same string.
	*annex.Server
	// URL is the server's base URL, https://127.0.0.1:<port>.
	URL string
	// Kubeconfig is the path of the admin kubeconfig the server wrote, for
	// kubectl and client-go. Empty when the server wrote none (not in
	// standalone mode, see the package documentation).
	Kubeconfig string
	// DataDir is the data directory the server uses: the Builder's, or a
	// temporary one the kit made and Close removes.
	DataDir string

	// admin and anonymous are the clients Client and AnonymousClient
	// return; nil without a kubeconfig.
	admin, anonymous *http.Client
	// tlsConfig is what TLSConfig copies: the admin's configuration in
	// standalone mode, one trusting the generated serving CA otherwise; nil
	// when the Builder gave the serving certificate.
	tlsConfig *tls.Config
	// cancel ends Run's context; done is closed when Run has returned, with
	// its error in runErr.
	cancel context.CancelFunc
	done   chan struct{}
	runErr error
	// tempDir is the data directory the kit made, removed by Close; "" when
	// the Builder gave one.
	tempDir string
	// closeOnce makes Close idempotent; closeErr is what it returned.
	closeOnce sync.Once
	closeErr  error
}

// NewServer builds the server b declares and runs it until Close. On a copy
// of b it fills, when unset: Serving.Listener with a listener on 127.0.0.1 at
// a free port, DataDir with a fresh temporary directory (removed by Close),
// and Observability.Logger with zap.NewNop() (only when Logging.Output is
// nil too, so that a
// test that asks for logs gets them). It returns once /readyz answers 200,
// or the error of Build, of Run if it returns first, or a timeout after 30s
// naming the last /readyz answer.
func NewServer(b annex.Builder) (*Server, error) { return newServer(b, readyTimeout) }

// newServer is NewServer with the readiness deadline given, so that the
// timeout path can be tested without waiting 30s.
func newServer(b annex.Builder, timeout time.Duration) (*Server, error) {
	dataDir, tempDir, err := withDefaults(&b)
	if err != nil {
		return nil, err
	}
	srv, err := b.Build()
	if err != nil {
		if tempDir != "" {
			_ = os.RemoveAll(tempDir)
		}
		return nil, err // Build's error as it is: it names the Builder's fields
	}
	s := &Server{Server: srv, URL: srv.URL(), Kubeconfig: srv.KubeconfigPath(), DataDir: dataDir, tempDir: tempDir, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	// Run, even if the clients cannot be made: only Run closes what Build
	// opened (the store, the listener), and Close waits for it.
	go func() {
		s.runErr = srv.Run(ctx)
		close(s.done)
	}()
	if s.Kubeconfig != "" {
		var anonTLS *tls.Config
		if s.tlsConfig, anonTLS, err = tlsFrom(s.Kubeconfig); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("annextest: admin client from %s: %w", s.Kubeconfig, err)
		}
		s.admin, s.anonymous = newClient(s.tlsConfig.Clone()), newClient(anonTLS)
	} else if b.Serving.CertFile == "" {
		if s.tlsConfig, err = trustServingCA(b); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	if err := s.waitReady(timeout); err != nil {
		_ = s.Close() // Run's error, if any, is in err already or joined below
		if s.runErr != nil && !errors.Is(err, s.runErr) {
			err = errors.Join(err, s.runErr)
		}
		return nil, err
	}
	return s, nil
}

// withDefaults is the one place the kit touches Builder fields: the
// defaults NewServer applies to its copy. It returns the data directory used
// and, when it made that directory, its path again as tempDir.
func withDefaults(b *annex.Builder) (dataDir, tempDir string, err error) {
	if o := &b.Observability; o.Logger == nil && o.Logging.Output == nil {
		o.Logger = zap.NewNop()
	}
	if b.DataDir == "" {
		dir, err := os.MkdirTemp("", "annextest-")
		if err != nil {
			return "", "", fmt.Errorf("annextest: data directory: %w", err)
		}
		b.DataDir, tempDir = dir, dir
	}
	if b.Serving.Listener == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			if tempDir != "" {
				_ = os.RemoveAll(tempDir)
			}
			return "", "", fmt.Errorf("annextest: listen: %w", err)
		}
		b.Serving.Listener = ln // the Builder owns it from here: Build closes it on failure
	}
	return b.DataDir, tempDir, nil
}

// tlsFrom makes the TLS configurations of the admin and anonymous clients
// from the kubeconfig the server wrote: both verify the serving CA, the
// admin's presents the admin client certificate.
func tlsFrom(path string) (admin, anonymous *tls.Config, err error) {
	cfg, err := kubeclient.LoadKubeconfig(path, "")
	if err != nil {
		return nil, nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.CAData) {
		return nil, nil, errors.New("kubeconfig has no certificate authority data")
	}
	pair, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig client certificate: %w", err)
	}
	anonTLS := &tls.Config{RootCAs: roots, ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12}
	adminTLS := anonTLS.Clone()
	adminTLS.Certificates = []tls.Certificate{pair}
	return adminTLS, anonTLS, nil
}

// trustServingCA is a TLS configuration trusting the serving CA that Build
// generates when the Builder gives no serving certificate: the file
// <Name>-serving-ca.crt in Serving.CertDir (zero values: "annex" and
// <DataDir>/certs). It is for a server that wrote no kubeconfig.
func trustServingCA(b annex.Builder) (*tls.Config, error) {
	dir, name := b.Serving.CertDir, b.Name
	if dir == "" {
		dir = filepath.Join(b.DataDir, "certs")
	}
	if name == "" {
		name = "annex"
	}
	path := filepath.Join(dir, name+"-serving-ca.crt")
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("annextest: serving CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("annextest: serving CA: no certificate in %s", path)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

func newClient(cfg *tls.Config) *http.Client {
	// No Proxy: the server is on loopback, whatever HTTPS_PROXY says.
	tr := &http.Transport{
		TLSClientConfig:     cfg,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 16,
	}
	return &http.Client{Transport: tr, Timeout: clientTimeout}
}

// waitReady polls /readyz until it answers 200, Run returns, or the
// deadline passes.
func (s *Server) waitReady(timeout time.Duration) error {
	c := s.admin // system:masters: allowed /readyz whatever AlwaysAllowPaths says
	switch {
	case c != nil:
	case s.tlsConfig != nil: // no kubeconfig: anonymous, verifying the generated serving CA
		c = newClient(s.tlsConfig.Clone())
		defer c.CloseIdleConnections()
	default:
		// With the Builder's serving certificate the kit does not know the
		// CA. Only the readiness probe skips verification: it sends no
		// credential, reads nothing but /readyz, and dials the loopback
		// listener the kit just handed to the Builder (or the caller's own).
		c = newClient(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
		defer c.CloseIdleConnections()
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	last := "no answer yet"
	for {
		code, body, err := probe(c, s.URL+"/readyz?verbose")
		switch {
		case err != nil:
			last = err.Error()
		case code == http.StatusOK:
			return nil
		default:
			last = fmt.Sprintf("%d %s", code, body)
		}
		select {
		case <-s.done:
			if s.runErr != nil {
				return fmt.Errorf("annextest: server stopped before it was ready: %w", s.runErr)
			}
			return fmt.Errorf("annextest: server stopped before it was ready; last /readyz: %s", last)
		case <-deadline.C:
			return fmt.Errorf("annextest: server not ready after %s; last /readyz: %s", timeout, last)
		case <-tick.C:
		}
	}
}

func probe(c *http.Client, url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("User-Agent", "annextest")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(body), err
}

// Start is NewServer for a test: it fails the test on an error and closes
// the server when the test and its subtests are done, failing the test if
// Run returned an error.
func Start(t testing.TB, b annex.Builder) *Server {
	t.Helper()
	s, err := NewServer(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("annextest: close: %v", err)
		}
	})
	return s
}

// Client returns the admin client: it presents the admin client certificate
// of the kubeconfig (user "admin", group system:masters, allowed anything by
// the default authorization) and verifies the server with the serving CA. It
// speaks HTTP/2 and bounds each request, body included, to 30s; for a longer
// watch copy it and clear Timeout. Every call returns the same client. It is
// nil when the server wrote no kubeconfig.
func (s *Server) Client() *http.Client { return s.admin }

// AnonymousClient returns a client that verifies the server with the
// serving CA and presents no client certificate: by default it may get the
// health paths only. Every call returns the same client. It is nil when the
// server wrote no kubeconfig.
func (s *Server) AnonymousClient() *http.Client { return s.anonymous }

// TLSConfig returns a new client TLS configuration for the server, for a
// test that makes a client of its own or dials the server itself (raw TLS,
// another ALPN protocol in NextProtos). It verifies the server with the
// serving CA the server generated (read from the kubeconfig in standalone
// mode, from the certificate directory otherwise) and, in standalone mode,
// presents the admin client certificate as Client does; for another
// certificate, set GetClientCertificate (Go's client withholds a
// certificate in Certificates that no CA the server advertises signed). It
// is nil when the Builder gave the serving certificate (Serving.CertFile):
// the test knows its CA.
func (s *Server) TLSConfig() *tls.Config {
	if s.tlsConfig == nil {
		return nil
	}
	return s.tlsConfig.Clone()
}

// Shutdown begins the graceful shutdown Close waits for, and returns at
// once: Run's context ends, /readyz fails while the server serves on for
// the Builder's Shutdown.Delay, then (with Shutdown.SendRetryAfter) new
// requests get 429 while those in flight finish, watches end and Run
// returns, which closes Done (the HTTP/2 shutdown waits up to a second for
// a client's idle connection: CloseIdleConnections first to not wait).
// Close still returns Run's error and removes the data directory; Shutdown
// again does nothing more.
func (s *Server) Shutdown() { s.cancel() }

// Done returns a channel that is closed when Run has returned: after
// Shutdown or Close, or when the server failed (Close returns why).
func (s *Server) Done() <-chan struct{} { return s.done }

// Close stops the server: it cancels Run's context, waits for Run to return
// (graceful shutdown: open watches end, in-flight requests finish) and
// removes the data directory if the kit made it. It returns Run's error, nil
// after a clean stop, joined with a failure to remove the directory. Calling
// it again returns the same.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		// Idle connections go first: an HTTP/2 server's graceful shutdown
		// otherwise waits a second for each client to close its connection
		// after the GOAWAY.
		for _, c := range []*http.Client{s.admin, s.anonymous} {
			if c != nil {
				c.CloseIdleConnections()
			}
		}
		s.cancel()
		<-s.done
		var rmErr error
		if s.tempDir != "" {
			rmErr = os.RemoveAll(s.tempDir)
		}
		s.closeErr = errors.Join(s.runErr, rmErr)
	})
	return s.closeErr
}
