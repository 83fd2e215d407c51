package e2e

// The deploy test: the examples' Helm charts rendered by helm (built from the
// Go module proxy) are the committed manifests, every one passes a
// server-side dry run against the real kube-apiserver (with cert-manager's
// own CRDs, from its module), and the environments example deployed with its
// manifest's RBAC registers itself behind kube-aggregator.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/internal/kubectltest"
	"sigs.k8s.io/yaml"
)

// certManagerVersion is the cert-manager release whose CRDs (Issuer,
// Certificate) the cert-manager variants are dry-run against.
const certManagerVersion = "v1.21.2"

// rendering is one committed manifest: a chart rendered with values.
type rendering struct {
	file, chart, release, namespace string
	set                             []string
	about                           string
}

func renderings() []rendering {
	return []rendering{
		{file: "examples/environments/deploy/environments.yaml", chart: "examples/environments/chart", release: "environments", namespace: "annex-environments",
			about: "The environments example on an embedded bbolt file: a StatefulSet of one with a PersistentVolumeClaim,\n# a serving certificate generated in the data directory and its APIServices created by the server\n# (--register-apiservice)."},
		{file: "examples/environments/deploy/environments-etcd.yaml", chart: "examples/environments/chart", release: "environments", namespace: "annex-environments",
			set: []string{"storage.backend=etcd", "replicas=3", "certificates.mode=cert-manager",
				"storage.etcd.servers={https://etcd-0.etcd.annex-environments.svc:2379,https://etcd-1.etcd.annex-environments.svc:2379,https://etcd-2.etcd.annex-environments.svc:2379}",
				"storage.etcd.clientSecret=environments-etcd-client"},
			about: "The environments example, three replicas on etcd (client TLS from the Secret environments-etcd-client:\n# ca.crt, tls.crt, tls.key), with a serving certificate from cert-manager whose CA injector fills the\n# APIServices' caBundle."},
		{file: "examples/metrics-server/deploy/metrics-server.yaml", chart: "examples/metrics-server/chart", release: "metrics-server", namespace: "annex-metrics",
			about: "The metrics-server example, registering v1beta1.metrics.k8s.io itself with the CA it generates\n# (--register-apiservice)."},
		{file: "examples/metrics-server/deploy/metrics-server-cert-manager.yaml", chart: "examples/metrics-server/chart", release: "metrics-server", namespace: "annex-metrics",
			set:   []string{"certificates.mode=cert-manager", "replicas=2", "kubelet.insecureTLS=true"},
			about: "The metrics-server example, two replicas with a serving certificate from cert-manager, whose CA\n# injector fills the APIService's caBundle, scraping kubelets whose certificates are self-signed\n# (--kubelet-insecure-tls, as on kind)."},
	}
}

// helmTemplate renders r with helm; the manifest is a header, the Namespace
// and helm's output.
func helmTemplate(t *testing.T, helm string, r rendering) string {
	t.Helper()
	args := []string{"template", r.release, r.chart, "--namespace", r.namespace}
	for _, s := range r.set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helm, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	cmdline := "helm " + strings.Join(args, " ")
	return fmt.Sprintf("# %s\n#\n# Rendered from the chart by e2e/deploy_test.go (ANNEX_UPDATE_MANIFESTS=1 rewrites it):\n#   %s\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n%s",
		r.about, cmdline, r.namespace, out)
}

// TestDeployManifests: each committed manifest is its chart rendered, the
// charts refuse impossible values, and every manifest passes a server-side
// dry run.
func TestDeployManifests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helm and kube-apiserver; not in -short")
	}
	helm := binaries.Helm(t)
	update := os.Getenv("ANNEX_UPDATE_MANIFESTS") != ""
	for _, r := range renderings() {
		got := helmTemplate(t, helm, r)
		path := filepath.Join("..", r.file)
		if update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil || string(want) != got {
			t.Errorf("%s is not its chart rendered (%v); rerun with ANNEX_UPDATE_MANIFESTS=1", r.file, err)
		}
	}

	lint := exec.Command(helm, "lint", "--strict", "examples/environments/chart", "examples/metrics-server/chart")
	lint.Dir = ".."
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("helm lint --strict: %v\n%s", err, out)
	}

	for _, bad := range []struct {
		chart string
		set   []string
		want  string
	}{
		{"examples/environments/chart", []string{"replicas=3"}, "replicas > 1 needs storage.backend etcd"},
		{"examples/environments/chart", []string{"storage.backend=etcd"}, "storage.backend etcd needs storage.etcd.servers"},
		{"examples/environments/chart", []string{"storage.backend=etcd", "storage.etcd.servers={https://etcd:2379}"}, "with etcd use cert-manager"},
		{"examples/environments/chart", []string{"storage.backend=postgres"}, `storage.backend "postgres": want bbolt or etcd`},
		{"examples/metrics-server/chart", []string{"replicas=2"}, "replicas > 1 needs certificates.mode cert-manager"},
		{"examples/metrics-server/chart", []string{"source=prometheus"}, `source "prometheus": want kubelet or simulated`},
	} {
		args := []string{"template", "x", bad.chart}
		for _, s := range bad.set {
			args = append(args, "--set", s)
		}
		cmd := exec.Command(helm, args...)
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), bad.want) {
			t.Errorf("helm %s: %v, want an error saying %q; got\n%s", strings.Join(args, " "), err, bad.want, out)
		}
	}

	p := newPKI(t)
	kasURL, _ := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	crds := certManagerCRDs(t)
	k.MustRun("apply", "-f", crds[0], "-f", crds[1])
	k.MustRun("wait", "--for=condition=Established", "--timeout=60s", "crd/issuers.cert-manager.io", "crd/certificates.cert-manager.io")
	for _, ns := range []string{"annex-environments", "annex-metrics"} {
		k.MustRun("create", "namespace", ns)
	}
	for _, r := range renderings() {
		abs, _ := filepath.Abs(filepath.Join("..", r.file))
		out, ok := k.Run("apply", "--dry-run=server", "-f", abs)
		if !ok {
			t.Errorf("server-side dry run of %s failed:\n%s", r.file, out)
			continue
		}
		if n := strings.Count(out, "(server dry run)"); n < 10 {
			t.Errorf("server-side dry run of %s: %d objects:\n%s", r.file, n, out)
		}
	}
}

// certManagerCRDs are the Issuer and Certificate CRDs of cert-manager's
// module, downloaded through the Go module proxy.
func certManagerCRDs(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/cert-manager/cert-manager@"+certManagerVersion)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download cert-manager: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download cert-manager: %v %s", err, out)
	}
	return []string{filepath.Join(mod.Dir, "deploy/crds/cert-manager.io_issuers.yaml"), filepath.Join(mod.Dir, "deploy/crds/cert-manager.io_certificates.yaml")}
}

// TestEnvironmentsRegistersItself: the environments example, run as the
// ServiceAccount of its manifest (so with exactly that RBAC), registers both
// versions behind kube-aggregator with the CA it generated, and kubectl
// reaches it through the aggregator.
func TestEnvironmentsRegistersItself(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kube-apiserver; not in -short")
	}
	bin := buildEnvironments(t)
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	k.MustRun("apply", "-f", absPath(t, "../examples/environments/deploy/environments.yaml"))
	// No kubelet runs the StatefulSet: the example runs here, on loopback,
	// behind an ExternalName Service (see aggregator_test.go).
	k.MustRun("delete", "service", "-n", "annex-environments", "environments")
	k.MustRun("create", "service", "externalname", "environments", "-n", "annex-environments", "--external-name", "localhost")
	token := strings.TrimSpace(k.MustRun("create", "token", "environments", "-n", "annex-environments", "--duration=1h"))
	kubeconfig := writeFile(t, filepath.Join(t.TempDir(), "sa.kubeconfig"), fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: environments, user: {token: %q}}]
contexts: [{name: e2e, context: {cluster: e2e, user: environments}}]
current-context: e2e
`, kasURL, p.file("cluster-ca.crt"), token))

	// The StatefulSet's own arguments, then what differs here: loopback, a
	// temporary data directory, the Service's port and the token's
	// kubeconfig in place of the pod's in-cluster configuration.
	port := freePort(t)
	args := append(manifestArgs(t, "../examples/environments/deploy/environments.yaml", "StatefulSet"),
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), "--data-dir="+filepath.Join(t.TempDir(), "data"),
		"--apiservice-port="+strconv.Itoa(port))
	logs := &lockedBuffer{}
	process(t, "environments", logs, bin, args...)

	for _, v := range []string{"v1beta1", "v1alpha1"} {
		name := v + ".platform.example.com"
		waitUntil(t, 2*time.Minute, "APIService "+name+" Available=True", logs, func() bool {
			out, _ := k.Run("get", "apiservice", name, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
			return out == "True"
		})
		out := k.MustRun("get", "apiservice", name, "-o", "jsonpath={.spec.insecureSkipTLSVerify}/{.spec.groupPriorityMinimum}/{.spec.versionPriority}/{.spec.service.name}.{.spec.service.namespace}/{.spec.caBundle}")
		if !strings.HasPrefix(out, "/1000/100/environments.annex-environments/LS0t") { // base64 of "---"
			t.Errorf("APIService %s: want no insecureSkipTLSVerify, kube's CRD priorities, the Service and a PEM caBundle; got %q", name, out)
		}
	}
	k.MustRun("create", "-f", absPath(t, "../examples/environments/environment.yaml"))
	out := k.MustRun("get", "environments.v1alpha1.platform.example.com", "checkout-staging", "-o", "jsonpath={.spec.owner}")
	if out != "payments-team" {
		t.Errorf("through the aggregator at v1alpha1: owner %q; kube-apiserver log tail:\n%s", out, tail(kasLogs.String(), 3000))
	}
	out = k.MustRun("get", "environments", "-o", "name")
	kubectltest.WantContains(t, "kubectl get environments", out, "environment.platform.example.com/checkout-staging")
	out = k.MustRun("get", "--raw", "/apis/platform.example.com/v1beta1")
	kubectltest.WantContains(t, "discovery through the aggregator", out, `"name":"environments"`)
}

// absPath is p made absolute (kubectltest runs kubectl in a directory of its
// own).
func absPath(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// manifestArgs are the container arguments of the workload of kind in the
// manifest at path.
func manifestArgs(t *testing.T, path, kind string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var w struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct{ Args []string }
					}
				}
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &w); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if w.Kind == kind && len(w.Spec.Template.Spec.Containers) > 0 {
			return w.Spec.Template.Spec.Containers[0].Args
		}
	}
	t.Fatalf("%s has no %s", path, kind)
	return nil
}
