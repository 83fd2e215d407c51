package loadbench

// This file is the harness every benchmark of the package shares: the
// Builder of a benchmark server (newBuilder, the one place the package
// declares one), a server running in the background on a free port, and
// HTTPS clients made from the admin kubeconfig the server writes. It uses
// only the library's exported API.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// widgets is the resource most benchmarks serve: namespaced, schemaless.
func widgets() rest.Resource {
	return rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}
}

// benchOpts is what the benchmarks vary between servers; newBuilder makes
// the Builder of it. Every zero value is the Builder's default, except
// where a field says otherwise.
type benchOpts struct {
	// dataDir is the server's data directory: generated certificates, the
	// admin kubeconfig and, when store is nil, the default bbolt store
	// (fsync on). Empty means a new temporary directory. Servers given the
	// same one share their certificates.
	dataDir string
	// listener is the listening socket; startServer and buildServer set it
	// (a free port on 127.0.0.1).
	listener net.Listener
	// resources are the served resources. Nil means widgets().
	resources []rest.Resource
	// store is the default store. Nil means the Builder's bbolt file in
	// dataDir.
	store storage.Interface

	disableWatchCache    bool
	disableManagedFields bool

	tokenAuthFile            string
	authorizationPolicyFiles []string
	authenticator            authn.Authenticator
	validators               []admission.Validator
	audit                    audit.Config
	flowControl              flowcontrol.Config
	stages                   []annex.InsertedStage
}

// newBuilder is the Builder of a benchmark server. Every Builder field the
// package sets is set here, so that a change of the Builder's shape is a
// change of this function alone. The server logs nothing.
func newBuilder(o benchOpts) annex.Builder {
	resources := o.resources
	if resources == nil {
		resources = []rest.Resource{widgets()}
	}
	return annex.Builder{
		Resources:      resources,
		DataDir:        o.dataDir,
		Serving:        annex.Serving{Listener: o.listener},
		Authentication: annex.Authentication{TokenAuthFile: o.tokenAuthFile, Authenticator: o.authenticator},
		Authorization:  annex.Authorization{PolicyFiles: o.authorizationPolicyFiles},
		Admission:      annex.Admission{Validators: o.validators},
		Storage:        annex.Storage{Store: o.store, DisableWatchCache: o.disableWatchCache, DisableManagedFields: o.disableManagedFields},
		Audit:          o.audit,
		FlowControl:    o.flowControl,
		Stages:         o.stages,
		Observability:  annex.Observability{Logger: zap.NewNop()},
	}
}

// buildServer builds a server of o on a free port of 127.0.0.1 without
// running it: for benchmarks that call its Handler directly.
func buildServer(tb testing.TB, o benchOpts) *annex.Server {
	tb.Helper()
	if o.dataDir == "" {
		o.dataDir = tb.TempDir()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	o.listener = ln
	b := newBuilder(o)
	srv, err := b.Build() // closes the listener when it fails
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() }) // a server never run does not close it; Run does
	return srv
}

// server is a running benchmark server.
type server struct {
	srv *annex.Server
	url string
	// kubeconfig is the admin kubeconfig the server wrote: its CA verifies
	// the server, its client certificate is the admin (system:masters).
	kubeconfig *kubeclient.Config
	admin      *http.Client

	cancel   context.CancelFunc
	done     chan struct{} // closed when Run returned
	runErr   error         // what Run returned, once done is closed
	stopOnce sync.Once
}

// startServer builds a server of o, runs it until the test ends (or stop),
// and returns once it is ready: its watch caches hold their initial lists.
func startServer(tb testing.TB, o benchOpts) *server {
	tb.Helper()
	srv := buildServer(tb, o)
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{srv: srv, url: srv.URL(), cancel: cancel, done: make(chan struct{})}
	go func() { s.runErr = srv.Run(ctx); close(s.done) }()
	tb.Cleanup(func() { s.stop(tb) })
	kc, err := kubeclient.LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		tb.Fatalf("admin kubeconfig %q: %v", srv.KubeconfigPath(), err)
	}
	s.kubeconfig = kc
	s.admin = newClient(tb, kc.CAData, kc.CertData, kc.KeyData)
	waitReady(tb, newClient(tb, kc.CAData, nil, nil), s.url)
	return s
}

// stop ends the server and waits for Run to return; Run must return nil.
// Later calls do nothing.
func (s *server) stop(tb testing.TB) {
	s.stopOnce.Do(func() {
		s.cancel()
		select {
		case <-s.done:
			if s.runErr != nil {
				tb.Errorf("Run: %v", s.runErr)
			}
		case <-time.After(30 * time.Second):
			tb.Error("Run did not return after cancel")
		}
	})
}

// newClient is an HTTP/2 client of its own connection to a server whose
// certificate caPEM verifies, presenting the client certificate certPEM
// (with keyPEM) when given, whatever CAs the server asks for.
func newClient(tb testing.TB, caPEM, certPEM, keyPEM []byte) *http.Client {
	tb.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		tb.Fatal("no CA certificate in the kubeconfig")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if len(certPEM) > 0 {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			tb.Fatal(err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// waitReady polls url's /readyz until it answers 200, for up to 10s.
func waitReady(tb testing.TB, c *http.Client, url string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := do(tb, c, http.MethodGet, url+"/readyz?verbose", "")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("server not ready: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// do sends a request (a JSON body when body is not empty) and returns the
// answer's status code and body.
func do(tb testing.TB, c *http.Client, method, url, body string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// readAll reads and closes resp's body.
func readAll(tb testing.TB, resp *http.Response) string {
	tb.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
