// This file holds the net/http server's error log: its lines go to the
// server's logger, and TLS handshake failures are counted as kube-apiserver
// counts them (apiserver_tls_handshake_errors_total).

package metrics

import (
	"bytes"
	"log"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// HTTPErrorLog returns a *log.Logger for http.Server.ErrorLog that logs
// each line at Info on l (net/http's messages are about clients: bad
// requests, broken connections) and counts those of failed TLS handshakes in
// apiserver_tls_handshake_errors_total, registered on reg (nil for none).
func HTTPErrorLog(l *zap.Logger, reg prometheus.Registerer) (*log.Logger, error) {
	handshakeErrors, err := newHandshakeErrors(reg)
	if err != nil {
		return nil, err
	}
	return log.New(&httpLogWriter{log: l, handshakeErrors: handshakeErrors}, "", 0), nil
}

type httpLogWriter struct {
	log             *zap.Logger
	handshakeErrors prometheus.Counter
}

func (w *httpLogWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("http: TLS handshake error")) {
		w.handshakeErrors.Inc()
	}
	if ce := w.log.Check(zapcore.InfoLevel, string(bytes.TrimSpace(p))); ce != nil {
		ce.Write()
	}
	return len(p), nil
}

// newHandshakeErrors is apiserver_tls_handshake_errors_total, registered on
// reg when there is one.
func newHandshakeErrors(reg prometheus.Registerer) (prometheus.Counter, error) {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "apiserver_tls_handshake_errors_total",
		Help: "Number of requests dropped with 'TLS handshake error from' error",
	})
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}
