package annex

import (
	"errors"
	"flag"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/rest"
)

// TestFlagWithoutEffectIsAnError walks the flags of flags.go: each given in
// a mode where it does nothing fails the first phase of Build with an error
// naming it; given where it works, it passes.
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
		builder func(b *Builder)
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
			builder: func(b *Builder) { b.Authentication.Delegation = &Delegation{} },
			wantErr: []string{"--authentication-kubeconfig: Builder.Delegation is set in code", "--delegated-auth: Builder.Delegation is set in code"}},
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
			builder: func(b *Builder) { b.Authentication.RequestHeader = &RequestHeader{ClientCAFile: "/x.crt"} },
			wantErr: []string{"--requestheader-client-ca-file: Builder.RequestHeader is set in code", "--requestheader-allowed-names: Builder.RequestHeader is set in code"}},
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
			builder: func(b *Builder) { b.Authentication.OIDC = &authn.OIDCConfig{IssuerURL: "https://other"} },
			wantErr: []string{"--oidc-issuer-url: Builder.OIDC is set in code", "--oidc-client-id: Builder.OIDC is set in code"}},
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
			builder: func(b *Builder) { b.Serving.Listener = nil }},
		{name: "port_and_address_with_a_listener", args: []string{"--secure-port", "9443", "--bind-address", "127.0.0.1"},
			wantErr: []string{"--secure-port: Builder.Listener is set in code", "--bind-address: Builder.Listener is set in code"}},
		{name: "data_dir_for_generated_certificates", args: []string{"--data-dir", "/d"}},
		{name: "data_dir_for_the_embedded_store", args: append([]string{"--data-dir", "/d"}, files...)},
		{name: "data_dir_with_nothing_to_keep", args: append([]string{"--data-dir", "/d"}, files...),
			builder: func(b *Builder) { b.Resources = computed },
			wantErr: []string{"--data-dir: has no effect: certificates come from files, client certificates are not generated (--client-ca-file or delegation) and no resource uses the embedded store"}},
		{name: "data_dir_with_a_store_given", args: append([]string{"--data-dir", "/d", "--delegated-auth"}, files[:4]...),
			builder: func(b *Builder) { b.Storage.Store = pendingStore{} },
			wantErr: []string{"--data-dir: has no effect: certificates come from files, client certificates are not generated (--client-ca-file or delegation) and no resource uses the embedded store"}},
		{name: "flags_that_always_work", args: []string{"--token-auth-file", "/t.csv", "--authorization-policy-file", "/p.yaml",
			"--authorization-always-allow-paths", "/healthz", "--request-timeout", "30s", "--min-request-timeout", "60",
			"--http2-max-streams-per-connection", "500", "--tls-cert-file", "/c.crt", "--tls-private-key-file", "/c.key", "--client-ca-file", "/ca.crt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Builder{Resources: stored, Serving: Serving{Listener: &net.TCPListener{}}}
			if tc.builder != nil {
				tc.builder(&b)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			b.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := b.applyFlags()
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

// TestFlagErrorsComeFromBuild: the rule runs in Build's first phase, with
// every other problem, and Build has no side effect.
func TestFlagErrorsComeFromBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := Builder{Resources: []rest.Resource{widgets()}, DataDir: dir + "/data"}
	flags := flag.NewFlagSet("test", flag.ContinueOnError)
	b.AddFlags(flags)
	if err := flags.Parse([]string{"--requestheader-allowed-names", "front-proxy-client", "--authentication-kubeconfig", "/k"}); err != nil {
		t.Fatal(err)
	}
	b.Serving.Listener = mustListen(t)
	_, err := b.Build()
	if err == nil {
		t.Fatal("Build accepted flags without effect")
	}
	for _, want := range []string{"--requestheader-allowed-names: has no effect without --requestheader-client-ca-file",
		"--authentication-kubeconfig: has no effect without --delegated-auth"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(dir + "/data"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed Build made the data directory (%v)", err)
	}
}
