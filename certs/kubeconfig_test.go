package certs

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl runs the real kubectl with a private HOME.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), path, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestWriteKubeconfig_accepted_by_kubectl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := EnsureCA(CAConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.EnsureServingCert(ServingConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ca.EnsureClientCert(ClientConfig{Dir: dir, User: "annex-admin", Groups: []string{"system:masters"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := NewServingCert(serving.CertFile, serving.KeyFile, ReloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := NewCABundle(ca.CertFile, ReloadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := ServerTLSConfig(ServerTLSOptions{Serving: sc, ClientCA: bundle})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("hello " + r.TLS.PeerCertificates[0].Subject.CommonName))
	}))
	srv.TLS = tlsCfg
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	server := "https://127.0.0.1:" + strings.TrimPrefix(srv.Listener.Addr().String(), "127.0.0.1:")

	path := filepath.Join(dir, "sub", "kubeconfig")
	err = WriteKubeconfig(path, Kubeconfig{
		Server: server, CAPEM: ca.CertPEM, ClientCertPEM: admin.CertPEM, ClientKeyPEM: admin.KeyPEM,
		ClusterName: `odd "name": with # yaml`, UserName: "annex-admin", Namespace: "team-a",
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600", fi.Mode().Perm())
	}

	view := func(jsonpath string) string {
		return kubectl(t, "config", "view", "--kubeconfig", path, "--raw", "--minify", "-o", "jsonpath="+jsonpath)
	}
	checks := []struct{ jsonpath, want string }{
		{"{.current-context}", `odd "name": with # yaml`},
		{"{.clusters[0].cluster.server}", server},
		{"{.users[0].name}", "annex-admin"},
		{"{.contexts[0].context.namespace}", "team-a"},
		{"{.clusters[0].cluster.certificate-authority-data}", base64.StdEncoding.EncodeToString(ca.CertPEM)},
		{"{.users[0].user.client-certificate-data}", base64.StdEncoding.EncodeToString(admin.CertPEM)},
		{"{.users[0].user.client-key-data}", base64.StdEncoding.EncodeToString(admin.KeyPEM)},
	}
	for _, c := range checks {
		if got := view(c.jsonpath); got != c.want {
			t.Errorf("%s = %q, want %q", c.jsonpath, got, c.want)
		}
	}

	// kubectl talks to a server with it: it trusts the serving certificate
	// through the CA and presents the admin client certificate.
	if got := kubectl(t, "--kubeconfig", path, "get", "--raw", "/healthz"); got != "hello annex-admin" {
		t.Errorf("kubectl get --raw = %q", got)
	}
}

func TestWriteKubeconfig_rejects_incomplete(t *testing.T) {
	t.Parallel()
	err := WriteKubeconfig(filepath.Join(t.TempDir(), "k"), Kubeconfig{Server: "https://x"})
	if !errors.Is(err, ErrInvalidKubeconfig) {
		t.Errorf("err = %v, want ErrInvalidKubeconfig", err)
	}
}
