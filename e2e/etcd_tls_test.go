package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/etcd"
)

// TestEtcdTLS runs the store against an etcd that serves https and
// requires client certificates, configured as --etcd-cafile,
// --etcd-certfile and --etcd-keyfile would.
func TestEtcdTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA(certs.CAConfig{Name: "etcd-ca"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.crt", ca.CertPEM)
	srv, err := ca.Issue(certs.Request{CommonName: "etcd", DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ca.Issue(certs.Request{CommonName: "annex", ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := write("client.crt", cl.CertPEM), write("client.key", cl.KeyPEM)
	e := binaries.StartEtcdWith(t, binaries.EtcdOptions{
		CertFile: write("server.crt", srv.CertPEM), KeyFile: write("server.key", srv.KeyPEM), ClientCAFile: caFile,
		HealthTLS: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cl.TLSCertificate()}},
	})

	tests := []struct {
		name   string
		cfg    etcd.Config
		wantOK bool
	}{
		{name: "ca_and_client_cert", cfg: etcd.Config{CAFile: caFile, CertFile: clientCert, KeyFile: clientKey}, wantOK: true},
		{name: "no_client_cert", cfg: etcd.Config{CAFile: caFile}},
		{name: "no_ca", cfg: etcd.Config{CertFile: clientCert, KeyFile: clientKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Servers = []string{e.ClientURL}
			tt.cfg.Prefix = "/tls-" + tt.name
			tt.cfg.DialTimeout = 3 * time.Second
			s, err := tt.cfg.Open(etcd.Options{CompactionInterval: -1})
			if err != nil {
				if tt.wantOK {
					t.Fatal(err)
				}
				return // refused at dial: as good as at the first request
			}
			defer s.Close()
			timeout := 3 * time.Second
			if !tt.wantOK {
				timeout = time.Second // long enough for a handshake on loopback
			}
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			o, err := s.Create(ctx, "/g/r/ns/a", []byte(`{"metadata":{"name":"a"}}`))
			if !tt.wantOK {
				if err == nil {
					t.Fatal("create over TLS without the right credentials succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "/g/r/ns/a", storage.GetOptions{})
			if err != nil || got.ResourceVersion != o.ResourceVersion {
				t.Errorf("Get = %v, %v", got, err)
			}
			if err := s.Ready(ctx); err != nil {
				t.Errorf("Ready: %v", err)
			}
		})
	}
}
