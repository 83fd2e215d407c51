package kubectltest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunUsesItsOwnKubeconfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\ncurrent-context: only\ncontexts:\n- name: only\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:1}\nusers:\n- name: u\n  user: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := New(t, kc)
	if got := strings.TrimSpace(k.MustRun("config", "current-context")); got != "only" {
		t.Fatalf("current-context = %q", got)
	}
	if _, ok := k.Run("get", "--raw", "/healthz", "--request-timeout=2s"); ok {
		t.Fatal("kubectl against a closed port succeeded")
	}
	p := k.WriteFile("x.yaml", "a")
	if b, err := os.ReadFile(p); err != nil || string(b) != "a" || filepath.Dir(p) != k.Dir {
		t.Fatalf("WriteFile: %q %v in %s", b, err, filepath.Dir(p))
	}
}
