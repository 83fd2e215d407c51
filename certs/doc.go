// Package certs makes and serves the TLS material of an annex server: a
// self-signed CA with serving and client certificates for standalone mode, a
// kubeconfig for kubectl, reloading certificate and CA bundle files, and the
// serving tls.Config.
//
// # Standalone material
//
// A standalone server keeps its material in a data directory. [EnsureCA]
// creates an ECDSA P-256 CA on first start and reuses it on later starts;
// [CA.EnsureServingCert] and [CA.EnsureClientCert] do the same for the serving
// certificate (valid for localhost, 127.0.0.1, ::1 and the configured hosts)
// and a client certificate (user = CN, groups = O). A certificate is replaced
// when it is missing, unreadable, not signed by the CA, no longer matches
// (other hosts, user or groups), or expires within RenewBefore. Keys are
// written with mode 0600, every file atomically.
//
//	ca, err := certs.EnsureCA(certs.CAConfig{Dir: dir})
//	serving, err := ca.EnsureServingCert(certs.ServingConfig{Dir: dir, Hosts: []string{"annex.example"}})
//	admin, err := ca.EnsureClientCert(certs.ClientConfig{Dir: dir, User: "annex-admin", Groups: []string{"system:masters"}})
//	err = certs.WriteKubeconfig(filepath.Join(dir, "kubeconfig"), certs.Kubeconfig{
//		Server: "https://127.0.0.1:8443", CAPEM: ca.CertPEM,
//		ClientCertPEM: admin.CertPEM, ClientKeyPEM: admin.KeyPEM,
//	})
//
// # Reloading
//
// [ServingCert] and [CABundle] read files and re-read them when their
// contents change, looking at most once per [ReloadConfig].Interval: on use
// (a handshake, an authentication) and, when their Start(ctx) runs, on a
// timer. A file that fails to parse keeps the old material in use; the error
// goes to OnError once and stays readable through Err until a good file
// arrives. Kubernetes watches such files with fsnotify plus a one-minute
// poll; a few-second poll of files this small costs less than fsnotify's
// edge cases (editors that rename, Kubernetes secret volumes that swap
// symlinks).
//
// # Serving
//
// [ServerTLSConfig] requires TLS 1.2 or later with the CIS cipher list, offers
// h2 and http/1.1, and requests (never requires) client certificates,
// advertising the client CA when one is configured. Verification of client
// certificates is the job of package authn's x509 authenticator: an
// unverifiable certificate must end as a 401, as in Kubernetes, not as a
// failed handshake.
//
// [HostCheck] is a readiness check that the serving certificate is valid for
// the name clients verify: behind kube-aggregator, <service>.<namespace>.svc,
// which the aggregator checks even when it dials an endpoint IP.
//
// # Caveats
//
// The material is for a server that has no cluster to get certificates from.
// Behind kube-aggregator, use the certificates the cluster issues and give
// their files to [NewServingCert] and [NewCABundle].
package certs
