package e2e

import (
	"github.com/annexapi/annex/internal/kubectltest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/e2e/internal/binaries"
)

// TestEnvironmentsExampleOnEtcd runs two replicas of the environments example
// with --etcd-servers on one real etcd: an object created through one is
// read, listed and deleted through the other, with kubectl.
func TestEnvironmentsExampleOnEtcd(t *testing.T) {
	testEnvironmentsExampleOn(t, binaries.Etcd(t))
}

// testEnvironmentsExampleOn runs the two-replica example case on the etcd
// (or kine) at etcdURL.
func testEnvironmentsExampleOn(t *testing.T, etcdURL string) {
	bin := buildEnvironments(t)
	replica := func(name string) *kubectltest.Kubectl {
		k, _, _ := runExample(t, bin, name, "--etcd-servers", etcdURL, "--etcd-prefix", "/example-test")
		return k
	}
	a, b := replica("replica-a"), replica("replica-b")

	manifest := filepath.Join(t.TempDir(), "env.yaml")
	writeFile(t, manifest, []byte(`apiVersion: platform.example.com/v1alpha1
kind: Environment
metadata: {name: shared, namespace: default, labels: {owner: payments}}
spec: {owner: payments-team, tier: staging, replicas: 2}
`))
	if out := a.MustRun("create", "-f", manifest); !strings.Contains(out, "environment.platform.example.com/shared created") {
		t.Fatalf("create through replica a: %s", out)
	}
	if out := b.MustRun("get", "environment", "shared", "-o", "jsonpath={.spec.owners[0]} {.metadata.labels.managed-by}"); out != "payments-team annex" {
		t.Fatalf("get through replica b: %q", out)
	}
	if out := b.MustRun("get", "environments", "-A"); !strings.Contains(out, "shared") || !strings.Contains(out, "staging") {
		t.Fatalf("list through replica b: %s", out)
	}
	b.MustRun("delete", "environment", "shared")
	waitUntil(t, 10*time.Second, "delete seen by replica a", &lockedBuffer{}, func() bool {
		out, ok := a.Run("get", "environment", "shared")
		return !ok && strings.Contains(out, "NotFound")
	})
}

// runExample runs the example binary bin as process name, on a free port
// with its own data directory and args, until it is ready; it returns
// kubectl on its kubeconfig, the kubeconfig's path and the process's logs.
func runExample(t *testing.T, bin, name string, args ...string) (*kubectltest.Kubectl, string, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	logs := &lockedBuffer{}
	process(t, name, logs, bin, append([]string{"--data-dir", dir, "--secure-port", strconv.Itoa(freePort(t))}, args...)...)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	k := kubectltest.New(t, kubeconfig)
	waitUntil(t, 30*time.Second, name+" ready", logs, func() bool {
		out, ok := k.Run("get", "--raw", "/readyz")
		return ok && strings.TrimSpace(out) == "ok"
	})
	return k, kubeconfig, logs
}

// buildEnvironments builds examples/environments from this checkout.
func buildEnvironments(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "environments")
	build := exec.Command("go", "build", "-o", bin, "./examples/environments")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	return bin
}
