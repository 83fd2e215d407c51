package e2e

// The aggregator test: examples/metrics-server behind a real kube-apiserver
// (built from the Go module proxy by internal/binaries) and a real etcd, as
// it is deployed: registered through an APIService it writes itself (with the
// caBundle of its generated serving CA), reached through kube-aggregator with
// the front-proxy client certificate, and authorizing with delegated
// SubjectAccessReviews.
//
// Routing: the kube-apiserver refuses Endpoints and EndpointSlices that point
// at loopback, so the Service is an ExternalName service ("localhost") and
// aggregator routing is off: kube-aggregator then dials <externalName>:<the
// APIService's port> and still verifies the certificate for
// metrics-server.kube-system.svc.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/annexapi/annex/internal/kubectltest"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
)

// lockedBuffer collects a process's output for assertions.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// process runs cmd until the test ends (SIGTERM, then SIGKILL after 10s),
// or until the returned stop is called (the same, once).
func process(t *testing.T, name string, out io.Writer, bin string, args ...string) (stop func()) {
	t.Helper()
	_, stop = processCmd(t, name, out, bin, args...)
	return stop
}

// processCmd is process that also returns the started command (its pid).
func processCmd(t *testing.T, name string, out io.Writer, bin string, args ...string) (cmd *exec.Cmd, stop func()) {
	t.Helper()
	cmd = exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	return cmd, stop
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pki is what the test cluster is started with.
type pki struct {
	dir                         string
	clusterCA, frontProxyCA     *certs.CA
	serving, admin, proxyClient *certs.KeyPair
	exampleUser                 *certs.KeyPair
	saKey                       string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p.clusterCA, err = certs.NewCA(certs.CAConfig{Name: "e2e-cluster-ca"})
	must(err)
	p.frontProxyCA, err = certs.NewCA(certs.CAConfig{Name: "e2e-front-proxy-ca"})
	must(err)
	p.serving, err = p.clusterCA.Issue(certs.Request{CommonName: "kube-apiserver", DNSNames: []string{"localhost", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}})
	must(err)
	p.admin, err = p.clusterCA.Issue(certs.Request{CommonName: "e2e-admin", Organization: []string{"system:masters"}})
	must(err)
	// The example's own identity towards the cluster (TokenReview, SAR,
	// the ConfigMap, its APIService), bound by RBAC below.
	p.exampleUser, err = p.clusterCA.Issue(certs.Request{CommonName: "annex-metrics-server"})
	must(err)
	p.proxyClient, err = p.frontProxyCA.Issue(certs.Request{CommonName: "front-proxy-client"})
	must(err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	der, err := x509.MarshalECPrivateKey(key)
	must(err)
	p.saKey = writeFile(t, filepath.Join(p.dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	for name, b := range map[string][]byte{
		"cluster-ca.crt": p.clusterCA.CertPEM, "front-proxy-ca.crt": p.frontProxyCA.CertPEM,
		"serving.crt": p.serving.CertPEM, "serving.key": p.serving.KeyPEM,
		"proxy-client.crt": p.proxyClient.CertPEM, "proxy-client.key": p.proxyClient.KeyPEM,
	} {
		writeFile(t, filepath.Join(p.dir, name), b)
	}
	return p
}

func (p *pki) file(name string) string { return filepath.Join(p.dir, name) }

// kubeconfig writes a kubeconfig for server with the given client pair.
func (p *pki) kubeconfig(t *testing.T, name, server string, kp *certs.KeyPair) string {
	t.Helper()
	path := filepath.Join(p.dir, name+".kubeconfig")
	if err := certs.WriteKubeconfig(path, certs.Kubeconfig{Server: server, CAPEM: p.clusterCA.CertPEM,
		ClientCertPEM: kp.CertPEM, ClientKeyPEM: kp.KeyPEM, ClusterName: "e2e", UserName: name}); err != nil {
		t.Fatal(err)
	}
	return path
}

// startKubeAPIServer runs kube-apiserver on loopback with the front-proxy
// (request-header) and proxy-client flags, and waits for /readyz.
// Extra flags are appended.
func startKubeAPIServer(t *testing.T, p *pki, etcdURL string, extra ...string) (url string, logs *lockedBuffer) {
	t.Helper()
	url, logs, _ = startStoppableKubeAPIServer(t, p, etcdURL, extra...)
	return url, logs
}

// startStoppableKubeAPIServer is startKubeAPIServer that also returns a
// function stopping the kube-apiserver before the test ends.
func startStoppableKubeAPIServer(t *testing.T, p *pki, etcdURL string, extra ...string) (url string, logs *lockedBuffer, stop func()) {
	t.Helper()
	bin := binaries.KubeAPIServer(t)
	port := freePort(t)
	logs = &lockedBuffer{}
	stop = process(t, "kube-apiserver", logs, bin, append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(p.dir, "kas-certs"),
		"--tls-cert-file=" + p.file("serving.crt"), "--tls-private-key-file=" + p.file("serving.key"),
		"--client-ca-file=" + p.file("cluster-ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + p.saKey,
		"--service-account-signing-key-file=" + p.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file=" + p.file("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.file("proxy-client.crt"), "--proxy-client-key-file=" + p.file("proxy-client.key"),
		"--enable-aggregator-routing=false",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}, extra...)...,
	)
	url = "https://127.0.0.1:" + strconv.Itoa(port)
	c := p.client(t)
	waitUntil(t, 3*time.Minute, "kube-apiserver /readyz", logs, func() bool {
		resp, err := c.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return url, logs, stop
}

// client is an HTTPS client presenting the admin certificate.
func (p *pki) client(t *testing.T) *http.Client {
	t.Helper()
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: p.clusterCA.Pool(), Certificates: []tls.Certificate{p.admin.TLSCertificate()}}}}
}

// waitUntil polls cond every 200ms until it holds or d passes; logs are
// printed on failure.
func waitUntil(t *testing.T, d time.Duration, what string, logs fmt.Stringer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tail := logs.String()
			if len(tail) > 6000 {
				tail = tail[len(tail)-6000:]
			}
			t.Fatalf("timed out after %v waiting for %s; log tail:\n%s", d, what, tail)
		}
		time.Sleep(200 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// buildExample builds examples/metrics-server from this checkout.
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "metrics-server")
	cmd := exec.Command("go", "build", "-o", bin, "./examples/metrics-server")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	return bin
}

const clusterSetup = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-metrics-server:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: annex-metrics-server-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-metrics-server:apiservice-registrar"}
rules:
- {apiGroups: [apiregistration.k8s.io], resources: [apiservices], verbs: [get, create, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-metrics-server:apiservice-registrar"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-metrics-server:apiservice-registrar"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-metrics-server:flowcontrol-reader"}
rules:
- {apiGroups: [flowcontrol.apiserver.k8s.io], resources: [flowschemas, prioritylevelconfigurations], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-metrics-server:flowcontrol-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-metrics-server:flowcontrol-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics-reader}
rules:
- {apiGroups: [metrics.k8s.io], resources: [pods, nodes], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: devs-read-metrics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: devs}]
---
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1}
---
apiVersion: v1
kind: Node
metadata:
  name: node-2
  labels: {kubernetes.io/hostname: node-2}
`

func TestAggregatedMetricsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kube-apiserver; not in -short")
	}
	exampleBin := buildExample(t)
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))

	k.MustRun("apply", "-f", k.WriteFile("setup.yaml", clusterSetup))
	for _, n := range []string{"node-1", "node-2"} {
		k.MustRun("patch", "node", n, "--subresource=status", "--type=merge", "-p",
			`{"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}`)
	}

	// The example, in delegated mode with its own client certificate,
	// registering its own APIService.
	port := freePort(t)
	exampleLogs := &lockedBuffer{}
	process(t, "metrics-server", exampleLogs, exampleBin,
		"--delegated-auth",
		"--authentication-kubeconfig="+p.kubeconfig(t, "example", kasURL, p.exampleUser),
		"--authorization-kubeconfig="+p.kubeconfig(t, "example", kasURL, p.exampleUser),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--data-dir="+filepath.Join(t.TempDir(), "data"),
		"--service=metrics-server.kube-system", "--register-apiservice", "--apiservice-port="+strconv.Itoa(port),
		"--simulation-file=../examples/metrics-server/testdata/cluster.yaml", "--metric-resolution=1s",
		"-v=3", "--logging-format=json",
	)
	exampleURL := "https://127.0.0.1:" + strconv.Itoa(port)
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitUntil(t, time.Minute, "the example's /readyz", exampleLogs, func() bool {
		resp, err := insecure.Get(exampleURL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	t.Run("apiservice_available_with_real_ca_bundle", func(t *testing.T) {
		waitUntil(t, 2*time.Minute, "APIService Available=True", exampleLogs, func() bool {
			out, _ := k.Run("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
			return out == "True"
		})
		out := k.MustRun("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "jsonpath={.spec.insecureSkipTLSVerify}/{.spec.caBundle}")
		if !strings.HasPrefix(out, "/") || len(out) < 100 {
			t.Errorf("APIService: want a caBundle and no insecureSkipTLSVerify, got %q", out)
		}
	})

	t.Run("raw_through_aggregator", func(t *testing.T) {
		out := k.MustRun("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes")
		kubectltest.WantContains(t, "get --raw nodes", out, `"kind":"NodeMetricsList"`, `"name":"node-1"`, `"usage":{"cpu":"250m","memory":"1536Mi"}`, `"usage":{"cpu":"1500m","memory":"3Gi"}`)
		out = k.MustRun("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/db-0")
		kubectltest.WantContains(t, "get --raw pod", out, `"containers":[{"name":"postgres","usage":{"cpu":"40m","memory":"256Mi"}}]`)
	})

	t.Run("kubectl_top_node", func(t *testing.T) {
		out := k.MustRun("top", "node")
		t.Logf("kubectl top node:\n%s", out)
		// 250m of 4 cores is 6%; 1536Mi of 8Gi is 18%.
		wantFields(t, out, "node-1", "250m", "6%", "1536Mi", "18%")
		wantFields(t, out, "node-2", "1500m", "37%", "3072Mi", "37%")
	})

	t.Run("kubectl_top_pod", func(t *testing.T) {
		out := k.MustRun("top", "pod", "-n", "default")
		t.Logf("kubectl top pod -n default:\n%s", out)
		wantFields(t, out, "web-0", "3m", "16Mi") // two containers summed
		wantFields(t, out, "db-0", "40m", "256Mi")
		out = k.MustRun("top", "pod", "-A", "-l", "k8s-app=kube-dns")
		wantFields(t, out, "kube-system", "coredns-0", "3m", "20Mi")
		if strings.Contains(out, "web-0") {
			t.Errorf("label selector ignored:\n%s", out)
		}
	})

	t.Run("example_sees_the_callers_identity", func(t *testing.T) {
		req, _ := http.NewRequest("GET", kasURL+"/apis/metrics.k8s.io/v1beta1/nodes/node-1", nil)
		req.Header.Set("Impersonate-User", "alice")
		req.Header.Set("Impersonate-Group", "devs")
		req.Header.Set("Impersonate-Extra-Scopes", "metrics-view")
		resp, err := p.client(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"name":"node-1"`) {
			t.Fatalf("alice through the aggregator: %d %s", resp.StatusCode, body)
		}
		var seen map[string]any
		waitUntil(t, 10*time.Second, "the example's identity log for alice", exampleLogs, func() bool {
			seen = findIdentity(exampleLogs.String(), "alice", "/apis/metrics.k8s.io/v1beta1/nodes/node-1")
			return seen != nil
		})
		groups := fmt.Sprint(seen["groups"])
		if !strings.Contains(groups, "devs") || !strings.Contains(groups, "system:authenticated") {
			t.Errorf("groups seen by the example: %s", groups)
		}
		if extra := fmt.Sprint(seen["extra"]); !strings.Contains(extra, "scopes:[metrics-view]") {
			t.Errorf("extra seen by the example: %s", extra)
		}
	})

	// client-go's informer over PodMetrics through the aggregator: it lists
	// (no resourceVersion, as metrics-server's list), watches from there,
	// syncs with the namespace's pods, and sees each new sample as an
	// update. The example's watch cache exists only while a watch is open:
	// this watch starts it.
	t.Run("client_go_informer_of_podmetrics", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig(t, "admin", kasURL, p.admin))
		if err != nil {
			t.Fatal(err)
		}
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		podMetrics := schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}
		inf := dynamicinformer.NewFilteredDynamicInformer(dc, podMetrics, "default", 0, cache.Indexers{}, nil).Informer()
		// The samples of db-0 the updates carried, and their resourceVersions.
		var mu sync.Mutex
		stamps, rvs := map[string]bool{}, map[string]bool{}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GetName() == "db-0" {
				stamp, _, _ := unstructured.NestedString(u.Object, "timestamp")
				mu.Lock()
				stamps[stamp], rvs[u.GetResourceVersion()] = true, true
				mu.Unlock()
			}
		}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		defer func() { cancel(); <-done }()
		syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
		defer syncCancel()
		if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
			t.Fatal("the PodMetrics informer did not sync")
		}
		if keys := strings.Join(inf.GetStore().ListKeys(), ","); !strings.Contains(keys, "default/db-0") || !strings.Contains(keys, "default/web-0") || strings.Contains(keys, "coredns") {
			t.Fatalf("informer store %s, want default/db-0 and default/web-0", keys)
		}
		waitUntil(t, 20*time.Second, "updates of db-0 with two new samples (a sample a second)", exampleLogs, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(stamps) >= 2
		})
		mu.Lock()
		defer mu.Unlock()
		if rvs[""] || len(rvs) < 2 {
			t.Errorf("updates' resourceVersions %v: each its own, none empty", rvs)
		}
	})

	t.Run("delegated_authorization_forbids_user_without_rbac", func(t *testing.T) {
		// As the front proxy, straight to the example: authentication passes
		// (the proxy certificate), the cluster's SubjectAccessReview denies.
		proxy := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, Certificates: []tls.Certificate{p.proxyClient.TLSCertificate()}}}}
		req, _ := http.NewRequest("GET", exampleURL+"/apis/metrics.k8s.io/v1beta1/nodes", nil)
		req.Header.Set("X-Remote-User", "mallory")
		req.Header.Set("X-Remote-Group", "nobodies")
		code, body := do(t, proxy, req)
		if code != 403 || !strings.Contains(body, `User \"mallory\" cannot list resource \"nodes\" in API group \"metrics.k8s.io\" at the cluster scope`) {
			t.Errorf("mallory via the proxy certificate: %d %s", code, body)
		}
		// And through kube-apiserver, the cluster's own RBAC answers first.
		out, ok := k.Run("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes", "--as=mallory")
		if ok || !strings.Contains(out, "Forbidden") {
			t.Errorf("mallory through the aggregator: ok=%v %s", ok, out)
		}
	})

	t.Run("forged_remote_user_without_proxy_cert_is_401", func(t *testing.T) {
		req, _ := http.NewRequest("GET", exampleURL+"/apis/metrics.k8s.io/v1beta1/nodes", nil)
		req.Header.Set("X-Remote-User", "e2e-admin")
		req.Header.Set("X-Remote-Group", "system:masters")
		code, body := do(t, insecure, req)
		if code != 401 {
			t.Errorf("forged X-Remote-User: %d %s", code, body)
		}
	})

	if t.Failed() {
		t.Logf("kube-apiserver log tail:\n%s", tail(kasLogs.String(), 4000))
		t.Logf("example log tail:\n%s", tail(exampleLogs.String(), 4000))
	}
}

func do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// wantFields fails unless some line of out has all fields, in order, as
// whitespace-separated columns.
func wantFields(t *testing.T, out string, fields ...string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(fields, " ") {
			return
		}
	}
	t.Errorf("no line %q in:\n%s", strings.Join(fields, "  "), out)
}

// findIdentity returns the example's "identity" log entry for user and path.
func findIdentity(logs, user, path string) map[string]any {
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["msg"] != "identity" {
			continue
		}
		if m["user"] == user && m["path"] == path {
			return m
		}
	}
	return nil
}
