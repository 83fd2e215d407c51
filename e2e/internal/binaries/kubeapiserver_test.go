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

func TestKubeControllerManagerModule(t *testing.T) {
	m := KubeControllerManagerModule()
	if a := KubeAPIServerModule(); m.GoMod() != strings.Replace(a.GoMod(), "annexe2e/kube-apiserver", "annexe2e/kube-controller-manager", 1) {
		t.Errorf("kube-controller-manager's go.mod differs from kube-apiserver's beyond the module name:\n%s\n%s", m.GoMod(), a.GoMod())
	}
	if testing.Short() {
		return
	}
	out, err := exec.Command(KubeControllerManager(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-controller-manager --help: %v\n%s", err, out)
	}
	for _, flag := range []string{"--controllers", "--leader-elect", "--use-service-account-credentials"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("kube-controller-manager --help lacks %s", flag)
		}
	}
}
