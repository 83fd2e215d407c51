package e2e

// The kubelet test: examples/metrics-server with --source kubelet behind the
// real kube-apiserver, scraping fake kubelets (internal/fakekubelet) that
// the cluster's Node objects point at (InternalIP 127.0.0.1, the kubelet
// port in the node status), authenticating to them with its own client
// certificate as metrics-server uses its credentials; kubectl top shows the
// kubelets' numbers through the aggregator, and a node deleted from the
// cluster leaves NodeMetrics.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/e2e/internal/fakekubelet"
	"github.com/annexapi/annex/internal/kubectltest"
)

// kubeletReader lets the example's identity follow nodes and pods and read
// the kubelets' metrics, as metrics-server's ClusterRole does.
const kubeletReader = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-metrics-server:kubelet-reader"}
rules:
- {apiGroups: [""], resources: [nodes/metrics], verbs: [get]}
- {apiGroups: [""], resources: [nodes, pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-metrics-server:kubelet-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-metrics-server:kubelet-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: default}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: default, labels: {app: web}}
spec:
  nodeName: node-1
  containers: [{name: web, image: nginx}, {name: sidecar, image: envoy}]
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: default, labels: {app: db}}
spec:
  nodeName: node-2
  containers: [{name: postgres, image: postgres}]
`

func TestMetricsFromKubelets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kube-apiserver; not in -short")
	}
	exampleBin := buildExample(t)
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	k.MustRun("apply", "-f", k.WriteFile("setup.yaml", clusterSetup))
	k.MustRun("apply", "-f", k.WriteFile("kubelets.yaml", kubeletReader))

	ca, err := fakekubelet.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	caFile := writeFile(t, filepath.Join(t.TempDir(), "kubelet-ca.crt"), ca.CertPEM)
	states := map[string]fakekubelet.State{
		"node-1": {Node: fakekubelet.Usage{CPUCores: 0.25, MemoryBytes: 1536 << 20}, Pods: []fakekubelet.Pod{{Namespace: "default", Name: "web-0",
			Containers: []fakekubelet.Container{{Name: "web", Usage: fakekubelet.Usage{CPUCores: 0.002, MemoryBytes: 12 << 20}}, {Name: "sidecar", Usage: fakekubelet.Usage{CPUCores: 0.001, MemoryBytes: 4 << 20}}}}}},
		"node-2": {Node: fakekubelet.Usage{CPUCores: 1.5, MemoryBytes: 3 << 30}, Pods: []fakekubelet.Pod{{Namespace: "default", Name: "db-0",
			Containers: []fakekubelet.Container{{Name: "postgres", Usage: fakekubelet.Usage{CPUCores: 0.04, MemoryBytes: 256 << 20}}}}}},
	}
	kubelets := map[string]*fakekubelet.Kubelet{}
	for _, n := range []string{"node-1", "node-2"} {
		kl, err := fakekubelet.Start(ca, p.clusterCA.Pool(), states[n])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kl.Close() })
		kubelets[n] = kl
		k.MustRun("patch", "node", n, "--subresource=status", "--type=merge", "-p", fmt.Sprintf(
			`{"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},`+
				`"addresses":[{"type":"Hostname","address":"%s"},{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, n, kl.Port))
	}

	port := freePort(t)
	logs := &lockedBuffer{}
	kubeconfig := p.kubeconfig(t, "example", kasURL, p.exampleUser)
	process(t, "metrics-server", logs, exampleBin,
		"--delegated-auth", "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), "--data-dir="+filepath.Join(t.TempDir(), "data"),
		"--service=metrics-server.kube-system", "--register-apiservice", "--apiservice-port="+strconv.Itoa(port),
		"--source=kubelet", "--kubelet-use-node-status-port", "--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority="+caFile, "--metric-resolution=1s", "-v=2")
	waitUntil(t, 2*time.Minute, "APIService v1beta1.metrics.k8s.io Available=True", logs, func() bool {
		out, _ := k.Run("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return out == "True"
	})

	t.Run("kubectl_top_node", func(t *testing.T) {
		var out string
		waitUntil(t, 30*time.Second, "kubectl top node with both nodes", logs, func() bool {
			out, _ = k.Run("top", "node")
			return strings.Contains(out, "node-1") && strings.Contains(out, "node-2")
		})
		t.Logf("kubectl top node:\n%s", out)
		wantFields(t, out, "node-1", "250m", "6%", "1536Mi", "18%")
		wantFields(t, out, "node-2", "1500m", "37%", "3072Mi", "37%")
	})
	t.Run("kubectl_top_pod", func(t *testing.T) {
		var out string
		waitUntil(t, 30*time.Second, "kubectl top pod with both pods", logs, func() bool {
			out, _ = k.Run("top", "pod", "-n", "default")
			return strings.Contains(out, "web-0") && strings.Contains(out, "db-0")
		})
		t.Logf("kubectl top pod -n default:\n%s", out)
		wantFields(t, out, "web-0", "3m", "16Mi") // two containers summed
		wantFields(t, out, "db-0", "40m", "256Mi")
		out = k.MustRun("top", "pod", "-n", "default", "-l", "app=db", "--containers")
		wantFields(t, out, "db-0", "postgres", "40m", "256Mi")
		if strings.Contains(out, "web-0") {
			t.Errorf("label selector ignored (the pods' labels come from the cluster):\n%s", out)
		}
	})
	t.Run("a_new_sample_reaches_the_api", func(t *testing.T) {
		s := states["node-1"]
		s.Node.CPUCores = 0.5
		kubelets["node-1"].Set(s)
		waitUntil(t, 30*time.Second, "node-1 at 500m", logs, func() bool {
			out, _ := k.Run("top", "node", "node-1", "--no-headers")
			return strings.Contains(out, "500m")
		})
	})
	t.Run("deleted_node_leaves", func(t *testing.T) {
		k.MustRun("delete", "node", "node-2")
		waitUntil(t, 30*time.Second, "NodeMetrics node-2 gone", logs, func() bool {
			out, ok := k.Run("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/node-2")
			return !ok && strings.Contains(out, "NotFound")
		})
		out := k.MustRun("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes")
		if strings.Contains(out, "node-2") || !strings.Contains(out, "node-1") {
			t.Errorf("NodeMetricsList after deleting node-2: %s", out)
		}
	})
	if kubelets["node-1"].Scrapes.Load() < 2 {
		t.Errorf("node-1's kubelet was scraped %d times", kubelets["node-1"].Scrapes.Load())
	}
	if t.Failed() {
		t.Logf("kube-apiserver log tail:\n%s", tail(kasLogs.String(), 3000))
		t.Logf("example log tail:\n%s", tail(logs.String(), 5000))
	}
}
