package binaries

import (
	"os/exec"
	"strings"
	"testing"
)

func TestKubeAPIServerModule(t *testing.T) {
	m := KubeAPIServerModule()
	mod := m.GoMod()
	for _, want := range []string{"k8s.io/kubernetes " + KubeVersion, "replace k8s.io/apiserver => k8s.io/apiserver v0.33.13", "replace k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.33.13"} {
		if !strings.Contains(mod, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, mod)
		}
	}
	if testing.Short() {
		return
	}
	// The build itself (cached): the binary runs and names its flags.
	out, err := exec.Command(KubeAPIServer(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-apiserver --help: %v\n%s", err, out)
	}
	for _, flag := range []string{"--enable-aggregator-routing", "--proxy-client-cert-file", "--requestheader-client-ca-file"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("kube-apiserver --help lacks %s", flag)
		}
	}
}
