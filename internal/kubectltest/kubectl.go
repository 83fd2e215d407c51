// This file holds Kubectl, a kubectl bound to one kubeconfig.

package kubectltest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Path finds kubectl, failing the test when ANNEX_REQUIRE_KUBECTL is set and
// kubectl is missing, skipping it otherwise.
func Path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("ANNEX_REQUIRE_KUBECTL") != "" {
			t.Fatalf("kubectl is required: %v", err)
		}
		t.Skip("kubectl not found; set ANNEX_REQUIRE_KUBECTL=1 to make this a failure")
	}
	return p
}

// Kubectl runs kubectl with one kubeconfig, in a working directory of its
// own (Dir) where WriteFile puts manifests.
type Kubectl struct {
	t    testing.TB
	path string
	env  []string
	// Dir is the working directory of every command.
	Dir string
}

// New returns a Kubectl for kubeconfig, with a fresh HOME and cache.
func New(t testing.TB, kubeconfig string) *Kubectl {
	t.Helper()
	home := t.TempDir()
	return &Kubectl{t: t, path: Path(t), Dir: t.TempDir(),
		env: append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+home, "KUBECACHEDIR="+filepath.Join(home, "cache"))}
}

// Command returns kubectl with args, ready to start (for streams such as
// get -w); ctx bounds it.
func (k *Kubectl) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.path, args...)
	cmd.Env, cmd.Dir = k.env, k.Dir
	return cmd
}

// Run runs kubectl (at most 60s) and returns its combined output and whether
// it succeeded.
func (k *Kubectl) Run(args ...string) (string, bool) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := k.Command(ctx, args...).CombinedOutput()
	return string(out), err == nil
}

// MustRun is Run that fails the test when kubectl fails.
func (k *Kubectl) MustRun(args ...string) string {
	k.t.Helper()
	out, ok := k.Run(args...)
	if !ok {
		k.t.Fatalf("kubectl %s failed:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// WriteFile writes content to name in Dir and returns its path.
func (k *Kubectl) WriteFile(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.Dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// WantContains reports every one of wants that got lacks.
func WantContains(t testing.TB, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, got)
		}
	}
}
