// This file holds ServerTLSConfig, the serving tls.Config of an annex server.

package certs

import (
	"crypto/tls"
	"crypto/x509"
	"sync"
)

// CertificateSource provides the serving certificate for each handshake.
// *ServingCert implements it. Implementations must be safe for concurrent use.
type CertificateSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// PoolSource provides a current CA pool. *CABundle implements it.
// Implementations must be safe for concurrent use, and callers must not
// modify the returned pool; nil means no CA.
type PoolSource interface {
	CertPool() *x509.CertPool
}

var (
	_ CertificateSource = (*ServingCert)(nil)
	_ PoolSource        = (*CABundle)(nil)
)

// SecureCipherSuites returns the TLS 1.2 cipher suites of the CIS Kubernetes
// Benchmark (1.2.29) that Go implements: ECDHE with AES-GCM or ChaCha20-Poly1305.
// TLS 1.3 suites are not configurable in Go and are all strong.
func SecureCipherSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// ServerTLSOptions configures ServerTLSConfig.
type ServerTLSOptions struct {
	// Serving provides the serving certificate. Required.
	Serving CertificateSource
	// ClientCA, when set, is advertised in the handshake as the CAs client
	// certificates should come from (its pool at the time of each handshake).
	// It verifies nothing: client certificates are requested, never required,
	// and verified by the x509 authenticator, so an unverifiable certificate
	// is a 401, never a handshake failure. nil advertises no CA.
	ClientCA PoolSource
	// MinVersion is the lowest TLS version accepted. Zero means TLS 1.2.
	MinVersion uint16
	// CipherSuites are the TLS 1.2 suites. nil means SecureCipherSuites().
	CipherSuites []uint16
	// NextProtos are the ALPN protocols. nil means h2 and http/1.1.
	NextProtos []string
	// CurvePreferences are the key exchange mechanisms. nil means Go's.
	CurvePreferences []tls.CurveID
}

// ServerTLSConfig returns the tls.Config an annex server listens with: TLS
// 1.2 or later, HTTP/2 offered, client certificates requested but verified
// later by authentication (tls.RequestClientCert).
func ServerTLSConfig(opts ServerTLSOptions) (*tls.Config, error) {
	if opts.Serving == nil {
		return nil, ErrNoServing
	}
	base := &tls.Config{
		MinVersion:       opts.MinVersion,
		CipherSuites:     opts.CipherSuites,
		NextProtos:       opts.NextProtos,
		CurvePreferences: opts.CurvePreferences,
		ClientAuth:       tls.RequestClientCert,
		GetCertificate:   opts.Serving.GetCertificate,
	}
	if base.MinVersion == 0 {
		base.MinVersion = tls.VersionTLS12
	}
	if base.CipherSuites == nil {
		base.CipherSuites = SecureCipherSuites()
	}
	if base.NextProtos == nil {
		base.NextProtos = []string{"h2", "http/1.1"}
	}
	if opts.ClientCA == nil {
		return base, nil
	}
	adv := &advertiser{base: base.Clone(), source: opts.ClientCA}
	base.GetConfigForClient = adv.configForClient
	return base, nil
}

// advertiser hands each handshake a config whose ClientCAs is the current
// client CA pool, cloning the base config only when the pool changed.
type advertiser struct {
	base   *tls.Config
	source PoolSource

	// mu guards pool and cfg, the config made for pool.
	mu   sync.Mutex
	pool *x509.CertPool
	cfg  *tls.Config
}

func (a *advertiser) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	pool := a.source.CertPool()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg == nil || a.pool != pool {
		cfg := a.base.Clone()
		cfg.ClientCAs = pool
		a.pool, a.cfg = pool, cfg
	}
	return a.cfg, nil
}
