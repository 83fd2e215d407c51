// This file holds the Server Build returns: its TLS set-up, the handler it
// serves (stages around the mux of API, health, metrics and version paths),
// and Run with its graceful shutdown.

package annex

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/value"
	"github.com/annexapi/annex/watch"
)

// Server is a built server. Run serves it.
type Server struct {
	name string
	log  *zap.Logger
	// tracer exports spans (--tracing-config-file); nil when tracing is off.
	tracer         *tracer
	requestTimeout time.Duration
	shutdownDelay  time.Duration
	// drain counts requests and answers 429 while draining; watchGrace is
	// how long watches get to end.
	drain      *drain
	watchGrace time.Duration

	listener   net.Listener
	httpServer *http.Server
	// chain is the handler chain; httpServer serves it on a grown stack
	// (grownStack).
	chain http.Handler
	// shutdownFlag fails /readyz once shutdown starts.
	shutdownFlag *healthz.Flag
	// watchCtx ends every open watch when cancelled.
	watchCtx    context.Context
	cancelWatch context.CancelFunc

	// standalone is the generated material of standalone mode, nil otherwise.
	standalone *standaloneMaterial
	kubeconfig string

	// flowControl is priority and fairness (its debug dumps are mounted).
	flowControl *flowcontrol.Controller

	// readyChecks are /readyz checks the Build steps add (watch caches).
	readyChecks []healthz.Check

	// runners are long-running parts started by Run (cert reloaders, store
	// compaction); closers are called, in reverse, when Run returns.
	runners []func(ctx context.Context) error
	closers []func() error
}

type standaloneMaterial struct {
	servingCA *certs.CA
	admin     *certs.KeyPair
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// URL is the server's https URL, with "localhost" for a wildcard bind address.
func (s *Server) URL() string {
	host, port, _ := net.SplitHostPort(s.listener.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "https://" + net.JoinHostPort(host, port)
}

// KubeconfigPath is the admin kubeconfig written in standalone mode, or "".
func (s *Server) KubeconfigPath() string { return s.kubeconfig }

// Handler is the server's full handler chain, for serving it some other way
// (tests, a custom listener). Run serves it on the built listener.
func (s *Server) Handler() http.Handler { return s.httpServer.Handler }

// addWatchCaches puts a watch cache in front of every resource's storage:
// one upstream watch per resource, reads and watches served from memory. Each
// cache is started by Run and reported in /readyz until its initial list is in.
func (s *Server) addWatchCaches(c *Builder, resources []rest.Resource) error {
	// The versions of a resource share its store, and so its cache.
	caches := map[string]*watch.Cacher{}
	for i, r := range resources {
		if r.Storage == nil { // computed on read: nothing to cache
			continue
		}
		resource := r.Plural + "." + r.Group
		if ch, ok := caches[resource]; ok {
			resources[i].Storage = ch
			continue
		}
		ch, err := watch.New(r.Storage, watch.Config{
			Prefix:     storage.ResourcePrefix(r.Group, r.Plural, ""),
			Resource:   resource,
			RingSize:   c.WatchCacheSizes[resource],
			Registerer: c.Registerer,
			Logger:     c.Logger.Named("watch-cache").With(zap.String("resource", resource)),
		})
		if err != nil {
			return fmt.Errorf("watch cache for %s: %w", resource, err)
		}
		resources[i].Storage = ch
		caches[resource] = ch
		s.runners = append(s.runners, ch.Start)
		s.readyChecks = append(s.readyChecks, healthz.ReadyCheck("watch-cache/"+resource, ch))
	}
	return nil
}

func openDefaultStore(path string, log *zap.Logger, tr value.Transformer, observe storage.RequestObserver) (*bbolt.Store, error) {
	st, err := bbolt.Open(path, bbolt.Options{Logger: log.Named("storage"), Transformer: tr, Observer: observe})
	if err != nil {
		return nil, fmt.Errorf("open default store %s: %w", path, err)
	}
	return st, nil
}

// encryption returns the transformer of the EncryptionConfiguration file
// (nil without one); with automatic reload, Run follows the file.
func (s *Server) encryption(c *Builder) (value.Transformer, error) {
	if c.EncryptionProviderConfig == "" {
		return nil, nil
	}
	if !c.EncryptionProviderConfigAutomaticReload {
		t, err := value.LoadEncryptionConfigurationFile(c.EncryptionProviderConfig)
		if err != nil {
			return nil, fmt.Errorf("--encryption-provider-config: %w", err)
		}
		return t, nil
	}
	log := c.Logger.Named("encryption")
	r, err := value.NewReloading(c.EncryptionProviderConfig, value.ReloadOptions{
		OnError: func(err error) {
			log.Error("encryption configuration not reloaded; the last good one stays", zap.Error(err))
		},
		OnReload: func() { log.Info("encryption configuration reloaded", zap.String("file", c.EncryptionProviderConfig)) },
	})
	if err != nil {
		return nil, fmt.Errorf("--encryption-provider-config: %w", err)
	}
	s.runners = append(s.runners, r.Run)
	return r, nil
}

// setupTLS prepares the serving certificate, from files (reloaded on change)
// or, when none is given, a self-signed CA and serving certificate in the data
// dir; advertised is the client CA offered in the handshake (nil for none).
func (s *Server) setupTLS(c *Builder, p *plan, advertised certs.PoolSource) (*tls.Config, error) {
	sc := p.serving
	if sc == nil {
		certDir := c.certDir()
		ca, err := certs.EnsureCA(certs.CAConfig{Dir: certDir, Name: c.Name + "-serving-ca"})
		if err != nil {
			return nil, err
		}
		if _, err := ca.EnsureServingCert(certs.ServingConfig{Dir: certDir, Hosts: c.ServingHosts}); err != nil {
			return nil, err
		}
		if s.standalone == nil {
			s.standalone = &standaloneMaterial{}
		}
		s.standalone.servingCA = ca
		reload := certs.ReloadConfig{OnError: func(err error) { s.log.Error("reloading the serving certificate", zap.Error(err)) }}
		if sc, err = certs.NewServingCert(filepath.Join(certDir, "serving.crt"), filepath.Join(certDir, "serving.key"), reload); err != nil {
			return nil, err
		}
	}
	s.runners = append(s.runners, sc.Start)
	var serving certs.CertificateSource = sc
	if len(c.SNICertKeys) > 0 {
		sni := &sniSource{fallback: sc}
		reload := certs.ReloadConfig{OnError: func(err error) { s.log.Error("reloading an SNI certificate", zap.Error(err)) }}
		for _, k := range c.SNICertKeys {
			cert, err := certs.NewServingCert(k.CertFile, k.KeyFile, reload)
			if err != nil {
				return nil, fmt.Errorf("--tls-sni-cert-key %s,%s: %w", k.CertFile, k.KeyFile, err)
			}
			s.runners = append(s.runners, cert.Start)
			names := k.Names
			if len(names) == 0 {
				names = certNames(cert)
			}
			sni.add(names, cert)
		}
		serving = sni
	}
	var protos []string
	if c.DisableHTTP2Serving {
		protos = []string{"http/1.1"}
	}
	return certs.ServerTLSConfig(certs.ServerTLSOptions{Serving: serving, ClientCA: advertised, MinVersion: c.TLSMinVersion,
		CipherSuites: c.TLSCipherSuites, CurvePreferences: c.TLSCurvePreferences, NextProtos: protos})
}

// writeKubeconfig writes <DataDir>/kubeconfig for the standalone admin.
func (s *Server) writeKubeconfig(c *Builder) error {
	m := s.standalone
	if m.servingCA == nil {
		// A serving certificate from files: kubectl verifies it against the
		// system roots, which the kubeconfig cannot name; skip writing one.
		s.log.Warn("serving certificate from files: no kubeconfig written")
		return nil
	}
	path := filepath.Join(c.DataDir, "kubeconfig")
	err := certs.WriteKubeconfig(path, certs.Kubeconfig{
		Server: s.URL(), CAPEM: m.servingCA.CertPEM,
		ClientCertPEM: m.admin.CertPEM, ClientKeyPEM: m.admin.KeyPEM,
		ClusterName: c.Name, UserName: c.Name + "-admin",
	})
	if err != nil {
		return err
	}
	s.kubeconfig = path
	return nil
}

// Run serves until ctx ends, then shuts down gracefully: /readyz fails
// first, the server keeps serving for ShutdownDelay, open watches end, new
// connections are refused, and in-flight requests get up to RequestTimeout to
// finish. The first error of a long-running part (a reloader, the store's
// compactor, the listener) stops the rest and is returned. A Server runs once.
func (s *Server) Run(ctx context.Context) error {
	defer s.closeAll()
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()

	var wg sync.WaitGroup
	errc := make(chan error, len(s.runners)+1)
	for _, run := range s.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- err
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.httpServer.ServeTLS(s.listener, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serve: %w", err)
		}
	}()
	s.log.Info("serving", zap.String("url", s.URL()), zap.String("kubeconfig", s.kubeconfig))

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.shutdownFlag.Set()
	if runErr == nil && s.shutdownDelay > 0 {
		t := time.NewTimer(s.shutdownDelay)
		select {
		case <-t.C:
		case runErr = <-errc:
			t.Stop()
		}
	}
	if s.drain.retryAfter {
		// Keep listening: new requests get 429 until those in flight are done.
		s.drain.draining.Store(true)
		waitFor(&s.drain.inflight, s.requestTimeout)
	}
	s.cancelWatch()
	if s.watchGrace > 0 {
		waitFor(&s.drain.longRunning, s.watchGrace)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.requestTimeout)
	defer cancel()
	if err := s.httpServer.Shutdown(shutdownCtx); err != nil {
		s.log.Warn("graceful shutdown incomplete", zap.Error(err))
		_ = s.httpServer.Close()
	}
	stop()
	wg.Wait()
	s.log.Info("stopped")
	return runErr
}

func (s *Server) closeAll() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil {
			s.log.Warn("closing", zap.Error(err))
		}
	}
	s.closers = nil
}
