// This file is Build's second phase, on a declaration validate accepted: a
// list of named steps, each making one part of the server (data directory,
// tracing, stores, watch caches, front door, TLS, listener, debug socket,
// kubeconfig, handler, HTTP server) from the Builder and what the earlier
// steps made. A failed step undoes what the earlier ones opened.

package annex

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/internal/profiling"
	"github.com/annexapi/annex/metrics"
	"github.com/annexapi/annex/otlp"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/postgres"
	"github.com/annexapi/annex/storage/value"
	"github.com/annexapi/annex/watch"
)

// assembly is the state of Build's second phase: the declaration, what the
// first phase loaded, the server being made, and what each step hands on.
type assembly struct {
	c *Builder
	p *plan
	s *Server
	// storageMetrics are etcd_request_duration_seconds and the DB size.
	storageMetrics *metrics.Storage
	// resources are c.Resources with their stores filled in (default store,
	// watch caches).
	resources []rest.Resource
	fd        *frontDoor
	tls       *tls.Config
	handler   http.Handler
	// scanLimit is the one limit of cores for the long scans of all the
	// server's watch caches (scans).
	scanLimit *watch.Scans
}

// scans returns the server's limit of cores for long scans of its watch
// caches, made on first use: one for all of them, so that a flood of
// selector LISTs over several resources still leaves a core free.
func (a *assembly) scans() *watch.Scans {
	if a.scanLimit == nil {
		a.scanLimit = watch.NewScans(0)
	}
	return a.scanLimit
}

// assemble runs the steps of the second phase in order.
func (c *Builder) assemble(p *plan) (*Server, error) {
	s := &Server{name: c.Name, log: c.Observability.Logger, requestTimeout: c.Limits.RequestTimeout,
		shutdownDelay: c.Shutdown.Delay, watchGrace: c.Shutdown.WatchTerminationGracePeriod, retryAfter: c.Shutdown.SendRetryAfter,
		drain: filters.NewShutdownDrain(filters.ShutdownDrainConfig{SendRetryAfter: c.Shutdown.SendRetryAfter, GoAwayChance: c.Shutdown.GoAwayChance})}
	reg := &trackingRegisterer{Registerer: c.Observability.Registerer}
	c.Observability.Registerer = reg
	a := &assembly{c: c, p: p, s: s}
	for _, step := range []func() error{
		a.makeDataDir, a.startTracing, a.openStores, a.addWatchCaches, a.feedComputed, a.buildFrontDoor,
		a.setupTLS, a.register, a.listen, a.serveDebugSocket, a.writeKubeconfig, a.buildHandler, a.makeHTTPServer,
	} {
		if err := step(); err != nil {
			s.closeAll()
			reg.unregisterAll()
			return nil, err
		}
	}
	return s, nil
}

// makeDataDir makes DataDir when anything goes there.
func (a *assembly) makeDataDir() error {
	if !a.c.UsesDataDir() {
		return nil
	}
	if err := os.MkdirAll(a.c.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}

// startTracing starts the exporter of the tracing configuration, if any.
func (a *assembly) startTracing() error {
	if a.p.tracing == nil {
		return nil
	}
	t, err := otlp.New(*a.p.tracing, a.c.Name, a.c.Observability.TraceExporter)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	a.s.tracer = t
	a.s.closers = append(a.s.closers, t.Shutdown)
	return nil
}

// openStores registers the storage metrics, opens the default store when a
// resource uses it, and has Run start every store's long-running part
// (compaction) and poll the sizes of those that know them.
func (a *assembly) openStores() error {
	c, s := a.c, a.s
	var err error
	if a.storageMetrics, err = metrics.NewStorage(c.Observability.Registerer); err != nil {
		return err
	}
	if c.Storage.EncryptionProviderConfig != "" && c.Storage.Store == nil && !c.usesDefaultStore() {
		return errors.New("Storage.EncryptionProviderConfig: has no effect: no resource uses the store the Builder opens")
	}
	if c.Storage.Store == nil && c.usesDefaultStore() {
		st, err := a.openDefaultStore()
		if err != nil {
			return err
		}
		c.Storage.Store = st
	}
	if c.Storage.DBMetricPollInterval >= 0 {
		var sized []storage.SizeReporter
		seen := map[storage.Interface]bool{}
		for _, st := range c.stores() {
			if sr, ok := st.(storage.SizeReporter); ok && !seen[st] {
				seen[st] = true
				sized = append(sized, sr)
			}
		}
		interval := c.Storage.DBMetricPollInterval
		if interval == 0 {
			interval = 30 * time.Second
		}
		if len(sized) > 0 {
			s.runners = append(s.runners, a.storageMetrics.PollDBSize(sized, interval))
		}
	}
	started := map[storage.Interface]bool{}
	for _, st := range c.stores() {
		if r, ok := st.(starter); ok && !started[st] {
			started[st] = true
			s.runners = append(s.runners, r.Start)
		}
	}
	a.resources = make([]rest.Resource, len(c.Resources))
	for i, r := range c.Resources {
		if defaultStore(r) {
			r.Storage = c.Storage.Store
		}
		a.resources[i] = r
	}
	return nil
}

// openDefaultStore opens Storage.Open's store, or the bbolt file in
// DataDir, with the encryption of EncryptionProviderConfig and the
// observers of storage metrics and tracing; Run closes it.
func (a *assembly) openDefaultStore() (storage.Interface, error) {
	c, s := a.c, a.s
	tr, err := a.encryption()
	if err != nil {
		return nil, err
	}
	observers := []storage.RequestObserver{a.storageMetrics.Observer()}
	if s.tracer != nil {
		observers = append(observers, s.tracer.Observe)
	}
	opts := StoreOptions{Logger: c.Observability.Logger.Named("storage"), Transformer: tr,
		Observer: func(ctx context.Context, op, key string, start time.Time, took time.Duration) {
			for _, o := range observers {
				o(ctx, op, key, start, took)
			}
		}}
	var st storage.Interface
	if c.Storage.Open != nil {
		if st, err = c.Storage.Open(opts); err != nil {
			return nil, fmt.Errorf("open default store: %w", err)
		}
	} else if c.Storage.Postgres.Enabled() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if st, err = c.Storage.Postgres.Open(ctx, postgres.Options{Logger: opts.Logger, Transformer: tr, Observer: opts.Observer}); err != nil {
			return nil, fmt.Errorf("open default store %s: %w", c.Storage.Postgres.Redacted(), err)
		}
	} else {
		path := filepath.Join(c.DataDir, "storage.db")
		if st, err = bbolt.Open(path, bbolt.Options{Logger: opts.Logger, Transformer: tr, Observer: opts.Observer}); err != nil {
			return nil, fmt.Errorf("open default store %s: %w", path, err)
		}
	}
	if cl, ok := st.(interface{ Close() error }); ok {
		s.closers = append(s.closers, cl.Close)
	}
	return st, nil
}

// encryption returns the transformer of the EncryptionConfiguration file
// (nil without one); with automatic reload, Run follows the file.
func (a *assembly) encryption() (value.Transformer, error) {
	file := a.c.Storage.EncryptionProviderConfig
	if file == "" {
		return nil, nil
	}
	if !a.c.Storage.EncryptionProviderConfigAutomaticReload {
		t, err := value.LoadEncryptionConfigurationFile(file)
		if err != nil {
			return nil, fmt.Errorf("--encryption-provider-config: %w", err)
		}
		return t, nil
	}
	log := a.c.Observability.Logger.Named("encryption")
	r, err := value.NewReloading(file, value.ReloadOptions{
		OnError: func(err error) {
			log.Error("encryption configuration not reloaded; the last good one stays", zap.Error(err))
		},
		OnReload: func() { log.Info("encryption configuration reloaded", zap.String("file", file)) },
	})
	if err != nil {
		return nil, fmt.Errorf("--encryption-provider-config: %w", err)
	}
	a.s.runners = append(a.s.runners, r.Run)
	return r, nil
}

// addWatchCaches puts a watch cache in front of every resource's storage:
// one upstream watch per resource, reads and watches served from memory. Each
// cache is started by Run and reported in /readyz until its initial list is in.
func (a *assembly) addWatchCaches() error {
	if a.c.Storage.DisableWatchCache {
		return nil
	}
	s := a.s
	// The versions of a resource share its store, and so its cache.
	caches := map[string]*watch.Cacher{}
	scans := a.scans()
	for i, r := range a.resources {
		if r.Storage == nil { // computed on read: nothing to cache
			continue
		}
		resource := r.Plural + "." + r.Group
		if ch, ok := caches[resource]; ok {
			a.resources[i].Storage = ch
			continue
		}
		ch, err := watch.New(r.Storage, watch.Config{
			Prefix:     storage.ResourcePrefix(r.Group, r.Plural, ""),
			Resource:   resource,
			RingSize:   a.c.Storage.WatchCacheSizes[resource],
			Scans:      scans,
			Registerer: a.c.Observability.Registerer,
			Logger:     s.log.Named("watch-cache").With(zap.String("resource", resource)),
		})
		if err != nil {
			return fmt.Errorf("watch cache for %s: %w", resource, err)
		}
		a.resources[i].Storage = ch
		caches[resource] = ch
		s.runners = append(s.runners, ch.Start)
		s.readyChecks = append(s.readyChecks, healthz.ReadyCheck("watch-cache/"+resource, ch))
	}
	return nil
}

// feedComputed makes the computed resources with Events watchable: a
// watch.OnDemand runs their Events into a feed, and a watch cache over it
// serves their watches, only while someone watches. Run starts it.
func (a *assembly) feedComputed() error {
	for i, r := range a.resources {
		if r.Events == nil || r.WatchStorage != nil {
			continue
		}
		resource := r.Plural + "." + r.Group
		events := r.Events
		od, err := watch.NewOnDemand(watch.OnDemandConfig{Group: r.Group, Resource: r.Plural,
			Source: func(ctx context.Context, feed *watch.Feed) error { return events.Run(ctx, feed) },
			Cache: watch.Config{Resource: resource, Registerer: a.c.Observability.Registerer, Scans: a.scans(),
				Logger: a.s.log.Named("watch-cache").With(zap.String("resource", resource))},
			Linger: a.c.Storage.ComputedWatchLinger})
		if err != nil {
			return fmt.Errorf("watch cache for %s: %w", resource, err)
		}
		a.resources[i].WatchStorage = od
		a.s.runners = append(a.s.runners, od.Start)
	}
	return nil
}

// buildFrontDoor sets up authentication and authorization (frontdoor.go).
func (a *assembly) buildFrontDoor() error {
	fd, err := a.s.buildFrontDoor(a.c, a.p)
	a.fd = fd
	return err
}

// setupTLS prepares the serving certificate, from files (reloaded on change)
// or, when none is given, a self-signed CA and serving certificate in the
// certificate directory; the client CAs of the front door are offered in
// the handshake.
func (a *assembly) setupTLS() error {
	c, s := a.c, a.s
	sc := a.p.serving
	if sc == nil {
		certDir := c.certDir()
		ca, err := certs.EnsureCA(certs.CAConfig{Dir: certDir, Name: c.Name + "-serving-ca"})
		if err != nil {
			return err
		}
		if _, err := ca.EnsureServingCert(certs.ServingConfig{Dir: certDir, Hosts: append(slices.Clone(c.Serving.Hosts), a.serviceHosts()...)}); err != nil {
			return err
		}
		s.servingCA = ca
		reload := certs.ReloadConfig{OnError: func(err error) { s.log.Error("reloading the serving certificate", zap.Error(err)) }}
		if sc, err = certs.NewServingCert(filepath.Join(certDir, "serving.crt"), filepath.Join(certDir, "serving.key"), reload); err != nil {
			return err
		}
	}
	s.runners = append(s.runners, sc.Start)
	var serving certs.CertificateSource = sc
	if len(c.Serving.SNICertKeys) > 0 {
		sni := &certs.SNISource{Fallback: sc}
		reload := certs.ReloadConfig{OnError: func(err error) { s.log.Error("reloading an SNI certificate", zap.Error(err)) }}
		for _, k := range c.Serving.SNICertKeys {
			cert, err := certs.NewServingCert(k.CertFile, k.KeyFile, reload)
			if err != nil {
				return fmt.Errorf("--tls-sni-cert-key %s,%s: %w", k.CertFile, k.KeyFile, err)
			}
			s.runners = append(s.runners, cert.Start)
			sni.Add(k.Names, cert)
		}
		serving = sni
	}
	var protos []string
	if c.Serving.DisableHTTP2 {
		protos = []string{"http/1.1"}
	}
	var err error
	a.tls, err = certs.ServerTLSConfig(certs.ServerTLSOptions{Serving: serving, ClientCA: a.fd.advertised, MinVersion: c.Serving.TLSMinVersion,
		CipherSuites: c.Serving.TLSCipherSuites, CurvePreferences: c.Serving.TLSCurvePreferences, NextProtos: protos})
	return err
}

// listen binds the socket (or takes the Listener given).
func (a *assembly) listen() error {
	ln := a.c.Serving.Listener
	if ln == nil {
		sv := a.c.Serving
		lc := net.ListenConfig{Control: socketOptions(sv.PermitPortSharing, sv.PermitAddressSharing)}
		var err error
		ln, err = lc.Listen(context.Background(), "tcp", net.JoinHostPort(sv.BindAddress, strconv.Itoa(sv.SecurePort)))
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	a.s.listener = ln
	a.s.closers = append(a.s.closers, func() error { _ = ln.Close(); return nil })
	return nil
}

// serveDebugSocket serves Go's profiles on Observability.DebugSocketPath.
func (a *assembly) serveDebugSocket() error {
	path := a.c.Observability.DebugSocketPath
	if path == "" {
		return nil
	}
	dl, ds, err := profiling.Socket(path)
	if err != nil {
		return fmt.Errorf("--debug-socket-path: %w", err)
	}
	a.s.closers = append(a.s.closers, func() error { _ = dl.Close(); return nil })
	a.s.runners = append(a.s.runners, func(ctx context.Context) error {
		go func() { <-ctx.Done(); _ = ds.Close() }()
		if err := ds.Serve(dl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return nil
}

// writeKubeconfig writes <DataDir>/kubeconfig for the standalone admin.
func (a *assembly) writeKubeconfig() error {
	s := a.s
	if s.admin == nil {
		return nil // not standalone: no admin certificate
	}
	if s.servingCA == nil {
		// A serving certificate from files: kubectl verifies it against the
		// system roots, which the kubeconfig cannot name; skip writing one.
		s.log.Warn("serving certificate from files: no kubeconfig written")
		return nil
	}
	path := filepath.Join(a.c.DataDir, "kubeconfig")
	err := certs.WriteKubeconfig(path, certs.Kubeconfig{
		Server: s.URL(), CAPEM: s.servingCA.CertPEM,
		ClientCertPEM: s.admin.CertPEM, ClientKeyPEM: s.admin.KeyPEM,
		ClusterName: a.c.Name, UserName: a.c.Name + "-admin",
	})
	if err != nil { // a full disk: serve without it rather than not at all
		s.log.Warn("kubeconfig not written", zap.String("path", path), zap.Error(err))
		return nil
	}
	s.kubeconfig = path
	return nil
}

// buildHandler fills the stage table and chains it around the mux
// (handler.go).
func (a *assembly) buildHandler() error {
	h, err := a.s.buildHandler(a.c, a.p, a.resources, a.fd)
	a.handler = h
	return err
}

// makeHTTPServer is the net/http server of the chain.
func (a *assembly) makeHTTPServer() error {
	errorLog, err := metrics.HTTPErrorLog(a.s.log.Named("http"), a.c.Observability.Registerer)
	if err != nil {
		return err
	}
	a.s.httpServer = &http.Server{
		Handler:           a.handler,
		TLSConfig:         a.tls,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
		HTTP2:             http2Config(a.c.Limits.HTTP2MaxStreamsPerConnection),
		ErrorLog:          errorLog,
	}
	return nil
}
