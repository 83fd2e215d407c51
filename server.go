// This file holds the Server Build returns and Run with its graceful
// shutdown.

package annex

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/otlp"
)

// Server is a built server. Run serves it.
type Server struct {
	name string
	log  *zap.Logger
	// tracer exports spans (--tracing-config-file); nil when tracing is off.
	tracer         *otlp.Tracer
	requestTimeout time.Duration
	shutdownDelay  time.Duration
	// drain counts requests and answers 429 while draining (the
	// shutdown-drain stage); watchGrace is how long watches get to end.
	drain      *filters.ShutdownDrain
	retryAfter bool
	watchGrace time.Duration

	listener   net.Listener
	httpServer *http.Server
	// shutdownFlag fails /readyz once shutdown starts.
	shutdownFlag *healthz.Flag
	// watchCtx ends every open watch when cancelled.
	watchCtx    context.Context
	cancelWatch context.CancelFunc

	// servingCA is the generated serving CA and admin the generated admin
	// client certificate of standalone mode (nil otherwise), in the
	// kubeconfig written at kubeconfig.
	servingCA  *certs.CA
	admin      *certs.KeyPair
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

// Handler is the server's full handler chain (every stage of stages.go
// around the mux), for serving it some other way (tests, a custom
// listener). Run serves it on the built listener.
func (s *Server) Handler() http.Handler { return s.httpServer.Handler }

// serve serves on the built listener, each connection's TLS handshake on a
// goroutine of its own (handshake.go).
func (s *Server) serve() error {
	hs := s.httpServer
	cfg := hs.TLSConfig.Clone()
	if len(cfg.NextProtos) == 0 { // ServeTLS's default: HTTP/2 first
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	// net/http configures HTTP/2 for Serve when its TLSConfig names h2.
	hs.TLSConfig = cfg
	timeout := hs.ReadHeaderTimeout
	return hs.Serve(newHandshakeListener(s.listener, cfg, timeout, hs.ErrorLog))
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
		if err := s.serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
	if s.retryAfter {
		// Keep listening: new requests get 429 until those in flight are done.
		s.drain.StartDraining()
		waitFor(s.drain.WaitInFlight, s.requestTimeout)
	}
	s.cancelWatch()
	if s.watchGrace > 0 {
		waitFor(s.drain.WaitLongRunning, s.watchGrace)
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

// waitFor calls wait with a context that ends after d.
func waitFor(wait func(context.Context), d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	wait(ctx)
}
