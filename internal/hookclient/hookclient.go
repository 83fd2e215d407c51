// Package hookclient holds what the callers of webhooks share, admission
// webhooks and conversion webhooks alike: the check of a webhook's URL, the
// default address of a service, and the HTTPS client kube-apiserver uses
// for them (its caBundle as roots, never following a redirect).
package hookclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ParseURL checks a webhook's clientConfig.url: https, without user, query
// or fragment.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.RawQuery != "" {
		return nil, errors.New("must be an https URL without user, query or fragment")
	}
	return u, nil
}

// ServiceURL is a service's address as kube-apiserver's default resolver
// gives it: https://<name>.<namespace>.svc:<port>.
func ServiceURL(name, namespace string, port int32) *url.URL {
	return &url.URL{Scheme: "https", Host: fmt.Sprintf("%s.%s.svc:%d", name, namespace, port)}
}

// TLSConfig is a webhook's client TLS: the caBundle as roots (the system's
// when empty) and, for a service, the name its certificate must carry.
func TLSConfig(caBundle []byte, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("caBundle: no PEM certificates")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Client is the HTTP client of a webhook over cfg: HTTP/2 when offered,
// idle connections kept, and no redirect followed (CVE-2022-3172).
func Client(cfg *tls.Config) *http.Client {
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the server responded with a redirect, which is not followed")
		},
	}
}
