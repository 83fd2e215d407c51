package etcd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestAddFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want Config
	}{
		{name: "defaults", want: Config{Prefix: "/annex", CompactionInterval: 5 * time.Minute}},
		{name: "servers_and_tls", args: []string{"--etcd-servers=https://a:2379, https://b:2379", "--etcd-cafile=ca", "--etcd-certfile=c", "--etcd-keyfile=k", "--etcd-prefix=/registry"},
			want: Config{Servers: []string{"https://a:2379", "https://b:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k", Prefix: "/registry", CompactionInterval: 5 * time.Minute}},
		{name: "compaction_zero_disables", args: []string{"--etcd-compaction-interval=0"}, want: Config{Prefix: "/annex", CompactionInterval: -1}},
		{name: "compaction_interval", args: []string{"--etcd-compaction-interval=1m"}, want: Config{Prefix: "/annex", CompactionInterval: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			c.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Servers, tt.want.Servers) || c.CAFile != tt.want.CAFile || c.CertFile != tt.want.CertFile ||
				c.KeyFile != tt.want.KeyFile || c.Prefix != tt.want.Prefix || c.CompactionInterval != tt.want.CompactionInterval {
				t.Errorf("config = %+v, want %+v", c, tt.want)
			}
			if c.Enabled() != (len(tt.want.Servers) > 0) {
				t.Errorf("Enabled = %v", c.Enabled())
			}
		})
	}
}

func TestOptionsPrefix(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "/annex"},
		{"registry", "/registry"},
		{"/registry/", "/registry"},
		{"/a/b", "/a/b"},
		{"/", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := (Options{Prefix: tt.in}).withDefaults().Prefix; got != tt.want {
				t.Errorf("prefix %q -> %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// writeCert writes a self-signed certificate and its key as PEM files.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcd-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestConfigTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	notPEM := filepath.Join(dir, "junk")
	if err := os.WriteFile(notPEM, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		c         Config
		wantErr   bool
		wantNil   bool
		wantCerts int
	}{
		{name: "no_files", wantNil: true},
		{name: "ca_only", c: Config{CAFile: cert}},
		{name: "ca_and_client_cert", c: Config{CAFile: cert, CertFile: cert, KeyFile: key}, wantCerts: 1},
		{name: "cert_without_key", c: Config{CertFile: cert}, wantErr: true},
		{name: "missing_ca", c: Config{CAFile: filepath.Join(dir, "nope")}, wantErr: true},
		{name: "ca_not_pem", c: Config{CAFile: notPEM}, wantErr: true},
		{name: "key_mismatch_file", c: Config{CertFile: cert, KeyFile: notPEM}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.c.TLS()
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if (cfg == nil) != tt.wantNil {
				t.Fatalf("config nil = %v, want %v", cfg == nil, tt.wantNil)
			}
			if cfg != nil && len(cfg.Certificates) != tt.wantCerts {
				t.Errorf("%d client certificates, want %d", len(cfg.Certificates), tt.wantCerts)
			}
			if cfg != nil && tt.c.CAFile != "" && cfg.RootCAs == nil {
				t.Errorf("no root CAs from %s", tt.c.CAFile)
			}
		})
	}
}

func TestOpenWithoutServers(t *testing.T) {
	if _, err := (Config{}).Open(Options{}); err == nil {
		t.Error("Open with no servers succeeded")
	}
}
