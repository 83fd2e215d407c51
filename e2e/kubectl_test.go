package e2e

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type kubectl struct {
	t    *testing.T
	path string
	env  []string
	dir  string
}

func newKubectl(t *testing.T, s *server) *kubectl {
	home := t.TempDir()
	return &kubectl{t: t, path: kubectlPath(t), dir: t.TempDir(),
		env: append(os.Environ(), "KUBECONFIG="+s.kubeconfig, "HOME="+home, "KUBECACHEDIR="+filepath.Join(home, "cache"))}
}

func (k *kubectl) run(args ...string) (string, bool) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.path, args...)
	cmd.Env, cmd.Dir = k.env, k.dir
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func (k *kubectl) mustRun(args ...string) string {
	k.t.Helper()
	out, ok := k.run(args...)
	if !ok {
		k.t.Fatalf("kubectl %s failed:\n%s", strings.Join(args, " "), out)
	}
	return out
}

func (k *kubectl) file(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, got)
		}
	}
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
	s := startServer(t)
	k := newKubectl(t, s)

	f := k.file("env.yaml", strings.Replace(manifest, "%s", "staging", 1))
	wantContains(t, "apply (create)", k.mustRun("apply", "-f", f), "environment.platform.example.com/checkout created")
	f = k.file("env.yaml", strings.Replace(manifest, "%s", "prod", 1))
	wantContains(t, "apply (change)", k.mustRun("apply", "-f", f), "environment.platform.example.com/checkout configured")
	wantContains(t, "apply (again)", k.mustRun("apply", "-f", f), "environment.platform.example.com/checkout unchanged")

	get := k.mustRun("get", "environments", "-n", "team-a")
	wantContains(t, "get", get, "NAME", "TIER", "OWNER", "AGE", "checkout", "prod", "payments")
	if strings.Contains(get, "REPLICAS") {
		t.Errorf("priority-1 column shown without -o wide:\n%s", get)
	}
	wantContains(t, "get -o wide", k.mustRun("get", "env", "-n", "team-a", "-o", "wide"), "REPLICAS", "1")
	wantContains(t, "get -A", k.mustRun("get", "environments", "-A"), "NAMESPACE", "team-a", "checkout")
	wantContains(t, "get -o yaml", k.mustRun("get", "environment", "checkout", "-n", "team-a", "-o", "yaml"),
		"apiVersion: platform.example.com/v1alpha1", "kind: Environment", "tier: prod", "generation: 2")

	wantContains(t, "explain spec", k.mustRun("explain", "environments.spec"),
		"KIND:", "Environment", "Spec is the desired state of the environment.", "owner", "tier")
	wantContains(t, "explain spec.tier", k.mustRun("explain", "environment.spec.tier"),
		"Tier is the stage of the environment: dev, staging or prod.")

	wantContains(t, "patch merge", k.mustRun("patch", "environment", "checkout", "-n", "team-a", "--type=merge", "-p", `{"spec":{"replicas":3}}`),
		"environment.platform.example.com/checkout patched")
	wantContains(t, "patch json", k.mustRun("patch", "environment", "checkout", "-n", "team-a", "--type=json", "-p", `[{"op":"replace","path":"/spec/owner","value":"growth"}]`),
		"environment.platform.example.com/checkout patched")
	wantContains(t, "after patches", k.mustRun("get", "environment", "checkout", "-n", "team-a", "-o", "jsonpath={.spec.replicas}/{.spec.owner}"), "3/growth")
	out, ok := k.run("patch", "environment", "checkout", "-n", "team-a", "-p", `{"spec":{"replicas":4}}`)
	if ok {
		t.Errorf("strategic merge patch succeeded:\n%s", out)
	}
	wantContains(t, "strategic patch", out, "application/strategic-merge-patch+json is not supported by platform.example.com/v1alpha1, Kind=Environment")
	out, ok = k.run("apply", "-f", k.file("bad.yaml", strings.Replace(manifest, "%s", "prod\n  colour: blue", 1)))
	if ok {
		t.Errorf("apply with an unknown field succeeded:\n%s", out)
	}
	wantContains(t, "strict apply", out, `unknown field "spec.colour"`)

	t.Run("get_watch", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, k.path, "get", "environments", "-n", "team-a", "-w", "--output-watch-events")
		cmd.Env, cmd.Dir = k.env, k.dir
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
		wantContains(t, "watch header", next(), "EVENT", "NAME", "TIER")
		wantContains(t, "watch initial", next(), "ADDED", "checkout")
		k.mustRun("patch", "environment", "checkout", "-n", "team-a", "--type=merge", "-p", `{"spec":{"tier":"dev"}}`)
		wantContains(t, "watch modified", next(), "MODIFIED", "checkout", "dev")
		k.mustRun("delete", "environment", "checkout", "-n", "team-a")
		wantContains(t, "watch deleted", next(), "DELETED", "checkout")
	})
	out, ok = k.run("get", "environment", "checkout", "-n", "team-a")
	if ok || !strings.Contains(out, "NotFound") {
		t.Errorf("get after delete:\n%s", out)
	}
}
