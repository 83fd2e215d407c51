// This file holds the package's sentinel errors.

package certs

import "errors"

// Errors of the certs package; callers test with errors.Is.
var (
	// ErrNoDir is returned when a configuration names no directory to keep
	// material in.
	ErrNoDir = errors.New("certs: no directory configured")
	// ErrNoUser is returned when a client certificate is asked for without a
	// user name.
	ErrNoUser = errors.New("certs: no user name for the client certificate")
	// ErrNoCertificate is returned when a PEM file holds no CERTIFICATE block.
	ErrNoCertificate = errors.New("certs: no certificate found")
	// ErrNoPrivateKey is returned when a PEM file holds no private key block.
	ErrNoPrivateKey = errors.New("certs: no private key found")
	// ErrKeyMismatch is returned when a private key does not belong to the
	// certificate it is paired with.
	ErrKeyMismatch = errors.New("certs: private key does not match certificate")
	// ErrNotCA is returned when a certificate used to sign others is not a CA.
	ErrNotCA = errors.New("certs: certificate is not a CA")
	// ErrNoServing is returned by ServerTLSConfig when no serving certificate
	// source is configured.
	ErrNoServing = errors.New("certs: no serving certificate configured")
	// ErrInvalidKubeconfig is returned by WriteKubeconfig when a required field
	// (server, CA, client certificate or key) is missing.
	ErrInvalidKubeconfig = errors.New("certs: incomplete kubeconfig")
	// ErrHostMismatch is returned by HostCheck and VerifyServingHost when the
	// serving certificate is not valid for the name clients verify.
	ErrHostMismatch = errors.New("certs: serving certificate not valid for the host")
)
