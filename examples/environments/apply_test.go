package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/annexapi/annex/internal/kubectltest"
)

// TestKubectlServerSideApply runs server-side apply as kubectl does: two
// managers conflict with kube's message, --force-conflicts takes the field
// over, kubectl diff (a server-side dry-run apply) shows a change and
// changes nothing, and a client-side apply is taken over by a server-side
// one with no conflict.
func TestKubectlServerSideApply(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	env := func(name, replicas string) string {
		return "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: " + name +
			"\n  namespace: default\nspec:\n  owner: payments-team\n  replicas: " + replicas + "\n"
	}
	kubectltest.WantContains(t, "first apply", k.MustRun("apply", "--server-side", "-f", k.WriteFile("a.yaml", env("ssa", "2"))),
		"environment.platform.example.com/ssa serverside-applied")
	out, ok := k.Run("apply", "--server-side", "--field-manager=deployer", "-f", k.WriteFile("b.yaml", env("ssa", "3")))
	if ok {
		t.Fatalf("a second manager's apply did not conflict:\n%s", out)
	}
	kubectltest.WantContains(t, "conflict", out, `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`)
	kubectltest.WantContains(t, "forced apply", k.MustRun("apply", "--server-side", "--field-manager=deployer", "--force-conflicts", "-f", k.WriteFile("b.yaml", env("ssa", "3"))),
		"environment.platform.example.com/ssa serverside-applied")
	got := k.MustRun("get", "environment", "ssa", "-o", `jsonpath={.spec.replicas} {range .metadata.managedFields[*]}{.manager}:{.operation}:{.fieldsV1}{" "}{end}`)
	for _, want := range []string{"3 ", `deployer:Apply:{"f:spec":{"f:owner":{},"f:replicas":{}}}`, `kubectl:Apply:{"f:spec":{"f:owner":{}}}`} {
		if !strings.Contains(got, want) {
			t.Errorf("after the forced apply: %q, want %q in it", got, want)
		}
	}
	if strings.Contains(k.MustRun("get", "environment", "ssa", "-o", "yaml"), "managedFields") {
		t.Error("kubectl get -o yaml shows managedFields without --show-managed-fields")
	}
	kubectltest.WantContains(t, "--show-managed-fields", k.MustRun("get", "environment", "ssa", "-o", "yaml", "--show-managed-fields"), "managedFields:", "manager: deployer")

	// kubectl diff exits 1 when there are differences.
	out, ok = k.Run("diff", "--server-side", "--field-manager=deployer", "-f", k.WriteFile("c.yaml", env("ssa", "4")))
	if ok {
		t.Fatalf("kubectl diff found no difference:\n%s", out)
	}
	kubectltest.WantContains(t, "diff", out, "-  replicas: 3", "+  replicas: 4")
	if got := k.MustRun("get", "environment", "ssa", "-o", "jsonpath={.spec.replicas}"); got != "3" {
		t.Fatalf("kubectl diff changed the object: replicas %s", got)
	}

	// Client-side apply, then server-side apply of a changed manifest: the
	// last-applied annotation lets kubectl take the fields over cleanly.
	k.MustRun("apply", "-f", k.WriteFile("csa.yaml", env("csa", "1")))
	kubectltest.WantContains(t, "upgrade to server-side apply", k.MustRun("apply", "--server-side", "-f", k.WriteFile("csa2.yaml", env("csa", "5"))),
		"environment.platform.example.com/csa serverside-applied")
	got = k.MustRun("get", "environment", "csa", "-o", `jsonpath={.spec.replicas} {.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration} {range .metadata.managedFields[*]}{.manager}:{.operation}{" "}{end}`)
	for _, want := range []string{"5 ", `"replicas":5`, "kubectl:Apply"} {
		if !strings.Contains(got, want) {
			t.Errorf("after the upgrade: %q, want %q in it", got, want)
		}
	}
}
