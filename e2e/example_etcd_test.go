package e2e

import (
	"context"
	"os"
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
	etcdURL := binaries.Etcd(t)
	bin := buildEnvironments(t)
	kubectl := kubectlPath(t)
	replica := func(name string) (kubeconfig string) {
		dir := t.TempDir()
		logs := &lockedBuffer{}
		process(t, name, logs, bin, "--data-dir", dir, "--secure-port", strconv.Itoa(freePort(t)),
			"--etcd-servers", etcdURL, "--etcd-prefix", "/example-test")
		kubeconfig = filepath.Join(dir, "kubeconfig")
		waitUntil(t, 30*time.Second, name+" ready", logs, func() bool {
			out, err := kubectlCmd(t, kubectl, kubeconfig, "get", "--raw", "/readyz").CombinedOutput()
			return err == nil && strings.TrimSpace(string(out)) == "ok"
		})
		return kubeconfig
	}
	a, b := replica("replica-a"), replica("replica-b")

	manifest := filepath.Join(t.TempDir(), "env.yaml")
	writeFile(t, manifest, []byte(`apiVersion: platform.example.com/v1alpha1
kind: Environment
metadata: {name: shared, namespace: default, labels: {owner: payments}}
spec: {owner: payments-team, tier: staging, replicas: 2}
`))
	run := func(kubeconfig string, args ...string) string {
		t.Helper()
		out, err := kubectlCmd(t, kubectl, kubeconfig, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run(a, "create", "-f", manifest); !strings.Contains(out, "environment.platform.example.com/shared created") {
		t.Fatalf("create through replica a: %s", out)
	}
	if out := run(b, "get", "environment", "shared", "-o", "jsonpath={.spec.owner} {.metadata.labels.managed-by}"); out != "payments-team annex" {
		t.Fatalf("get through replica b: %q", out)
	}
	if out := run(b, "get", "environments", "-A"); !strings.Contains(out, "shared") || !strings.Contains(out, "staging") {
		t.Fatalf("list through replica b: %s", out)
	}
	run(b, "delete", "environment", "shared")
	waitUntil(t, 10*time.Second, "delete seen by replica a", &lockedBuffer{}, func() bool {
		out, err := kubectlCmd(t, kubectl, a, "get", "environment", "shared").CombinedOutput()
		return err != nil && strings.Contains(string(out), "NotFound")
	})
}

// kubectlCmd is kubectl with its own kubeconfig and HOME (no shared
// discovery cache), bounded in time.
func kubectlCmd(t *testing.T, kubectl, kubeconfig string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())
	return cmd
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
