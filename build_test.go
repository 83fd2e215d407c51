package annex

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// widgets is the resource the Builders of these tests declare.
func widgets() rest.Resource {
	return rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// build runs Build, failing the test when it panics.
func build(t *testing.T, b *Builder) (srv *Server, err error) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("Build panicked: %v", v)
		}
	}()
	return b.Build()
}

func TestBuildRejectsBadDeclarations(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	missing := filepath.Join(files, "missing")
	badTokens := writeFile(t, files, "tokens.csv", "only-a-token\n")
	badHooks := writeFile(t, files, "hooks.yaml", "kind: ValidatingWebhookConfiguration\nwebhooks: [{name: x}]\n")
	computed := rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "gauges", Kind: "Gauge", StatusSubresource: true,
		Lister: rest.ListerFunc(func(context.Context, string, rest.ListOptions) ([][]byte, error) { return nil, nil })}
	noKind := widgets()
	noKind.Kind = ""
	untypedColumn := widgets()
	untypedColumn.PrinterColumns = []rest.PrinterColumn{{Name: "owner", JSONPath: ".spec.owner"}}
	anyone := authn.AuthenticatorFunc(func(*http.Request) (*filters.User, bool, error) { return &filters.User{Name: "u"}, true, nil })
	allowAll := authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
		return authz.DecisionAllow, "", nil
	})
	tooEarly := InsertedStage{After: StageRequestInfo, Stage: Stage{Name: "tenant-check", Needs: []Provision{ProvidesUser}, Filter: pass}}

	tests := []struct {
		name string
		b    Builder
		want []string
	}{
		{"no_resources", Builder{Resources: []rest.Resource{}}, []string{"Resources: no resources declared"}},
		{"missing_kind", Builder{Resources: []rest.Resource{noKind}}, []string{"Resources: ", "kind must be a CamelCase identifier"}},
		{"printer_column_without_type", Builder{Resources: []rest.Resource{untypedColumn}}, []string{"Resources: ", "printer column owner has type ;"}},
		{"status_on_computed_resource", Builder{Resources: []rest.Resource{computed}}, []string{"Resources: ", "a computed resource has no status subresource"}},
		{"cert_without_key", Builder{Serving: Serving{CertFile: missing}}, []string{"CertFile/KeyFile: must be given together"}},
		{"missing_cert_files", Builder{Serving: Serving{CertFile: missing, KeyFile: missing}}, []string{"CertFile/KeyFile: "}},
		{"port_out_of_range", Builder{Serving: Serving{SecurePort: 70000}}, []string{"SecurePort: 70000 is out of range"}},
		{"register_without_service", Builder{Registration: Registration{Register: true}}, []string{"Registration.Register: needs Registration.Service (--register-apiservice needs --service name.namespace)"}},
		{"register_standalone", Builder{Registration: Registration{Register: true, Service: "a.b"}}, []string{"Registration.Register: needs delegated mode"}},
		{"bad_service", Builder{Registration: Registration{Service: "metrics-server"}}, []string{`Registration.Service: "metrics-server": want name.namespace`}},
		{"negative_body_limit", Builder{Limits: Limits{MaxRequestBodyBytes: -1}}, []string{"MaxRequestBodyBytes: -1 is negative"}},
		{"missing_client_ca", Builder{Authentication: Authentication{ClientCAFile: missing}}, []string{"ClientCAFile: "}},
		{"missing_token_file", Builder{Authentication: Authentication{TokenAuthFile: missing}}, []string{"TokenAuthFile: "}},
		{"bad_token_file", Builder{Authentication: Authentication{TokenAuthFile: badTokens}}, []string{"TokenAuthFile: "}},
		{"oidc_over_http", Builder{Authentication: Authentication{OIDC: &authn.OIDCConfig{IssuerURL: "http://issuer", Audiences: []string{"a"}}}}, []string{"OIDC: ", "must be https"}},
		{"missing_policy_file", Builder{Authorization: Authorization{PolicyFiles: []string{missing}}}, []string{"Authorization.PolicyFiles: "}},
		{"missing_delegation_kubeconfig", Builder{Authentication: Authentication{Delegation: &Delegation{AuthenticationKubeconfig: missing, AuthorizationKubeconfig: missing}}},
			[]string{"Delegation.AuthenticationKubeconfig: ", "Delegation.AuthorizationKubeconfig: "}},
		{"missing_admission_policy_file", Builder{Admission: Admission{PolicyFiles: []string{missing}}}, []string{"Admission.PolicyFiles: "}},
		{"bad_webhook_file", Builder{Admission: Admission{WebhookFiles: []string{badHooks}}}, []string{"Admission.WebhookFiles: ", "clientConfig"}},
		{"nil_mutator", Builder{Admission: Admission{Mutators: []admission.Mutator{nil}}}, []string{"Mutators[0]: is nil"}},
		{"authenticator_and_token_file", Builder{Authentication: Authentication{Authenticator: anyone, TokenAuthFile: badTokens}}, []string{"Authenticator and TokenAuthFile: both set"}},
		{"authenticator_and_oidc", Builder{Authentication: Authentication{Authenticator: anyone, OIDC: &authn.OIDCConfig{IssuerURL: "https://issuer", Audiences: []string{"a"}}}},
			[]string{"Authenticator and OIDC: both set"}},
		{"authenticator_and_delegation", Builder{Authentication: Authentication{Authenticator: anyone, Delegation: &Delegation{AuthenticationKubeconfig: missing}}},
			[]string{"Authenticator and Delegation: both set"}},
		{"authorizer_and_policy_files", Builder{Authorization: Authorization{Authorizer: allowAll, PolicyFiles: []string{missing}}},
			[]string{"Authorization.Authorizer and PolicyFiles: both set"}},
		{"authorizer_and_always_allow_paths", Builder{Authorization: Authorization{Authorizer: allowAll, AlwaysAllowPaths: []string{"/x"}}},
			[]string{"Authorizer and AlwaysAllowPaths: both set"}},
		{"authorizer_and_delegation", Builder{Authentication: Authentication{Delegation: &Delegation{AuthenticationKubeconfig: missing}}, Authorization: Authorization{Authorizer: allowAll}},
			[]string{"Authorization.Authorizer and Authentication.Delegation: both set"}},
		{"stage_after_unknown_stage", Builder{Stages: []InsertedStage{{After: "nope", Stage: Stage{Name: "x", Filter: pass}}}},
			[]string{`Stages[0]: stage "x": no stage named "nope"`}},
		{"stage_that_reads_too_early", Builder{Stages: []InsertedStage{tooEarly}},
			[]string{`stage "tenant-check" needs "user", which no earlier stage provides`}},
		{"bad_encryption_config", Builder{Storage: Storage{EncryptionProviderConfig: writeFile(t, files, "enc.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n")}},
			[]string{"EncryptionProviderConfig: ", "resources: Required value: at least one resources is required"}},
		{"encryption_reload_without_config", Builder{Storage: Storage{EncryptionProviderConfigAutomaticReload: true}},
			[]string{"EncryptionProviderConfigAutomaticReload: needs EncryptionProviderConfig"}},
		{"encryption_config_and_storage", Builder{Storage: Storage{EncryptionProviderConfig: missing, Store: pendingStore{}}},
			[]string{"Storage.EncryptionProviderConfig and Storage.Store: both set", "EncryptionProviderConfig: error opening encryption provider configuration file"}},
		{"every_problem_at_once", Builder{Resources: []rest.Resource{noKind}, Authentication: Authentication{TokenAuthFile: badTokens}, Authorization: Authorization{PolicyFiles: []string{missing}}},
			[]string{"TokenAuthFile: ", "Authorization.PolicyFiles: ", "kind must be a CamelCase identifier"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := tt.b
			b.DataDir = filepath.Join(t.TempDir(), "data")
			if b.Resources == nil {
				b.Resources = []rest.Resource{widgets()}
			}
			_, err := build(t, &b)
			if err == nil {
				t.Fatal("Build succeeded")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if _, statErr := os.Stat(b.DataDir); !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("a failed Build made DataDir (%v)", statErr)
			}
		})
	}
}

// TestFailedBuildHasNoSideEffect: a declaration that fails validation leaves
// no directory, certificate or kubeconfig behind and binds no port.
func TestFailedBuildHasNoSideEffect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	noKind := widgets()
	noKind.Kind = ""
	parent := t.TempDir()
	b := Builder{
		DataDir:       filepath.Join(parent, "data"),
		Resources:     []rest.Resource{noKind},
		Serving:       Serving{BindAddress: "127.0.0.1", SecurePort: port},
		Authorization: Authorization{PolicyFiles: []string{filepath.Join(parent, "missing.yaml")}},
	}
	if _, err := build(t, &b); err == nil {
		t.Fatal("Build succeeded")
	}
	entries, err := os.ReadDir(parent)
	if err != nil || len(entries) != 0 {
		t.Errorf("a failed Build left %v (%v) in the parent of DataDir", entries, err)
	}
	again, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("the port of a failed Build is not free: %v", err)
	}
	again.Close()

	// The same declaration, fixed, builds: validation was the only obstacle.
	b.Resources, b.Authorization.PolicyFiles = []rest.Resource{widgets()}, nil
	b.Serving.SecurePort, b.Serving.Listener = 0, mustListen(t)
	srv, err := build(t, &b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.KubeconfigPath()); err != nil {
		t.Errorf("a successful Build wrote no kubeconfig: %v", err)
	}
	srv.closeAll()
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startCounter is a store whose Start records that Run started it.
type startCounter struct {
	storage.Interface
	started chan struct{}
}

func (s *startCounter) Start(ctx context.Context) error {
	close(s.started)
	<-ctx.Done()
	return nil
}

// TestRunStartsPerResourceStore: a store given on one resource is started by
// Run (its compaction runs), like the default store.
func TestRunStartsPerResourceStore(t *testing.T) {
	t.Parallel()
	own := &startCounter{started: make(chan struct{})}
	r := widgets()
	r.Storage = own
	b := Builder{DataDir: t.TempDir(), Resources: []rest.Resource{r}, Serving: Serving{Listener: mustListen(t)}, Storage: Storage{DisableWatchCache: true}}
	srv, err := build(t, &b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-own.started:
	case err := <-done:
		t.Fatalf("Run returned %v before starting the resource's store", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not start the resource's store")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestFailedAssembleUnregistersMetrics: Build's second phase can fail (a port
// in use); the metrics it registered on the caller's Registerer are
// unregistered, so that the caller can fix the cause and Build again with the
// same registry.
func TestFailedAssembleUnregistersMetrics(t *testing.T) {
	t.Parallel()
	busy := mustListen(t)
	defer busy.Close()
	reg := prometheus.NewRegistry()
	b := Builder{
		DataDir:       t.TempDir(),
		Resources:     []rest.Resource{widgets()},
		Serving:       Serving{BindAddress: "127.0.0.1", SecurePort: busy.Addr().(*net.TCPAddr).Port},
		Observability: Observability{Registerer: reg},
	}
	if _, err := build(t, &b); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Build on a busy port: %v, want a listen error", err)
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		names := make([]string, 0, len(mfs))
		for _, mf := range mfs {
			names = append(names, mf.GetName())
		}
		t.Errorf("a failed Build left %d metric families registered (%v): %v", len(mfs), err, names)
	}
	b.Serving.SecurePort, b.Serving.Listener = 0, mustListen(t)
	srv, err := build(t, &b)
	if err != nil {
		t.Fatalf("Build again with the same registry: %v", err)
	}
	srv.closeAll()
}
