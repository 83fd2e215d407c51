// This file holds the kube-apiserver build. k8s.io/kubernetes cannot be
// `go install`ed: its go.mod replaces every staging module (k8s.io/api,
// k8s.io/apiserver, ...) with ./staging/src/k8s.io/<name> at v0.0.0. The
// wrapper requires k8s.io/kubernetes at KubeVersion and replaces each staging
// module with its published v0.<minor>.<patch>, the same code.

package binaries

import (
	"strings"
	"testing"
)

// KubeVersion is the Kubernetes release the aggregator tests run. 1.33 keeps
// kubectl 1.32 within the supported skew.
const KubeVersion = "v1.33.13"

// kubeStagingModules are the modules k8s.io/kubernetes v1.33.13's go.mod
// replaces with ./staging (read from its go.mod: `go mod download -json
// k8s.io/kubernetes@v1.33.13`, then the replace block).
func kubeStagingModules() []string {
	return []string{
		"k8s.io/api", "k8s.io/apiextensions-apiserver", "k8s.io/apimachinery", "k8s.io/apiserver",
		"k8s.io/cli-runtime", "k8s.io/client-go", "k8s.io/cloud-provider", "k8s.io/cluster-bootstrap",
		"k8s.io/code-generator", "k8s.io/component-base", "k8s.io/component-helpers", "k8s.io/controller-manager",
		"k8s.io/cri-api", "k8s.io/cri-client", "k8s.io/csi-translation-lib", "k8s.io/dynamic-resource-allocation",
		"k8s.io/endpointslice", "k8s.io/externaljwt", "k8s.io/kms", "k8s.io/kube-aggregator",
		"k8s.io/kube-controller-manager", "k8s.io/kube-proxy", "k8s.io/kube-scheduler", "k8s.io/kubectl",
		"k8s.io/kubelet", "k8s.io/metrics", "k8s.io/mount-utils", "k8s.io/pod-security-admission",
		"k8s.io/sample-apiserver", "k8s.io/sample-cli-plugin", "k8s.io/sample-controller",
	}
}

// kubeModule is a wrapper requiring k8s.io/kubernetes at KubeVersion with
// every staging module replaced by its published version. kube-apiserver and
// kube-controller-manager share it, so the second build reuses the first's
// module downloads and most of its build cache.
func kubeModule(name, main string) Module {
	staging := "v0." + strings.TrimPrefix(KubeVersion, "v1.")
	var replace []string
	for _, m := range kubeStagingModules() {
		replace = append(replace, m+" => "+m+" "+staging)
	}
	return Module{
		Name:    name,
		Go:      "1.24.0",
		Require: []Require{{Path: "k8s.io/kubernetes", Version: KubeVersion}},
		Replace: replace,
		Main:    main,
	}
}

// KubeAPIServerModule is the wrapper that builds kube-apiserver: the same
// main as cmd/kube-apiserver.
func KubeAPIServerModule() Module {
	return kubeModule("kube-apiserver", `package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
`)
}

// KubeAPIServer builds kube-apiserver (or finds it in the cache) and returns
// its path. A cold build takes several CPU-minutes.
func KubeAPIServer(t testing.TB) string {
	t.Helper()
	return BuildT(t, KubeAPIServerModule())
}

// KubeControllerManagerModule is the wrapper that builds
// kube-controller-manager: the same main as cmd/kube-controller-manager.
func KubeControllerManagerModule() Module {
	return kubeModule("kube-controller-manager", `package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() { os.Exit(cli.Run(app.NewControllerManagerCommand())) }
`)
}

// KubeControllerManager builds kube-controller-manager (or finds it in the
// cache) and returns its path. A cold build takes several CPU-minutes.
func KubeControllerManager(t testing.TB) string {
	t.Helper()
	return BuildT(t, KubeControllerManagerModule())
}
