// This file holds HostCheck: a readiness check that the serving certificate
// is valid for the name clients dial it by. kube-aggregator verifies the
// certificate of an APIService's backend for <service>.<namespace>.svc even
// when it dials an endpoint IP, so a certificate without that DNS name makes
// the APIService unavailable with an x509 error nobody expects.

package certs

import (
	"context"
	"fmt"
	"os"
)

// HostCheck reports whether the certificate in CertFile is valid for Host.
// The file is read on every call (readiness probes are seconds apart), so a
// rotated certificate is seen at once. Safe for concurrent use.
type HostCheck struct {
	// CertFile is the serving certificate (the leaf first). Required.
	CertFile string
	// Host is the name clients verify, e.g. "metrics-server.kube-system.svc".
	// Required.
	Host string
}

// Ready returns nil when the certificate's leaf is valid for Host, else an
// error that says which names it has and which one is missing.
func (h HostCheck) Ready(context.Context) error {
	b, err := os.ReadFile(h.CertFile)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	return VerifyServingHost(b, h.Host)
}

// VerifyServingHost checks that the first certificate of certPEM is valid
// for host (its DNS or IP SANs; the common name is not used, as Go's and
// kube-aggregator's verification ignore it).
func VerifyServingHost(certPEM []byte, host string) error {
	cs, err := ParseCerts(certPEM)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	if len(cs) == 0 {
		return fmt.Errorf("serving certificate: %w", ErrNoCertificate)
	}
	leaf := cs[0]
	if err := leaf.VerifyHostname(host); err != nil {
		return fmt.Errorf("%w: the serving certificate (DNS names %v, IPs %v) is not valid for %s, the name kube-aggregator verifies even when it dials an endpoint IP: reissue it with that DNS name",
			ErrHostMismatch, leaf.DNSNames, leaf.IPAddresses, host)
	}
	return nil
}
