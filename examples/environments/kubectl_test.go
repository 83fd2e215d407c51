package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/internal/kubectltest"
)

// startExample runs the example's server on a free port with the extra
// flags and returns its data directory and URL, and stop, which ends Run and
// waits for it (the test's cleanup calls it too).
func startExample(t *testing.T, flags ...string) (dataDir, url string, stop func()) {
	t.Helper()
	return startExampleIn(t, t.TempDir(), flags...)
}

// startExampleIn is startExample on an existing data directory (a restart).
func startExampleIn(t *testing.T, dataDir string, flags ...string) (_, url string, stop func()) {
	t.Helper()
	return startExampleWith(t, dataDir, nil, flags...)
}

// startExampleWith is startExampleIn with edit applied to the Builder.
func startExampleWith(t *testing.T, dataDir string, edit func(*annex.Builder), flags ...string) (_, url string, stop func()) {
	t.Helper()
	o, err := parseFlags(append([]string{"--data-dir", dataDir}, flags...))
	if err != nil {
		t.Fatal(err)
	}
	b, err := builder(o, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&b)
	}
	b.Serving.Listener, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return dataDir, srv.URL(), stop
}

// TestKubectlSession walks the README's kubectl session against the example.
func TestKubectlSession(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))

	kubectltest.WantContains(t, "api-resources", k.MustRun("api-resources", "--api-group=platform.example.com"),
		"environments", "env", "platform.example.com/v1beta1", "true", "Environment")

	manifest, err := os.ReadFile("environment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := k.WriteFile("env.yaml", string(manifest))
	kubectltest.WantContains(t, "create", k.MustRun("create", "-f", f), "environment.platform.example.com/checkout-staging created")
	out, ok := k.Run("create", "-f", f)
	if ok {
		t.Fatalf("second create succeeded:\n%s", out)
	}
	kubectltest.WantContains(t, "second create", out,
		`Error from server (AlreadyExists)`, `environments.platform.example.com "checkout-staging" already exists`)

	// kubectl reads the preferred version, v1beta1, and its columns.
	kubectltest.WantContains(t, "get", k.MustRun("get", "environments"), "NAME", "TIER", "OWNERS", "PHASE", "AGE",
		"checkout-staging", "staging", `["payments-team"]`, "Pending")
	kubectltest.WantContains(t, "explain", k.MustRun("explain", "environment.spec.tier"), "Tier is the kind of environment: dev, staging or prod.")
	y := k.MustRun("get", "environment", "checkout-staging", "-o", "yaml")
	kubectltest.WantContains(t, "get -o yaml", y, "apiVersion: platform.example.com/v1beta1", "kind: Environment",
		"name: checkout-staging", "namespace: default", "owners:", "- payments-team", "phase: Pending", "resourceVersion:", "uid:")
	kubectltest.WantContains(t, "label selector", k.MustRun("get", "environments", "-l", "team=payments", "-o", "name"), "environment.platform.example.com/checkout-staging")
	if out := k.MustRun("get", "environments", "-l", "team=other", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("label selector team=other matched:\n%s", out)
	}

	// An update with a stale resourceVersion is refused with k8s's message.
	stale := strings.Replace(string(manifest), "  labels:", "  resourceVersion: \"1\"\n  labels:", 1)
	out, ok = k.Run("replace", "-f", k.WriteFile("stale.yaml", stale))
	if ok {
		t.Fatalf("stale replace succeeded:\n%s", out)
	}
	kubectltest.WantContains(t, "stale replace", out, `Error from server (Conflict)`,
		`Operation cannot be fulfilled on environments.platform.example.com "checkout-staging": the object has been modified; please apply your changes to the latest version and try again`)

	// Validation errors read as kube's.
	bad := strings.NewReplacer("checkout-staging", "bad", "tier: staging", "tier: qa", "replicas: 3", "replicas: -1").Replace(string(manifest))
	out, ok = k.Run("apply", "-f", k.WriteFile("bad.yaml", bad))
	if ok {
		t.Fatalf("invalid apply succeeded:\n%s", out)
	}
	// kubectl renders a 422 with causes as one bullet per field.
	kubectltest.WantContains(t, "invalid apply", out, `The Environment "bad" is invalid:`,
		`* spec.tier: Unsupported value: "qa": supported values: "dev", "staging", "prod"`,
		`* spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`)

	// Defaults from the schema are stored; the mutating policy adds its label.
	minimal := "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: minimal\n  namespace: default\nspec:\n  owner: search-team\n"
	k.MustRun("create", "-f", k.WriteFile("minimal.yaml", minimal))
	kubectltest.WantContains(t, "defaults", k.MustRun("get", "environment", "minimal", "-o", "jsonpath={.spec.tier} {.spec.replicas} {.metadata.labels.managed-by}"), "dev 1 annex")
	// The CEL rule of the schema and the ValidatingAdmissionPolicy speak through kubectl.
	prod := strings.NewReplacer("name: minimal", "name: prod-small", "owner: search-team", "owner: search-team\n  tier: prod\n  replicas: 1").Replace(minimal)
	out, ok = k.Run("create", "-f", k.WriteFile("prod-small.yaml", prod))
	if ok {
		t.Fatalf("prod with one replica was created:\n%s", out)
	}
	kubectltest.WantContains(t, "CEL rule", out, "spec.replicas: Invalid value", "prod environments need at least 2 replicas")
	prod = strings.Replace(prod, "replicas: 1", "replicas: 2", 1)
	out, ok = k.Run("create", "-f", k.WriteFile("prod-unowned.yaml", prod))
	if ok {
		t.Fatalf("prod without an owner label was created:\n%s", out)
	}
	kubectltest.WantContains(t, "admission policy", out, "Error from server (Forbidden)", "prod environment prod-small needs an owner label")

	// A watch sees a change made by another client.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := k.Command(ctx, "get", "environments", "-w", "--output-watch-events")
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = w.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(want ...string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("watch ended before a line with %q", want)
				}
				if all(l, want) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no watch line with %q", want)
			}
		}
	}
	waitLine("ADDED", "checkout-staging")
	other := strings.ReplaceAll(string(manifest), "checkout-staging", "search-dev")
	other = strings.Replace(other, "tier: staging", "tier: dev", 1)
	k.MustRun("create", "-f", k.WriteFile("other.yaml", other))
	waitLine("ADDED", "search-dev")
	kubectltest.WantContains(t, "delete", k.MustRun("delete", "environment", "search-dev"), `environment.platform.example.com "search-dev" deleted`)
	waitLine("DELETED", "search-dev")

	kubectltest.WantContains(t, "readyz", k.MustRun("get", "--raw", "/readyz?verbose"), "[+]ping ok", "[+]storage ok", "[+]shutdown ok", "readyz check passed")
	kubectltest.WantContains(t, "delete", k.MustRun("delete", "-f", f), `environment.platform.example.com "checkout-staging" deleted`)
	if out, ok := k.Run("get", "environment", "checkout-staging"); ok || !strings.Contains(out, `Error from server (NotFound): environments.platform.example.com "checkout-staging" not found`) {
		t.Errorf("get after delete (ok=%v):\n%s", ok, out)
	}

	// Without a client certificate: 401 with a Status body.
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "certs", "environments-serving-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 10 * time.Second}
	resp, err := c.Get(url + "/apis/platform.example.com/v1alpha1/environments")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), `"reason":"Unauthorized"`) {
		t.Errorf("anonymous list: %d %s", resp.StatusCode, body)
	}
}

func all(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestKubectlAsOrdinaryUser: a user the server's policy grants nothing still
// discovers the API and reads the version, as kube-apiserver's bootstrap
// roles allow every authenticated user, and is refused the resources with
// kube's message, not with a failed discovery.
func TestKubectlAsOrdinaryUser(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))

	kubectltest.WantContains(t, "api-resources as bob", k.MustRun("--as=bob", "api-resources", "--api-group=platform.example.com"),
		"environments", "platform.example.com/v1beta1", "Environment")
	// The server's version is the Kubernetes release annex follows, with
	// the program's own version as build metadata: no skew warning.
	v := k.MustRun("--as=bob", "version")
	kubectltest.WantContains(t, "version as bob", v, "Server Version: "+annex.KubernetesVersion+"+")
	if strings.Contains(v, "WARNING") {
		t.Errorf("kubectl version warns:\n%s", v)
	}
	// kubectl auth can-i and whoami: the server answers about its own users.
	if out, ok := k.Run("--as=bob", "auth", "can-i", "list", "environments.platform.example.com"); ok || strings.TrimSpace(out) != "no" {
		t.Errorf("bob can-i list environments: %q (ok %v), want no", out, ok)
	}
	if out := k.MustRun("auth", "can-i", "delete", "environments.platform.example.com", "-n", "default"); strings.TrimSpace(out) != "yes" {
		t.Errorf("admin can-i delete environments: %q, want yes", out)
	}
	if out := k.MustRun("--as=bob", "auth", "can-i", "get", "/version"); strings.TrimSpace(out) != "yes" {
		t.Errorf("bob can-i get /version: %q, want yes", out)
	}
	// can-i --list (SelfSubjectRulesReview) from the in-process RBAC: bob
	// has the bootstrap policy's rules alone; the admin, system:masters, all.
	bobRules := k.MustRun("--as=bob", "auth", "can-i", "--list")
	t.Logf("kubectl auth can-i --list as bob:\n%s", bobRules)
	kubectltest.WantContains(t, "can-i --list as bob", bobRules, "selfsubjectaccessreviews.authorization.k8s.io", "[/version]", "[get]")
	if strings.Contains(bobRules, "environments") || strings.Contains(bobRules, "*.*") {
		t.Errorf("can-i --list as bob lists more than the bootstrap policy:\n%s", bobRules)
	}
	kubectltest.WantContains(t, "can-i --list as admin", k.MustRun("auth", "can-i", "--list", "-n", "default"), "*.*", "[*]")
	kubectltest.WantContains(t, "whoami as bob", k.MustRun("--as=bob", "--as-group=dev", "auth", "whoami"),
		"Username", "bob", "Groups", "[dev system:authenticated]")
	kubectltest.WantContains(t, "whoami as admin", k.MustRun("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"),
		`admin ["system:masters","system:authenticated"]`)
	out, ok := k.Run("--as=bob", "get", "environments")
	if ok {
		t.Fatalf("bob listed environments:\n%s", out)
	}
	kubectltest.WantContains(t, "get as bob", out, `Error from server (Forbidden): environments.platform.example.com is forbidden: `+
		`User "bob" cannot list resource "environments" in API group "platform.example.com" in the namespace "default"`)
	if strings.Contains(out, "couldn't get") || strings.Contains(out, "discovery") {
		t.Errorf("discovery failed for bob:\n%s", out)
	}
}

// TestHelpListsDashDashFlags: the example's flags are kube-style, --name.
func TestHelpListsDashDashFlags(t *testing.T) {
	t.Parallel()
	_, err := parseFlags([]string{"--secure-port=9443", "-v=3", "--logging-format=json", "--etcd-servers=https://127.0.0.1:2379"})
	if err != nil {
		t.Fatalf("kube-style flags: %v", err)
	}
	if _, err := parseFlags([]string{"-secure-port=9443"}); err == nil {
		t.Error("a single-dash long flag was accepted; pflag takes --name only")
	}
}

// TestDisabledAdmissionPlugins: --disable-admission-plugins turns off the
// policies the program declared in Go as it would the same policies from
// files: with ValidatingAdmissionPolicy off, a prod environment without an
// owner label is created; the MutatingAdmissionPolicy still labels it.
func TestDisabledAdmissionPlugins(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t, "--disable-admission-plugins=ValidatingAdmissionPolicy")
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	prod := "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: prod-unowned\n  namespace: default\nspec:\n  owner: search-team\n  tier: prod\n  replicas: 2\n"
	kubectltest.WantContains(t, "create", k.MustRun("create", "-f", k.WriteFile("prod.yaml", prod)), "environment.platform.example.com/prod-unowned created")
	kubectltest.WantContains(t, "mutating policy", k.MustRun("get", "environment", "prod-unowned", "-o", "jsonpath={.metadata.labels.managed-by}"), "annex")
}

// TestKubectlExplainOpenAPIv2: kubectl's plaintext-openapiv2 output reads
// /openapi/v2 as protobuf.
func TestKubectlExplainOpenAPIv2(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	kubectltest.WantContains(t, "explain v2", k.MustRun("explain", "environment.spec.tier", "--output=plaintext-openapiv2"),
		"Tier is the kind of environment: dev, staging or prod.")
}
