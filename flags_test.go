package annex

import (
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"time"

	"github.com/annexapi/annex/rest"
)

func TestFlagsConfigureStandaloneTokensAndRBAC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("reader-token,rita,r-1,\"readers\"\nnobody-token,nora,n-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-reader}
rules:
- apiGroups: [test.annex.dev]
  resources: [widgets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: readers}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := Builder{Resources: []rest.Resource{widgets()}}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	b.AddFlags(fs)
	if err := fs.Parse([]string{"--data-dir", filepath.Join(dir, "data"), "--token-auth-file", tokens, "--authorization-policy-file", policy}); err != nil {
		t.Fatal(err)
	}
	var err error
	if b.Serving.Listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: srv, done: make(chan struct{})}
	runInBackground(t, ts)
	c := clientWith(t, filepath.Join(dir, "data", "certs", "annex-serving-ca.crt"), "", "")
	waitReady(t, c, srv.URL())

	get := func(token, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readAll(t, resp)
	}
	list := "/apis/test.annex.dev/v1/namespaces/default/widgets"
	if code, body := get("reader-token", list); code != 200 {
		t.Errorf("rita (group readers) list: %d %s", code, body)
	}
	if code, body := get("nobody-token", list); code != 403 || !strings.Contains(body, `User \"nora\" cannot list resource \"widgets\"`) {
		t.Errorf("nora list: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+list, strings.NewReader(`{"metadata":{"name":"x"}}`))
	req.Header.Set("Authorization", "Bearer reader-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 403 {
		t.Errorf("rita create: %d %s", resp.StatusCode, body)
	}
	if code, _ := get("wrong-token", list); code != 401 {
		t.Errorf("unknown token: %d", code)
	}
}

func TestFlagsSelectDelegation(t *testing.T) {
	t.Parallel()
	b := Builder{}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	b.AddFlags(fs)
	if err := fs.Parse([]string{"--delegated-auth", "--authentication-kubeconfig", "/k", "--requestheader-allowed-names", "front-proxy-client,aggregator",
		"--authorization-webhook-cache-authorized-ttl", "1m"}); err != nil {
		t.Fatal(err)
	}
	if err := b.applyFlags(); err != nil {
		t.Fatal(err)
	}
	d := b.Authentication.Delegation
	if d == nil || d.AuthenticationKubeconfig != "/k" || d.AuthorizedTTL != time.Minute ||
		strings.Join(d.RequestHeaderAllowedNames, ",") != "front-proxy-client,aggregator" {
		t.Fatalf("delegation = %+v", d)
	}
	plain := Builder{}
	plain.AddFlags(flag.NewFlagSet("plain", flag.ContinueOnError))
	if err := plain.applyFlags(); err != nil || plain.Authentication.Delegation != nil {
		t.Fatalf("no delegation flags gave %+v (%v)", plain.Authentication.Delegation, err)
	}
}

// TestAddPFlags: the same flags on a pflag.FlagSet, in their --name form,
// with the flag-without-effect check seeing what was given.
func TestAddPFlags(t *testing.T) {
	t.Parallel()
	var b Builder
	fs := pflag.NewFlagSet("annex", pflag.ContinueOnError)
	b.AddPFlags(fs)
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	for _, want := range []string{"--secure-port int", "--audit-policy-file string", "--profiling", "--max-requests-inflight"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	// --help: kube's sections, in kube's order, and kube's type names.
	fs.Bool("own-flag", false, "a program's own flag")
	help.Reset()
	if err := fs.Parse([]string{"--help"}); err != pflag.ErrHelp {
		t.Fatalf("--help: %v", err)
	}
	out := help.String()
	last := -1
	for _, want := range []string{"Usage:\n  annex [flags]\n", "\nGeneric flags:\n", "--max-requests-inflight int ", "\nEtcd flags:\n", "--encryption-provider-config string",
		"\nSecure serving flags:\n", "--secure-port int ", "\nAudit flags:\n", "\nFeatures flags:\n", "--profiling ", "\nAuthentication flags:\n",
		"--oidc-required-claim mapStringString", "--requestheader-allowed-names strings ", "\nAuthorization flags:\n", "--authorization-always-allow-paths strings ",
		"\nMisc flags:\n", "--own-flag "} {
		i := strings.Index(out, want)
		if i < 0 || i < last {
			t.Errorf("--help lacks %q after the previous one:\n%s", want, out)
			break
		}
		last = i
	}
	if err := fs.Parse([]string{"--secure-port=9443", "--authentication-kubeconfig=/x"}); err != nil {
		t.Fatal(err)
	}
	if b.Serving.SecurePort != 9443 {
		t.Errorf("SecurePort = %d", b.Serving.SecurePort)
	}
	b.DataDir = t.TempDir()
	_, err := b.Build()
	if err == nil || !strings.Contains(err.Error(), "--authentication-kubeconfig") {
		t.Errorf("a flag without effect given through pflag: Build error %v, want one naming it", err)
	}
}
