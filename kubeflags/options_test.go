package kubeflags

import (
	"errors"
	iofs "io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"time"

	"github.com/spf13/pflag"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
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
	b, fs, o := serverFlags(t)
	b.Resources = []rest.Resource{widgets()}
	if err := fs.Parse([]string{"--data-dir", filepath.Join(dir, "data"), "--token-auth-file", tokens, "--authorization-policy-file", policy}); err != nil {
		t.Fatal(err)
	}
	if err := o.Apply(b); err != nil {
		t.Fatal(err)
	}
	ts := annextest.Start(t, *b)
	if ts.DataDir != filepath.Join(dir, "data") {
		t.Fatalf("--data-dir: the server's data directory is %s", ts.DataDir)
	}
	c := ts.AnonymousClient()
	srvURL := ts.URL

	get := func(token, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srvURL+path, nil)
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
	req, _ := http.NewRequest(http.MethodPost, srvURL+list, strings.NewReader(`{"metadata":{"name":"x"}}`))
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
	b, fs, o := serverFlags(t)
	if err := fs.Parse([]string{"--delegated-auth", "--authentication-kubeconfig", "/k", "--requestheader-allowed-names", "front-proxy-client,aggregator",
		"--authorization-webhook-cache-authorized-ttl", "1m"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Apply(b); err != nil {
		t.Fatal(err)
	}
	d := b.Authentication.Delegation
	if d == nil || d.AuthenticationKubeconfig != "/k" || d.AuthorizedTTL != time.Minute ||
		strings.Join(d.RequestHeader.Names.AllowedNames, ",") != "front-proxy-client,aggregator" {
		t.Fatalf("delegation = %+v", d)
	}
	plain, pfs, po := serverFlags(t)
	if err := pfs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := po.Apply(plain); err != nil || plain.Authentication.Delegation != nil {
		t.Fatalf("no delegation flags gave %+v (%v)", plain.Authentication.Delegation, err)
	}
}

// TestAddFlags: the flags on a pflag.FlagSet, in their --name form, --help
// in kube's sections, with the flag-without-effect check seeing what was
// given.
func TestAddFlags(t *testing.T) {
	t.Parallel()
	var b annex.Builder
	var o Options
	fs := pflag.NewFlagSet("annex", pflag.ContinueOnError)
	o.AddFlags(fs, &b)
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
	err := o.Apply(&b)
	if err == nil || !strings.Contains(err.Error(), "--authentication-kubeconfig") {
		t.Errorf("a flag without effect: Apply error %v, want one naming it", err)
	}
}

// TestFlagWithoutEffectIsAnError walks the flags: each given in a mode where
// it does nothing fails Apply with an error naming it; given where it works,
// it passes.
func TestFlagWithoutEffectIsAnError(t *testing.T) {
	t.Parallel()
	stored := []rest.Resource{widgets()}
	computed := []rest.Resource{{Group: "test.annex.dev", Version: "v1", Plural: "gauges", Kind: "Gauge",
		Getter: rest.GetterFunc(nil), Lister: rest.ListerFunc(nil)}}
	policy := filepath.Join(t.TempDir(), "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []string{"--tls-cert-file", "/c.crt", "--tls-private-key-file", "/c.key", "--client-ca-file", "/ca.crt"}
	tests := []struct {
		name string
		args []string
		// builder adjusts the Builder the program declares.
		builder func(b *annex.Builder)
		// wantErr is every line of the error; none means no error.
		wantErr []string
	}{
		{name: "no_flags", args: nil},
		{name: "delegated_with_its_flags", args: []string{"--delegated-auth", "--authentication-kubeconfig", "/k", "--authorization-kubeconfig", "/k",
			"--authentication-token-webhook-cache-ttl", "1m", "--authorization-webhook-cache-authorized-ttl", "1m",
			"--authorization-webhook-cache-unauthorized-ttl", "1m", "--authentication-skip-lookup"}},
		{name: "delegation_flags_without_delegated_auth", args: []string{"--authentication-kubeconfig", "/k", "--authorization-kubeconfig", "/k",
			"--authentication-token-webhook-cache-ttl", "1m", "--authorization-webhook-cache-authorized-ttl", "1m",
			"--authorization-webhook-cache-unauthorized-ttl", "1m", "--authentication-skip-lookup"},
			wantErr: []string{
				"--authentication-kubeconfig: has no effect without --delegated-auth",
				"--authorization-kubeconfig: has no effect without --delegated-auth",
				"--authentication-skip-lookup: has no effect without --delegated-auth",
				"--authentication-token-webhook-cache-ttl: has no effect without --delegated-auth",
				"--authorization-webhook-cache-authorized-ttl: has no effect without --delegated-auth",
				"--authorization-webhook-cache-unauthorized-ttl: has no effect without --delegated-auth",
			}},
		{name: "delegated_auth_with_delegation_in_code", args: []string{"--delegated-auth", "--authentication-kubeconfig", "/k"},
			builder: func(b *annex.Builder) { b.Authentication.Delegation = &annex.Delegation{} },
			wantErr: []string{"--authentication-kubeconfig: Builder.Authentication.Delegation is set in code", "--delegated-auth: Builder.Authentication.Delegation is set in code"}},
		{name: "standalone_request_header", args: []string{"--requestheader-client-ca-file", "/rh.crt", "--requestheader-allowed-names", "p",
			"--requestheader-username-headers", "U", "--requestheader-group-headers", "G", "--requestheader-extra-headers-prefix", "E-",
			"--requestheader-uid-headers", "I"}},
		{name: "header_names_without_a_request_header_ca", args: []string{"--requestheader-allowed-names", "p",
			"--requestheader-username-headers", "U", "--requestheader-group-headers", "G", "--requestheader-extra-headers-prefix", "E-",
			"--requestheader-uid-headers", "I"},
			wantErr: []string{
				"--requestheader-allowed-names: has no effect without --requestheader-client-ca-file",
				"--requestheader-username-headers: has no effect without --requestheader-client-ca-file",
				"--requestheader-group-headers: has no effect without --requestheader-client-ca-file",
				"--requestheader-extra-headers-prefix: has no effect without --requestheader-client-ca-file",
				"--requestheader-uid-headers: has no effect without --requestheader-client-ca-file",
			}},
		// Delegated, the names override the cluster's ConfigMap.
		{name: "delegated_header_names_override_the_cluster", args: []string{"--delegated-auth", "--requestheader-allowed-names", "p"}},
		{name: "delegated_header_names_when_the_lookup_is_skipped", args: []string{"--delegated-auth", "--authentication-skip-lookup", "--requestheader-allowed-names", "p"},
			wantErr: []string{"--requestheader-allowed-names: has no effect without --requestheader-client-ca-file when --authentication-skip-lookup leaves the cluster's front-proxy CA unread"}},
		{name: "delegated_skip_lookup_with_files", args: []string{"--delegated-auth", "--authentication-skip-lookup", "--client-ca-file", "/ca.crt",
			"--requestheader-client-ca-file", "/rh.crt", "--requestheader-allowed-names", "p"}},
		{name: "request_header_flags_with_request_header_in_code", args: []string{"--requestheader-client-ca-file", "/rh.crt", "--requestheader-allowed-names", "p"},
			builder: func(b *annex.Builder) { b.Authentication.RequestHeader = &annex.RequestHeader{ClientCAFile: "/x.crt"} },
			wantErr: []string{"--requestheader-client-ca-file: Builder.Authentication.RequestHeader is set in code", "--requestheader-allowed-names: Builder.Authentication.RequestHeader is set in code"}},
		{name: "oidc", args: []string{"--oidc-issuer-url", "https://issuer", "--oidc-client-id", "c", "--oidc-username-claim", "email",
			"--oidc-username-prefix", "o:", "--oidc-groups-claim", "g", "--oidc-groups-prefix", "g:", "--oidc-required-claim", "a=b", "--oidc-signing-algs", "ES256"}},
		{name: "oidc_flags_without_an_issuer", args: []string{"--oidc-client-id", "c", "--oidc-username-claim", "email",
			"--oidc-username-prefix", "o:", "--oidc-groups-claim", "g", "--oidc-groups-prefix", "g:", "--oidc-required-claim", "a=b", "--oidc-signing-algs", "ES256"},
			wantErr: []string{
				"--oidc-client-id: has no effect without --oidc-issuer-url",
				"--oidc-username-claim: has no effect without --oidc-issuer-url",
				"--oidc-username-prefix: has no effect without --oidc-issuer-url",
				"--oidc-groups-claim: has no effect without --oidc-issuer-url",
				"--oidc-groups-prefix: has no effect without --oidc-issuer-url",
				"--oidc-required-claim: has no effect without --oidc-issuer-url",
				"--oidc-signing-algs: has no effect without --oidc-issuer-url",
			}},
		{name: "oidc_flags_with_oidc_in_code", args: []string{"--oidc-issuer-url", "https://issuer", "--oidc-client-id", "c"},
			builder: func(b *annex.Builder) { b.Authentication.OIDC = &authn.OIDCConfig{IssuerURL: "https://other"} },
			wantErr: []string{"--oidc-issuer-url: Builder.Authentication.OIDC is set in code", "--oidc-client-id: Builder.Authentication.OIDC is set in code"}},
		{name: "audit_log", args: []string{"--audit-policy-file", policy, "--audit-log-path", "/a.log", "--audit-log-maxage", "3", "--audit-log-mode", "batch"}},
		{name: "audit_webhook", args: []string{"--audit-policy-file", policy, "--audit-webhook-config-file", "/w", "--audit-webhook-batch-max-size", "10"}},
		{name: "audit_flags_without_a_policy", args: []string{"--audit-log-path", "/a.log", "--audit-log-maxage", "3", "--audit-webhook-config-file", "/w"},
			wantErr: []string{
				"--audit-log-maxage: has no effect without --audit-policy-file",
				"--audit-log-path: has no effect without --audit-policy-file",
				"--audit-webhook-config-file: has no effect without --audit-policy-file",
			}},
		{name: "audit_policy_without_a_backend", args: []string{"--audit-policy-file", policy},
			wantErr: []string{"--audit-policy-file: has no effect without --audit-log-path or --audit-webhook-config-file"}},
		{name: "audit_backend_settings_without_the_backend", args: []string{"--audit-policy-file", policy, "--audit-log-path", "/a.log",
			"--audit-webhook-mode", "batch", "--audit-webhook-initial-backoff", "1s"},
			wantErr: []string{
				"--audit-webhook-initial-backoff: has no effect without --audit-webhook-config-file",
				"--audit-webhook-mode: has no effect without --audit-webhook-config-file",
			}},
		{name: "port_and_address", args: []string{"--secure-port", "9443", "--bind-address", "127.0.0.1"},
			builder: func(b *annex.Builder) { b.Serving.Listener = nil }},
		{name: "port_and_address_with_a_listener", args: []string{"--secure-port", "9443", "--bind-address", "127.0.0.1"},
			wantErr: []string{"--secure-port: Builder.Serving.Listener is set in code", "--bind-address: Builder.Serving.Listener is set in code"}},
		{name: "data_dir_for_generated_certificates", args: []string{"--data-dir", "/d"}},
		{name: "data_dir_for_the_embedded_store", args: append([]string{"--data-dir", "/d"}, files...)},
		{name: "data_dir_with_nothing_to_keep", args: append([]string{"--data-dir", "/d"}, files...),
			builder: func(b *annex.Builder) { b.Resources = computed },
			wantErr: []string{"--data-dir: has no effect: certificates come from files, client certificates are not generated (--client-ca-file or delegation) and no resource uses the embedded store"}},
		{name: "data_dir_with_a_store_given", args: append([]string{"--data-dir", "/d", "--delegated-auth"}, files[:4]...),
			builder: func(b *annex.Builder) { b.Storage.Store = nopStore{} },
			wantErr: []string{"--data-dir: has no effect: certificates come from files, client certificates are not generated (--client-ca-file or delegation) and no resource uses the embedded store"}},
		{name: "flags_that_always_work", args: []string{"--token-auth-file", "/t.csv", "--authorization-policy-file", "/p.yaml",
			"--authorization-always-allow-paths", "/healthz", "--request-timeout", "30s", "--min-request-timeout", "60",
			"--http2-max-streams-per-connection", "500", "--tls-cert-file", "/c.crt", "--tls-private-key-file", "/c.key", "--client-ca-file", "/ca.crt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := annex.Builder{Resources: stored, Serving: annex.Serving{Listener: &net.TCPListener{}}}
			if tc.builder != nil {
				tc.builder(&b)
			}
			var o Options
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs, &b)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Apply(&b)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tc.wantErr, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.wantErr, "\n"))
			}
		})
	}
}

// TestFlagErrorsHaveNoSideEffect: Apply reports every flag error at once
// and makes nothing (no data directory), so the program stops before Build.
func TestFlagErrorsHaveNoSideEffect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, fs, o := serverFlags(t)
	b.Resources = []rest.Resource{widgets()}
	if err := fs.Parse([]string{"--data-dir", dir + "/data", "--requestheader-allowed-names", "front-proxy-client", "--authentication-kubeconfig", "/k"}); err != nil {
		t.Fatal(err)
	}
	err := o.Apply(b)
	if err == nil {
		t.Fatal("Apply accepted flags without effect")
	}
	for _, want := range []string{"--requestheader-allowed-names: has no effect without --requestheader-client-ca-file",
		"--authentication-kubeconfig: has no effect without --delegated-auth"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(dir + "/data"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("a failed Apply made the data directory (%v)", err)
	}
}

// nopStore stands for a store the program gives; it is never called.
type nopStore struct{ storage.Interface }
