package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestEnsure_reuses_material_across_restarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func() (*CA, *KeyPair, *KeyPair) {
		t.Helper()
		ca, err := EnsureCA(CAConfig{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := ca.EnsureServingCert(ServingConfig{Dir: dir, Hosts: []string{"annex.example", "10.0.0.7"}})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := ca.EnsureClientCert(ClientConfig{Dir: dir, User: "annex-admin", Groups: []string{"system:masters"}})
		if err != nil {
			t.Fatal(err)
		}
		return ca, srv, cl
	}
	ca1, srv1, cl1 := start()
	ca2, srv2, cl2 := start()
	if ca1.Cert.SerialNumber.Cmp(ca2.Cert.SerialNumber) != 0 {
		t.Error("CA was regenerated on the second start")
	}
	if srv1.Cert.SerialNumber.Cmp(srv2.Cert.SerialNumber) != 0 {
		t.Error("serving certificate was regenerated on the second start")
	}
	if cl1.Cert.SerialNumber.Cmp(cl2.Cert.SerialNumber) != 0 {
		t.Error("client certificate was regenerated on the second start")
	}
	if !bytes.Equal(srv1.KeyPEM, srv2.KeyPEM) || !bytes.Equal(ca1.CertPEM, ca2.CertPEM) {
		t.Error("reloaded PEM differs from the written PEM")
	}

	wantFiles := map[string]os.FileMode{
		"annex-ca.crt": certMode, "annex-ca.key": keyMode,
		"serving.crt": certMode, "serving.key": keyMode,
		"admin.crt": certMode, "admin.key": keyMode,
	}
	for name, mode := range wantFiles {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}

	// The serving certificate verifies for every default and configured host.
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "annex.example", "10.0.0.7"} {
		_, err := srv2.Cert.Verify(x509.VerifyOptions{DNSName: h, Roots: ca2.Pool()})
		if err != nil {
			t.Errorf("serving certificate for %s: %v", h, err)
		}
	}
	if _, err := srv2.Cert.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: ca2.Pool()}); err == nil {
		t.Error("serving certificate verified for a host it was not issued for")
	}
	// The client certificate verifies for client auth and carries user and groups.
	if _, err := cl2.Cert.Verify(x509.VerifyOptions{Roots: ca2.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if cl2.Cert.Subject.CommonName != "annex-admin" || !slices.Equal(cl2.Cert.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client subject = %v", cl2.Cert.Subject)
	}
}

func TestEnsureServingCert_regenerates(t *testing.T) {
	t.Parallel()
	later := func(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }
	tests := []struct {
		name   string
		second ServingConfig
		mutate func(t *testing.T, dir string)
		newCA  bool
		want   bool // regenerated
	}{
		{name: "same_hosts", second: ServingConfig{Hosts: []string{"a.example", "b.example"}}, want: false},
		{name: "same_hosts_other_order", second: ServingConfig{Hosts: []string{"b.example", "a.example", "localhost"}}, want: false},
		{name: "host_added", second: ServingConfig{Hosts: []string{"a.example", "b.example", "c.example"}}, want: true},
		{name: "host_removed", second: ServingConfig{Hosts: []string{"a.example"}}, want: true},
		{name: "ip_added", second: ServingConfig{Hosts: []string{"a.example", "b.example", "192.0.2.1"}}, want: true},
		{name: "expires_within_renew_before", second: ServingConfig{Hosts: []string{"a.example", "b.example"}, Now: later(340 * 24 * time.Hour)}, want: true},
		{name: "not_yet_expiring", second: ServingConfig{Hosts: []string{"a.example", "b.example"}, Now: later(300 * 24 * time.Hour)}, want: false},
		{name: "other_ca", second: ServingConfig{Hosts: []string{"a.example", "b.example"}}, newCA: true, want: true},
		{name: "corrupt_cert_file", second: ServingConfig{Hosts: []string{"a.example", "b.example"}, Name: "serving"},
			mutate: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, "serving.crt"), []byte("garbage"), 0o644); err != nil {
					t.Fatal(err)
				}
			}, want: true},
		{name: "key_of_another_pair", second: ServingConfig{Hosts: []string{"a.example", "b.example"}},
			mutate: func(t *testing.T, dir string) {
				ca, err := NewCA(CAConfig{})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "serving.key"), ca.KeyPEM, 0o600); err != nil {
					t.Fatal(err)
				}
			}, want: true},
		{name: "missing_key", second: ServingConfig{Hosts: []string{"a.example", "b.example"}},
			mutate: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "serving.key")); err != nil {
					t.Fatal(err)
				}
			}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ca, err := EnsureCA(CAConfig{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			first, err := ca.EnsureServingCert(ServingConfig{Dir: dir, Hosts: []string{"a.example", "b.example"}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				tt.mutate(t, dir)
			}
			if tt.newCA {
				if ca, err = NewCA(CAConfig{}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := tt.second
			cfg.Dir = dir
			second, err := ca.EnsureServingCert(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := first.Cert.SerialNumber.Cmp(second.Cert.SerialNumber) != 0
			if got != tt.want {
				t.Fatalf("regenerated = %v, want %v", got, tt.want)
			}
			// Whatever happened, the files now hold what was returned, and it
			// is signed by the CA in use.
			onDisk, err := os.ReadFile(filepath.Join(dir, "serving.crt"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(onDisk, second.CertPEM) {
				t.Error("file differs from the returned certificate")
			}
			if err := second.Cert.CheckSignatureFrom(ca.Cert); err != nil {
				t.Errorf("not signed by the CA: %v", err)
			}
		})
	}
}

func TestEnsureClientCert_regenerates_on_other_identity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		user   string
		groups []string
		want   bool
	}{
		{name: "same", user: "alice", groups: []string{"g1", "g2"}, want: false},
		{name: "other_user", user: "bob", groups: []string{"g1", "g2"}, want: true},
		{name: "other_groups", user: "alice", groups: []string{"g1"}, want: true},
		{name: "no_groups", user: "alice", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ca, err := EnsureCA(CAConfig{Dir: dir, Name: "client-ca"})
			if err != nil {
				t.Fatal(err)
			}
			first, err := ca.EnsureClientCert(ClientConfig{Dir: dir, User: "alice", Groups: []string{"g1", "g2"}})
			if err != nil {
				t.Fatal(err)
			}
			second, err := ca.EnsureClientCert(ClientConfig{Dir: dir, User: tt.user, Groups: tt.groups})
			if err != nil {
				t.Fatal(err)
			}
			if got := first.Cert.SerialNumber.Cmp(second.Cert.SerialNumber) != 0; got != tt.want {
				t.Fatalf("regenerated = %v, want %v", got, tt.want)
			}
			if second.Cert.Subject.CommonName != tt.user || !slices.Equal(second.Cert.Subject.Organization, tt.groups) {
				t.Errorf("subject = %v", second.Cert.Subject)
			}
		})
	}
}

func TestEnsureCA(t *testing.T) {
	t.Parallel()
	t.Run("expiring_ca_is_replaced", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		a, err := EnsureCA(CAConfig{Dir: dir, Validity: 40 * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		b, err := EnsureCA(CAConfig{Dir: dir, Now: func() time.Time { return time.Now().Add(15 * 24 * time.Hour) }})
		if err != nil {
			t.Fatal(err)
		}
		if a.Cert.SerialNumber.Cmp(b.Cert.SerialNumber) == 0 {
			t.Error("CA expiring within RenewBefore was reused")
		}
	})
	t.Run("key_mode_is_repaired", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if _, err := EnsureCA(CAConfig{Dir: dir}); err != nil {
			t.Fatal(err)
		}
		key := filepath.Join(dir, "annex-ca.key")
		if err := os.Chmod(key, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := EnsureCA(CAConfig{Dir: dir}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != keyMode {
			t.Errorf("key mode %v after reuse, want %v", fi.Mode().Perm(), keyMode)
		}
	})
	t.Run("no_dir", func(t *testing.T) {
		t.Parallel()
		if _, err := EnsureCA(CAConfig{}); !errors.Is(err, ErrNoDir) {
			t.Errorf("err = %v, want ErrNoDir", err)
		}
		ca, err := NewCA(CAConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ca.EnsureClientCert(ClientConfig{Dir: t.TempDir()}); !errors.Is(err, ErrNoUser) {
			t.Errorf("err = %v, want ErrNoUser", err)
		}
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := WriteFileAtomic(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestServingCert_reloads_on_change(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := NewCA(CAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(host string) *KeyPair {
		kp, err := ca.Issue(Request{CommonName: host, DNSNames: []string{host}})
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := issue("one.example")
	writeFile(t, certFile, first.CertPEM)
	writeFile(t, keyFile, first.KeyPEM)

	var (
		mu      sync.Mutex
		errs    []error
		reloads int
	)
	sc, err := NewServingCert(certFile, keyFile, ReloadConfig{
		Interval: 10 * time.Millisecond,
		OnError:  func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
		OnReload: func() { mu.Lock(); reloads++; mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	current := func() string {
		c, err := sc.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	if got := current(); got != "one.example" {
		t.Fatalf("initial CN = %q", got)
	}

	// A new pair is picked up on use.
	second := issue("two.example")
	writeFile(t, keyFile, second.KeyPEM)
	writeFile(t, certFile, second.CertPEM)
	waitFor(t, "the new certificate", func() bool { return current() == "two.example" })

	// A bad certificate keeps the old one and reports once.
	writeFile(t, certFile, []byte("not a certificate"))
	if err := sc.Check(); !errors.Is(err, ErrNoCertificate) {
		t.Fatalf("Check() = %v, want ErrNoCertificate", err)
	}
	if err := sc.Check(); err == nil {
		t.Fatal("second Check() forgot the error")
	}
	if got := current(); got != "two.example" {
		t.Fatalf("CN after a bad file = %q, want the old two.example", got)
	}
	if !errors.Is(sc.Err(), ErrNoCertificate) {
		t.Errorf("Err() = %v", sc.Err())
	}
	// A certificate whose key was not replaced yet is a mismatch, also kept out.
	third := issue("three.example")
	writeFile(t, certFile, third.CertPEM)
	if err := sc.Check(); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Check() = %v, want ErrKeyMismatch", err)
	}
	writeFile(t, keyFile, third.KeyPEM)
	if err := sc.Check(); err != nil {
		t.Fatalf("Check() after the key arrived = %v", err)
	}
	if got := current(); got != "three.example" {
		t.Fatalf("CN = %q, want three.example", got)
	}
	if sc.Err() != nil {
		t.Errorf("Err() after a good file = %v", sc.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 2 {
		t.Errorf("OnError called %d times (%v), want 2 (one per distinct bad state)", len(errs), errs)
	}
	if reloads != 2 {
		t.Errorf("OnReload called %d times, want 2", reloads)
	}
}

func TestServingCert_fails_on_bad_initial_files(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if _, err := NewServingCert(certFile, keyFile, ReloadConfig{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing files: err = %v", err)
	}
	writeFile(t, certFile, []byte("x"))
	writeFile(t, keyFile, []byte("y"))
	if _, err := NewServingCert(certFile, keyFile, ReloadConfig{}); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("garbage files: err = %v", err)
	}
}

func TestCABundle_reloads_in_Start_loop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "ca.crt")
	ca1, err := NewCA(CAConfig{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := NewCA(CAConfig{Name: "two"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, ca1.CertPEM)
	reloaded := make(chan struct{}, 1)
	b, err := NewCABundle(file, ReloadConfig{Interval: 10 * time.Millisecond, OnReload: func() {
		select {
		case reloaded <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Start(ctx) }()

	writeFile(t, file, append(append([]byte{}, ca1.CertPEM...), ca2.CertPEM...))
	select {
	case <-reloaded: // the Start loop saw the change with nobody using the bundle
	case <-time.After(5 * time.Second):
		t.Fatal("Start loop did not reload the bundle")
	}
	cs := b.Certificates()
	if len(cs) != 2 || cs[1].Subject.CommonName != "two" {
		t.Fatalf("bundle holds %d certificates", len(cs))
	}
	leaf, err := ca2.Issue(Request{CommonName: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: b.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("leaf of the added CA does not verify against the pool: %v", err)
	}

	writeFile(t, file, []byte("-----BEGIN NOTHING-----\n"))
	if err := b.Check(); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("Check() = %v, want ErrNoCertificate", err)
	}
	if len(b.Certificates()) != 2 {
		t.Error("a bad bundle replaced the good one")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
}

func TestServerTLSConfig_handshake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := EnsureCA(CAConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srvKP, err := ca.EnsureServingCert(ServingConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := EnsureCA(CAConfig{Dir: dir, Name: "client-ca"})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := NewServingCert(srvKP.CertFile, srvKP.KeyFile, ReloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := NewCABundle(clientCA.CertFile, ReloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ServerTLSConfig(ServerTLSOptions{Serving: serving, ClientCA: bundle})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.RequestClientCert ||
		!slices.Equal(cfg.NextProtos, []string{"h2", "http/1.1"}) {
		t.Fatalf("config: min %x, client auth %v, protos %v", cfg.MinVersion, cfg.ClientAuth, cfg.NextProtos)
	}

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := "-"
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		w.Header().Set("X-Peer", cn)
		w.Header().Set("X-Proto", r.Proto)
	}))
	srv.TLS = cfg
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// A client certificate from a CA the server does not know still completes
	// the handshake: verification is authentication's job.
	stranger, err := NewCA(CAConfig{Name: "stranger"})
	if err != nil {
		t.Fatal(err)
	}
	strangerKP, err := stranger.Issue(Request{CommonName: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	goodKP, err := clientCA.Issue(Request{CommonName: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		client   *KeyPair
		wantPeer string
	}{
		{name: "no_client_cert", wantPeer: "-"},
		{name: "client_cert_from_client_ca", client: goodKP, wantPeer: "alice"},
		{name: "client_cert_from_unknown_ca", client: strangerKP, wantPeer: "mallory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var acceptable [][]byte
			tc := &tls.Config{
				RootCAs:    ca.Pool(),
				ServerName: "localhost",
				NextProtos: []string{"h2", "http/1.1"},
				GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
					acceptable = cri.AcceptableCAs
					if tt.client == nil {
						return &tls.Certificate{}, nil
					}
					c := tt.client.TLSCertificate()
					return &c, nil
				},
			}
			tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true,
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
				}}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get("https://localhost/")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if got := resp.Header.Get("X-Peer"); got != tt.wantPeer {
				t.Errorf("peer = %q, want %q", got, tt.wantPeer)
			}
			if got := resp.Header.Get("X-Proto"); got != "HTTP/2.0" {
				t.Errorf("proto = %q, want HTTP/2.0", got)
			}
			if len(acceptable) != 1 || !bytes.Equal(acceptable[0], clientCA.Cert.RawSubject) {
				t.Errorf("advertised CAs = %d entries, want the client CA's subject", len(acceptable))
			}
		})
	}

	// TLS 1.1 is refused.
	_, err = tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost",
		MaxVersion: tls.VersionTLS11})
	if err == nil {
		t.Error("a TLS 1.1 handshake succeeded")
	}
	if _, err := ServerTLSConfig(ServerTLSOptions{}); !errors.Is(err, ErrNoServing) {
		t.Errorf("no serving: err = %v", err)
	}
}
