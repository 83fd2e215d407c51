package e2e

import (
	"bufio"
	"context"
	"github.com/annexapi/annex/internal/kubectltest"
	"io"
	"strings"
	"testing"
	"time"
)

func newKubectl(t *testing.T, s *server) *kubectltest.Kubectl {
	return kubectltest.New(t, s.kubeconfig)
}

const manifest = `apiVersion: platform.example.com/v1alpha1
kind: Environment
metadata:
  name: checkout
  namespace: team-a
spec:
  owner: payments
  tier: %s
`

func TestKubectl(t *testing.T) {
	testKubectl(t, startServer(t))
}

// testKubectl runs kubectl's cases against s.
func testKubectl(t *testing.T, s *server) {
	k := newKubectl(t, s)

	f := k.WriteFile("env.yaml", strings.Replace(manifest, "%s", "staging", 1))
	kubectltest.WantContains(t, "apply (create)", k.MustRun("apply", "-f", f), "environment.platform.example.com/checkout created")
	f = k.WriteFile("env.yaml", strings.Replace(manifest, "%s", "prod", 1))
	kubectltest.WantContains(t, "apply (change)", k.MustRun("apply", "-f", f), "environment.platform.example.com/checkout configured")
	kubectltest.WantContains(t, "apply (again)", k.MustRun("apply", "-f", f), "environment.platform.example.com/checkout unchanged")

	get := k.MustRun("get", "environments", "-n", "team-a")
	kubectltest.WantContains(t, "get", get, "NAME", "TIER", "OWNER", "AGE", "checkout", "prod", "payments")
	if strings.Contains(get, "REPLICAS") {
		t.Errorf("priority-1 column shown without -o wide:\n%s", get)
	}
	kubectltest.WantContains(t, "get -o wide", k.MustRun("get", "env", "-n", "team-a", "-o", "wide"), "REPLICAS", "1")
	kubectltest.WantContains(t, "get -A", k.MustRun("get", "environments", "-A"), "NAMESPACE", "team-a", "checkout")
	kubectltest.WantContains(t, "get -o yaml", k.MustRun("get", "environment", "checkout", "-n", "team-a", "-o", "yaml"),
		"apiVersion: platform.example.com/v1alpha1", "kind: Environment", "tier: prod", "generation: 2")

	kubectltest.WantContains(t, "explain spec", k.MustRun("explain", "environments.spec"),
		"KIND:", "Environment", "Spec is the desired state of the environment.", "owner", "tier")
	kubectltest.WantContains(t, "explain spec.tier", k.MustRun("explain", "environment.spec.tier"),
		"Tier is the stage of the environment: dev, staging or prod.")

	kubectltest.WantContains(t, "patch merge", k.MustRun("patch", "environment", "checkout", "-n", "team-a", "--type=merge", "-p", `{"spec":{"replicas":3}}`),
		"environment.platform.example.com/checkout patched")
	kubectltest.WantContains(t, "patch json", k.MustRun("patch", "environment", "checkout", "-n", "team-a", "--type=json", "-p", `[{"op":"replace","path":"/spec/owner","value":"growth"}]`),
		"environment.platform.example.com/checkout patched")
	kubectltest.WantContains(t, "after patches", k.MustRun("get", "environment", "checkout", "-n", "team-a", "-o", "jsonpath={.spec.replicas}/{.spec.owner}"), "3/growth")
	out, ok := k.Run("patch", "environment", "checkout", "-n", "team-a", "-p", `{"spec":{"replicas":4}}`)
	if ok {
		t.Errorf("strategic merge patch succeeded:\n%s", out)
	}
	kubectltest.WantContains(t, "strategic patch", out, "application/strategic-merge-patch+json is not supported by platform.example.com/v1alpha1, Kind=Environment")
	out, ok = k.Run("apply", "-f", k.WriteFile("bad.yaml", strings.Replace(manifest, "%s", "prod\n  colour: blue", 1)))
	if ok {
		t.Errorf("apply with an unknown field succeeded:\n%s", out)
	}
	kubectltest.WantContains(t, "strict apply", out, `unknown field "spec.colour"`)

	t.Run("get_watch", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := k.Command(ctx, "get", "environments", "-n", "team-a", "-w", "--output-watch-events")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		next := func() string {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("kubectl get -w ended")
				}
				return l
			case <-ctx.Done():
				t.Fatal("timed out waiting for kubectl get -w")
			}
			return ""
		}
		kubectltest.WantContains(t, "watch header", next(), "EVENT", "NAME", "TIER")
		kubectltest.WantContains(t, "watch initial", next(), "ADDED", "checkout")
		k.MustRun("patch", "environment", "checkout", "-n", "team-a", "--type=merge", "-p", `{"spec":{"tier":"dev"}}`)
		kubectltest.WantContains(t, "watch modified", next(), "MODIFIED", "checkout", "dev")
		k.MustRun("delete", "environment", "checkout", "-n", "team-a")
		kubectltest.WantContains(t, "watch deleted", next(), "DELETED", "checkout")
	})
	out, ok = k.Run("get", "environment", "checkout", "-n", "team-a")
	if ok || !strings.Contains(out, "NotFound") {
		t.Errorf("get after delete:\n%s", out)
	}
}
