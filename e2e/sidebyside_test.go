package e2e

// The side-by-side test (issue 34): metrics-server, built from the Go module
// proxy at its latest release, then examples/metrics-server with --source
// kubelet, one after the other against the same kube-apiserver and the same
// fake kubelets (N nodes of 30 pods each, Nodes and Running Pods in the
// cluster). Each is registered as v1beta1.metrics.k8s.io in turn, so that
// kubectl top goes through the aggregator to the one under test. For each
// the test measures memory (RSS from /proc after a few scrape cycles), CPU
// per scrape cycle (utime+stime over several cycles), kubectl top pod -A and
// the same GET through kube-apiserver (latency p50/p99), and the time from
// a kubelet's first sample of a new usage to the API; it checks that both
// serve the fake kubelets' numbers (kubectl top's lines equal, and equal to
// the configured usage), that a watch of NodeMetrics through the aggregator
// gets the new sample from annex, and that metrics-server refuses the watch.
//
// The normal e2e run has a small shape (10 nodes, --metric-resolution=10s,
// metrics-server's minimum) so that CI exercises it. The full shapes run
// with ANNEX_SIDE_BY_SIDE_NODES (a comma-separated list of node counts,
// --metric-resolution=15s) and need a long -timeout:
//
//	cd e2e && ANNEX_SIDE_BY_SIDE_NODES=100,1000 go test -run TestMetricsServerSideBySide -timeout 90m -v .
//
// ANNEX_SIDE_BY_SIDE_SERVERS runs one server alone, ANNEX_SIDE_BY_SIDE_PROFILE
// saves their profiles, and ANNEX_SIDE_BY_SIDE_BASELINE=<binary> runs another
// build of the example third (a before and after in one run). Both tables
// (a row per server and shape) are printed with t.Log.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/e2e/internal/fakekubelet"
	"github.com/annexapi/annex/internal/kubectltest"
)

// sbsShape is the size of one side-by-side run and how long it measures.
type sbsShape struct {
	nodes, podsPerNode int
	resolution         time.Duration
	// settleCycles are waited once every node's and pod's metrics are
	// served, before measuring.
	settleCycles int
	// cpuCycles is the measuring window of memory and CPU, in scrape
	// cycles; zero reads memory once and measures no CPU.
	cpuCycles int
	// topRuns is how many times kubectl top pod -A (and the GET) is timed.
	topRuns int
	// latencyNodes is how many kubelets get a new usage at once.
	latencyNodes int
	// newValue waits for the API to show the new usage itself (a rate
	// between two samples of it: one to two cycles after the change), not
	// only the first value computed from a sample of it.
	newValue bool
}

func (s sbsShape) String() string { return fmt.Sprintf("%d nodes × %d pods", s.nodes, s.podsPerNode) }

// sbsNamespaces is how many namespaces the pods are spread over.
const sbsNamespaces = 10

// sbsRBAC lets both servers' identities follow nodes and pods and read the
// kubelets' metrics (metrics-server's system:metrics-server ClusterRole),
// and gives metrics-server's identity what annex's gets from clusterSetup:
// delegated authentication and authorization.
const sbsRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "side-by-side:kubelet-reader"}
rules:
- {apiGroups: [""], resources: [nodes/metrics], verbs: [get]}
- {apiGroups: [""], resources: [nodes, pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "side-by-side:kubelet-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "side-by-side:kubelet-reader"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "metrics-server:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: metrics-server-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: metrics-server}]
`

// sbsAPIService registers metrics-server as its own manifest does
// (insecureSkipTLSVerify: its serving certificate is self-signed), at the
// port it listens on (the Service is an ExternalName for localhost).
const sbsAPIService = `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: metrics-server, namespace: kube-system, port: %d}
`

// nodeUsage is node i's configured usage: whole multiples of 125m and
// 256Mi, so that kubectl top prints them exactly.
func nodeUsage(i int) fakekubelet.Usage {
	return fakekubelet.Usage{CPUCores: float64(1+i%8) * 0.125, MemoryBytes: uint64(1+i%16) * 256 << 20}
}

// podOf is pod j of node i: one container, and a sidecar in every third
// pod, using whole millicores and mebibytes.
func podOf(i, j int) fakekubelet.Pod {
	p := fakekubelet.Pod{Namespace: fmt.Sprintf("team-%d", (i+j)%sbsNamespaces), Name: fmt.Sprintf("app-%d-%d", i, j),
		Containers: []fakekubelet.Container{{Name: "app", Usage: fakekubelet.Usage{CPUCores: float64(1+(7*i+j)%50) / 1000, MemoryBytes: uint64(8+(i+j)%64) << 20}}}}
	if j%3 == 0 {
		p.Containers = append(p.Containers, fakekubelet.Container{Name: "sidecar",
			Usage: fakekubelet.Usage{CPUCores: float64(1+(i+j)%5) / 1000, MemoryBytes: uint64(4+(i*j)%8) << 20}})
	}
	return p
}

// sbsResult is what one server measured.
type sbsResult struct {
	server            string
	rss, rssAnon, hwm uint64 // bytes: mean VmRSS and RssAnon over the window, VmHWM at its end
	cpuPerCycle       time.Duration
	top, get          []time.Duration // kubectl top pod -A; GET .../pods through kube-apiserver
	sampleToAPI       []time.Duration // a kubelet's first sample of a new usage -> the API shows it
	changeToValue     []time.Duration // the usage changed -> the API shows the new value
	watchEvent        time.Duration   // the first sample of a new usage -> a watch event with it
	watch             string          // what a watch of NodeMetrics got
	topNode, topPod   []string        // kubectl top's lines, sorted
	rawNodes          map[string][2]int64
}

func TestMetricsServerSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kube-apiserver and metrics-server; not in -short")
	}
	shapes := []sbsShape{{nodes: 10, podsPerNode: 30, resolution: 10 * time.Second, topRuns: 5, latencyNodes: 3}}
	if env := os.Getenv("ANNEX_SIDE_BY_SIDE_NODES"); env != "" {
		shapes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 2 {
				t.Fatalf("ANNEX_SIDE_BY_SIDE_NODES=%q: want node counts of at least 2, comma-separated", env)
			}
			shapes = append(shapes, sbsShape{nodes: n, podsPerNode: 30, resolution: 15 * time.Second, settleCycles: 2, cpuCycles: 4, topRuns: 20, latencyNodes: 8, newValue: true})
		}
	}
	// ANNEX_SIDE_BY_SIDE_SERVERS=annex (or metrics-server) runs one alone,
	// for profiling one without waiting for the other.
	servers := map[string]bool{"metrics-server": true, "annex": true}
	if env := os.Getenv("ANNEX_SIDE_BY_SIDE_SERVERS"); env != "" {
		servers = map[string]bool{}
		for _, f := range strings.Split(env, ",") {
			servers[strings.TrimSpace(f)] = true
		}
	}
	kubectltest.Path(t)
	var msBin, exampleBin string
	if servers["metrics-server"] {
		msBin = binaries.MetricsServer(t)
	}
	if servers["annex"] {
		exampleBin = buildExample(t)
	}
	// ANNEX_SIDE_BY_SIDE_BASELINE names another build of the example (an
	// older commit's) that runs third, as "annex (baseline)": a before and
	// after measured in one run, on the same cluster and kubelets.
	baseBin := os.Getenv("ANNEX_SIDE_BY_SIDE_BASELINE")
	var table [][]sbsResult
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("nodes_%d", sh.nodes), func(t *testing.T) {
			rows := sideBySide(t, sh, msBin, exampleBin, baseBin)
			table = append(table, rows)
			t.Logf("\n%s", sbsTable([]sbsShape{sh}, [][]sbsResult{rows}))
		})
	}
	if len(table) == len(shapes) && len(shapes) > 1 {
		t.Logf("\n%s", sbsTable(shapes, table))
	}
}

// sideBySide runs one shape: a cluster, its kubelets, then each server
// whose binary is given (metrics-server's, then annex's).
func sideBySide(t *testing.T, sh sbsShape, msBin, exampleBin, baseBin string) []sbsResult {
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	setup := []string{withoutNodes(clusterSetup), sbsRBAC}
	for i := range sbsNamespaces {
		setup = append(setup, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-%d}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: team-%d}\n", i, i))
	}
	k.MustRun("apply", "-f", k.WriteFile("setup.yaml", strings.Join(setup, "---\n")))
	kas := newKASClient(t, p, kasURL)

	ca, err := fakekubelet.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	caFile := writeFile(t, filepath.Join(t.TempDir(), "kubelet-ca.crt"), ca.CertPEM)
	states := make([]fakekubelet.State, sh.nodes+1) // by node number, from 1
	kubelets := make([]*fakekubelet.Kubelet, sh.nodes+1)
	start := time.Now()
	for i := 1; i <= sh.nodes; i++ {
		states[i].Node = nodeUsage(i)
		for j := range sh.podsPerNode {
			states[i].Pods = append(states[i].Pods, podOf(i, j))
		}
		kl, err := fakekubelet.Start(ca, p.clusterCA.Pool(), states[i])
		if err != nil {
			t.Fatalf("kubelet %d: %v", i, err)
		}
		t.Cleanup(func() { kl.Close() })
		kubelets[i] = kl
	}
	err = parallel(sh.nodes, 32, func(n int) error {
		i := n + 1
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-%d","labels":{"kubernetes.io/hostname":"node-%d"}},`+
			`"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},`+
			`"addresses":[{"type":"Hostname","address":"node-%d"},{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`,
			i, i, i, kubelets[i].Port)
		return kas.want(http.StatusCreated, "POST", "/api/v1/nodes", "application/json", body)
	})
	if err != nil {
		t.Fatalf("create nodes: %v", err)
	}
	err = parallel(sh.nodes*sh.podsPerNode, 32, func(n int) error {
		i, j := n/sh.podsPerNode+1, n%sh.podsPerNode
		pod := podOf(i, j)
		var cs []string
		for _, c := range pod.Containers {
			cs = append(cs, fmt.Sprintf(`{"name":%q,"image":"registry.k8s.io/pause:3.10"}`, c.Name))
		}
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"labels":{"app":"app-%d"}},`+
			`"spec":{"nodeName":"node-%d","automountServiceAccountToken":false,"containers":[%s]}}`, pod.Name, pod.Namespace, j%10, i, strings.Join(cs, ","))
		base := "/api/v1/namespaces/" + pod.Namespace + "/pods"
		if err := kas.want(http.StatusCreated, "POST", base, "application/json", body); err != nil {
			return err
		}
		// metrics-server serves Running pods only.
		return kas.want(http.StatusOK, "PATCH", base+"/"+pod.Name+"/status", "application/merge-patch+json", `{"status":{"phase":"Running"}}`)
	})
	if err != nil {
		t.Fatalf("create pods: %v", err)
	}
	t.Logf("%s: kubelets, nodes and Running pods in %v", sh, time.Since(start).Round(time.Second))

	env := &sbsEnv{t: t, sh: sh, k: k, kas: kas, states: states, kubelets: kubelets, admin: p.admin}
	// The kubelet request timeout: the default 10s, or less when
	// metrics-server would refuse it (it wants it under 90% of the
	// resolution).
	timeout := (10 * time.Second).String()
	if sh.resolution*9/10 <= 10*time.Second {
		timeout = (sh.resolution / 2).String()
	}

	var rows []sbsResult
	if msBin != "" {
		rows = append(rows, env.runMetricsServer(p, kasURL, msBin, caFile, timeout))
	}
	if exampleBin != "" {
		rows = append(rows, env.runAnnex(p, kasURL, "annex", exampleBin, caFile, timeout))
	}
	if baseBin != "" {
		rows = append(rows, env.runAnnex(p, kasURL, "annex (baseline)", baseBin, caFile, timeout))
	}
	if len(rows) >= 2 && rows[0].server == "metrics-server" {
		for _, r := range rows[1:] {
			compare(t, sh, rows[0], r)
		}
	}
	if t.Failed() {
		t.Logf("kube-apiserver log tail:\n%s", tail(kasLogs.String(), 3000))
	}
	return rows
}

// runMetricsServer runs metrics-server, registered by an APIService of
// ours, and measures it.
func (e *sbsEnv) runMetricsServer(p *pki, kasURL, msBin, caFile, timeout string) sbsResult {
	t, sh, k := e.t, e.sh, e.k
	msUser, err := p.clusterCA.Issue(certs.Request{CommonName: "metrics-server"})
	if err != nil {
		t.Fatal(err)
	}
	msKubeconfig := p.kubeconfig(t, "metrics-server", kasURL, msUser)
	msPort := freePort(t)
	msLogs := &lockedBuffer{}
	cmd, stop := processCmd(t, "metrics-server", msLogs, msBin,
		"--kubeconfig="+msKubeconfig, "--authentication-kubeconfig="+msKubeconfig, "--authorization-kubeconfig="+msKubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(msPort), "--cert-dir="+t.TempDir(),
		"--kubelet-certificate-authority="+caFile, "--kubelet-use-node-status-port", "--kubelet-preferred-address-types=InternalIP",
		"--kubelet-request-timeout="+timeout, "--metric-resolution="+sh.resolution.String())
	k.MustRun("apply", "-f", k.WriteFile("apiservice.yaml", fmt.Sprintf(sbsAPIService, msPort)))
	r := e.measure("metrics-server", cmd.Process.Pid, "https://127.0.0.1:"+strconv.Itoa(msPort), msLogs)
	stop()
	k.MustRun("delete", "apiservice", "v1beta1.metrics.k8s.io")
	return r
}

// runAnnex runs annex's example, registering itself, and measures it.
func (e *sbsEnv) runAnnex(p *pki, kasURL, server, exampleBin, caFile, timeout string) sbsResult {
	t, sh := e.t, e.sh
	port := freePort(t)
	logs := &lockedBuffer{}
	kubeconfig := p.kubeconfig(t, "example", kasURL, p.exampleUser)
	cmd, stop := processCmd(t, "annex metrics-server", logs, exampleBin,
		"--delegated-auth", "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), "--data-dir="+filepath.Join(t.TempDir(), "data"),
		"--service=metrics-server.kube-system", "--register-apiservice", "--apiservice-port="+strconv.Itoa(port),
		"--source=kubelet", "--kubelet-use-node-status-port", "--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority="+caFile, "--kubelet-request-timeout="+timeout, "--metric-resolution="+sh.resolution.String())
	r := e.measure(server, cmd.Process.Pid, "https://127.0.0.1:"+strconv.Itoa(port), logs)
	stop()
	return r
}

// compare checks that both servers served the same numbers.
func compare(t *testing.T, sh sbsShape, ms, annex sbsResult) {
	// The same numbers: kubectl top's lines (after each server's were
	// checked against the configured usage), and the raw quantities.
	if !slices.Equal(ms.topNode, annex.topNode) {
		t.Errorf("kubectl top node differs:\nmetrics-server:\n%s\nannex:\n%s", strings.Join(ms.topNode, "\n"), strings.Join(annex.topNode, "\n"))
	}
	if d := diffLines(ms.topPod, annex.topPod); d != "" {
		t.Errorf("kubectl top pod -A differs (metrics-server -, annex +):\n%s", d)
	}
	var maxCPU int64
	for name, m := range ms.rawNodes {
		a, ok := annex.rawNodes[name]
		if !ok || a[1] != m[1] {
			t.Errorf("NodeMetrics %s: memory %d bytes from metrics-server, %d from annex", name, m[1], a[1])
		}
		maxCPU = max(maxCPU, abs(a[0]-m[0]))
	}
	// Both truncate to whole nanocores, but each computes its rate from its
	// own pair of samples: float error may leave 1n between them.
	if maxCPU > 1 {
		t.Errorf("NodeMetrics cpu differs by up to %dn between the servers", maxCPU)
	}
	t.Logf("%s: kubectl top node and pod -A equal (%d and %d lines); raw node cpu differs by at most %dn", sh, len(ms.topNode), len(ms.topPod), maxCPU)
}

// sbsEnv is one shape's cluster and kubelets.
type sbsEnv struct {
	t        *testing.T
	sh       sbsShape
	k        *kubectltest.Kubectl
	kas      *kasClient
	states   []fakekubelet.State
	kubelets []*fakekubelet.Kubelet
	admin    *certs.KeyPair // for the servers' /debug/pprof
}

// measure waits for the server behind v1beta1.metrics.k8s.io to serve
// every node and pod, then measures it.
func (e *sbsEnv) measure(server string, pid int, url string, logs *lockedBuffer) sbsResult {
	t, sh := e.t, e.sh
	r := sbsResult{server: server}
	started := time.Now()
	waitUntil(t, 3*time.Minute, server+": APIService v1beta1.metrics.k8s.io Available=True", logs, func() bool {
		out, _ := e.k.Run("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return out == "True"
	})
	var nodes, pods int
	pollUntil(t, 3*time.Minute, time.Second, server+": every node's and pod's metrics", logs, func() bool {
		nodes, pods = e.kas.count("/apis/metrics.k8s.io/v1beta1/nodes"), 0
		if nodes == sh.nodes {
			pods = e.kas.count("/apis/metrics.k8s.io/v1beta1/pods")
		}
		return pods == sh.nodes*sh.podsPerNode
	})
	t.Logf("%s: %s serves every node and pod %v after it started", sh, server, time.Since(started).Round(100*time.Millisecond))
	// ANNEX_SIDE_BY_SIDE_WATCHING measures annex with a watch of every
	// PodMetrics open through the aggregator (metrics-server has none to
	// open): what a scrape costs while someone watches.
	stopWatch := func() {}
	if os.Getenv("ANNEX_SIDE_BY_SIDE_WATCHING") != "" && strings.HasPrefix(server, "annex") {
		r.server += " (watched)"
		stopWatch = e.watchAll(server)
	}
	window(time.Duration(sh.settleCycles) * sh.resolution)

	// Memory and CPU over cpuCycles scrape cycles, nothing else asked,
	// from the middle of a cycle (when its scrape is done) so that the
	// window holds exactly cpuCycles scrapes.
	var rss, anon []uint64
	if sh.cpuCycles > 0 {
		e.midCycle()
		cpu0 := procCPU(t, pid)
		profiled := e.profile(server, url, time.Duration(sh.cpuCycles)*sh.resolution)
		end := time.Now().Add(time.Duration(sh.cpuCycles) * sh.resolution)
		for time.Now().Before(end) {
			st := procStatus(t, pid)
			rss, anon = append(rss, st["VmRSS"]), append(anon, st["RssAnon"])
			window(time.Second)
		}
		r.cpuPerCycle = (procCPU(t, pid) - cpu0) / time.Duration(sh.cpuCycles)
		profiled()
	}
	st := procStatus(t, pid)
	rss, anon = append(rss, st["VmRSS"]), append(anon, st["RssAnon"])
	stopWatch()
	r.rss, r.rssAnon, r.hwm = mean(rss), mean(anon), st["VmHWM"]

	// What both serve, checked against the kubelets' configuration.
	r.topNode = sortedLines(e.k.MustRun("top", "node", "--no-headers"))
	r.topPod = sortedLines(e.k.MustRun("top", "pod", "-A", "--no-headers"))
	e.checkTop(server, r.topNode, r.topPod)
	r.rawNodes = e.kas.nodeUsage(t)

	for range sh.topRuns {
		t0 := time.Now()
		e.k.MustRun("top", "pod", "-A")
		r.top = append(r.top, time.Since(t0))
	}
	for range sh.topRuns {
		t0 := time.Now()
		if n := e.kas.count("/apis/metrics.k8s.io/v1beta1/pods"); n != sh.nodes*sh.podsPerNode {
			t.Errorf("%s: GET pods: %d items", server, n)
		}
		r.get = append(r.get, time.Since(t0))
	}

	e.newSamples(server, &r)
	return r
}

// profile, when ANNEX_SIDE_BY_SIDE_PROFILE names a directory, takes the
// server's CPU profile over d (from its /debug/pprof, as the admin) and,
// when the returned function is called, its heap profile, into
// <dir>/<server>-<nodes>-{cpu,heap}.pprof.
func (e *sbsEnv) profile(server, url string, d time.Duration) (heap func()) {
	dir := os.Getenv("ANNEX_SIDE_BY_SIDE_PROFILE")
	if dir == "" {
		return func() {}
	}
	t := e.t
	c := &http.Client{Timeout: d + time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{e.admin.TLSCertificate()}}}} //nolint:gosec // the servers' own self-signed CAs
	get := func(path, file string) {
		resp, err := c.Get(url + path)
		if err != nil {
			t.Errorf("%s %s: %v", server, path, err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: %d %s", server, path, resp.StatusCode, tail(string(b), 300))
			return
		}
		name := strings.NewReplacer(" (", "-", ")", "").Replace(server)
		writeFile(t, filepath.Join(dir, fmt.Sprintf("%s-%d-%s.pprof", name, e.sh.nodes, file)), b)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		get(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), "cpu")
	}()
	return func() {
		<-done
		get("/debug/pprof/heap", "heap")
	}
}

// watchAll opens a watch of every PodMetrics through kube-apiserver and
// reads it until the returned function is called, which logs how many
// events came.
func (e *sbsEnv) watchAll(server string) (stop func()) {
	t := e.t
	ctx, cancel := context.WithCancel(context.Background())
	code, body, stream, err := e.kas.watch(ctx, "/apis/metrics.k8s.io/v1beta1/pods?watch=true&allowWatchBookmarks=true")
	if err != nil || code != http.StatusOK {
		cancel()
		t.Fatalf("%s: watch of every PodMetrics: %d %s %v", server, code, body, err)
	}
	var events atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stream.Close()
		sc := bufio.NewScanner(stream)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			events.Add(1)
		}
	}()
	start := time.Now()
	return func() {
		cancel()
		<-done
		t.Logf("%s: the watch of every PodMetrics got %d events in %v", server, events.Load(), time.Since(start).Round(time.Second))
	}
}

// midCycle waits for node-1's kubelet to be scraped, then half a
// resolution.
func (e *sbsEnv) midCycle() {
	n := e.kubelets[1].Scrapes.Load()
	deadline := time.Now().Add(2 * e.sh.resolution)
	for e.kubelets[1].Scrapes.Load() == n && time.Now().Before(deadline) {
		window(20 * time.Millisecond)
	}
	window(e.sh.resolution / 2)
}

// newSamples gives latencyNodes kubelets a new node usage (one core more),
// measures how soon the API shows it, with a watch of the first node's
// NodeMetrics open, then restores the usage.
func (e *sbsEnv) newSamples(server string, r *sbsResult) {
	t, sh := e.t, e.sh
	ctx, cancel := context.WithTimeout(context.Background(), 4*sh.resolution)
	defer cancel()
	type event struct {
		at  time.Time
		cpu int64
	}
	events := make(chan event, 64)
	code, body, stream, err := e.kas.watch(ctx, "/apis/metrics.k8s.io/v1beta1/nodes?watch=true&fieldSelector=metadata.name%3Dnode-1")
	if err != nil {
		t.Fatalf("%s: watch: %v", server, err)
	}
	if code != http.StatusOK {
		var st struct{ Reason, Message string }
		_ = json.Unmarshal(body, &st)
		r.watch = fmt.Sprintf("%d %s: %s", code, st.Reason, st.Message)
		close(events)
	} else {
		r.watch = "200, events"
		go func() {
			defer close(events)
			defer stream.Close()
			dec := json.NewDecoder(stream)
			for {
				var ev struct {
					Type   string
					Object struct{ Usage struct{ CPU string } }
				}
				if dec.Decode(&ev) != nil {
					return
				}
				if q, err := resource.ParseQuantity(ev.Object.Usage.CPU); err == nil {
					select {
					case events <- event{time.Now(), q.ScaledValue(resource.Nano)}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}

	old := r.rawNodes
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 1; i <= sh.latencyNodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		s := e.states[i]
		s.Node.CPUCores++
		changed := time.Now()
		e.kubelets[i].Set(s)
		want := int64(math.Round(s.Node.CPUCores * 1000))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var seen time.Time
			for ctx.Err() == nil {
				cpu, ok := e.kas.nodeCPU(ctx, name)
				now := time.Now()
				if ok && seen.IsZero() && abs(cpu-old[name][0]) > 1000 {
					seen = now
					mu.Lock()
					r.sampleToAPI = append(r.sampleToAPI, seen.Sub(e.kubelets[i].Sampled()))
					mu.Unlock()
					if !sh.newValue {
						return
					}
				}
				if ok && (cpu+999_999)/1_000_000 == want { // kubectl top's rounding up to millicores
					mu.Lock()
					r.changeToValue = append(r.changeToValue, now.Sub(changed))
					mu.Unlock()
					return
				}
				window(100 * time.Millisecond)
			}
			t.Errorf("%s: %s never showed its new usage (%dm)", server, name, want)
		}()
	}
	wg.Wait()
	// The watch's event for the new sample, if it was not there before the
	// GET saw it, comes within a cycle.
	last := time.NewTimer(sh.resolution)
	defer last.Stop()
wait:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				break wait
			}
			if abs(ev.cpu-old["node-1"][0]) > 1000 {
				r.watchEvent = ev.at.Sub(e.kubelets[1].Sampled())
				break wait
			}
		case <-last.C:
			break wait
		}
	}
	cancel()
	for i := 1; i <= sh.latencyNodes; i++ {
		e.kubelets[i].Set(e.states[i])
	}
	switch {
	case strings.HasPrefix(server, "annex"):
		if r.watchEvent == 0 {
			t.Errorf("annex: the watch of NodeMetrics node-1 got no event with the new usage (%s)", r.watch)
		}
	default:
		if code == http.StatusOK {
			t.Errorf("%s: the watch of NodeMetrics was accepted", server)
		}
	}
	t.Logf("%s: watch of NodeMetrics through the aggregator: %s", server, r.watch)
}

// checkTop checks kubectl top's lines against the kubelets' configured
// usage: every node and every pod, with kubectl's rounding (whole
// millicores and mebibytes here).
func (e *sbsEnv) checkTop(server string, nodes, pods []string) {
	t := e.t
	got := map[string][]string{}
	for _, l := range nodes {
		f := strings.Fields(l)
		got[f[0]] = f
	}
	for _, l := range pods {
		f := strings.Fields(l)
		got[f[0]+"/"+f[1]] = f
	}
	bad := 0
	for i := 1; i <= e.sh.nodes; i++ {
		u := e.states[i].Node
		name := fmt.Sprintf("node-%d", i)
		wantCPU, wantMem := fmt.Sprintf("%dm", int(math.Round(u.CPUCores*1000))), fmt.Sprintf("%dMi", u.MemoryBytes>>20)
		if f := got[name]; len(f) < 4 || f[1] != wantCPU || f[3] != wantMem {
			bad++
			if bad <= 5 {
				t.Errorf("%s: kubectl top node %s: %q, want %s %s", server, name, f, wantCPU, wantMem)
			}
		}
		for _, p := range e.states[i].Pods {
			var cpu float64
			var mem uint64
			for _, c := range p.Containers {
				cpu, mem = cpu+c.CPUCores, mem+c.MemoryBytes
			}
			wantCPU, wantMem := fmt.Sprintf("%dm", int(math.Round(cpu*1000))), fmt.Sprintf("%dMi", mem>>20)
			if f := got[p.Namespace+"/"+p.Name]; len(f) < 4 || f[2] != wantCPU || f[3] != wantMem {
				bad++
				if bad <= 5 {
					t.Errorf("%s: kubectl top pod %s/%s: %q, want %s %s", server, p.Namespace, p.Name, f, wantCPU, wantMem)
				}
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d lines of kubectl top differ from the kubelets' usage", server, bad)
	}
}

// kasClient is the admin's HTTP client for kube-apiserver, with enough
// connections for many requests at once.
type kasClient struct {
	url string
	c   *http.Client
}

func newKASClient(t *testing.T, p *pki, url string) *kasClient {
	c := p.client(t)
	tr := c.Transport.(*http.Transport)
	tr.MaxIdleConnsPerHost = 64
	return &kasClient{url: url, c: c}
}

func (k *kasClient) do(ctx context.Context, method, path, ctype, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, k.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := k.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// want sends a request, retrying a 429 or 5xx a few times, and fails unless
// the answer has the code want.
func (k *kasClient) want(want int, method, path, ctype, body string) error {
	for attempt := 0; ; attempt++ {
		code, b, err := k.do(context.Background(), method, path, ctype, body)
		if err == nil && code == want {
			return nil
		}
		if attempt < 5 && (err != nil || code == http.StatusTooManyRequests || code >= 500) {
			window(time.Duration(attempt+1) * 200 * time.Millisecond)
			continue
		}
		return fmt.Errorf("%s %s: %d %v %s", method, path, code, err, b)
	}
}

// count is the number of items of the list at path, -1 when it fails.
func (k *kasClient) count(path string) int {
	code, b, err := k.do(context.Background(), "GET", path, "", "")
	if err != nil || code != http.StatusOK {
		return -1
	}
	var l struct{ Items []struct{} }
	if json.Unmarshal(b, &l) != nil {
		return -1
	}
	return len(l.Items)
}

// nodeUsage reads NodeMetrics: name -> {nanocores, bytes}.
func (k *kasClient) nodeUsage(t *testing.T) map[string][2]int64 {
	t.Helper()
	code, b, err := k.do(context.Background(), "GET", "/apis/metrics.k8s.io/v1beta1/nodes", "", "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET nodes metrics: %d %v %s", code, err, b)
	}
	var l struct {
		Items []struct {
			Metadata struct{ Name string }
			Usage    struct{ CPU, Memory string }
		}
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, it := range l.Items {
		cpu, err1 := resource.ParseQuantity(it.Usage.CPU)
		mem, err2 := resource.ParseQuantity(it.Usage.Memory)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("NodeMetrics %s: %v", it.Metadata.Name, err)
		}
		out[it.Metadata.Name] = [2]int64{cpu.ScaledValue(resource.Nano), mem.Value()}
	}
	return out
}

// nodeCPU reads one node's CPU usage in nanocores.
func (k *kasClient) nodeCPU(ctx context.Context, name string) (int64, bool) {
	code, b, err := k.do(ctx, "GET", "/apis/metrics.k8s.io/v1beta1/nodes/"+name, "", "")
	if err != nil || code != http.StatusOK {
		return 0, false
	}
	var m struct{ Usage struct{ CPU string } }
	if json.Unmarshal(b, &m) != nil {
		return 0, false
	}
	q, err := resource.ParseQuantity(m.Usage.CPU)
	return q.ScaledValue(resource.Nano), err == nil
}

// watch opens a watch: a stream when the answer is 200, the answer's body
// otherwise.
func (k *kasClient) watch(ctx context.Context, path string) (int, []byte, io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", k.url+path, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	c := *k.c
	c.Timeout = 0 // ctx bounds the stream
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, nil, resp.Body, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil, nil
}

// parallel calls fn(0..n-1) from workers goroutines; the first error stops
// the rest.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// pollUntil is waitUntil at another polling interval.
func pollUntil(t *testing.T, d, every time.Duration, what string, logs fmt.Stringer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; log tail:\n%s", d, what, tail(logs.String(), 6000))
		}
		window(every)
	}
}

// window lets d pass: a measuring window or a polling interval, never a
// wait for an event.
func window(d time.Duration) { time.Sleep(d) }

// procCPU is the process's user and system CPU time so far.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name in parentheses: state is the first,
	// utime the 12th, stime the 13th (proc(5) fields 14 and 15), in clock
	// ticks of 1/100 s (USER_HZ on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procStatus is the process's memory lines of /proc/<pid>/status, in bytes.
func procStatus(t *testing.T, pid int) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, l := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(l, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseUint(f[0], 10, 64)
			out[name] = n << 10
		}
	}
	return out
}

func mean(v []uint64) uint64 {
	if len(v) == 0 {
		return 0
	}
	var s uint64
	for _, x := range v {
		s += x
	}
	return s / uint64(len(v))
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// percentile is the nearest-rank p-th percentile of d.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}

// sortedLines is out's non-empty lines, whitespace collapsed, sorted.
func sortedLines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			ls = append(ls, strings.Join(f, " "))
		}
	}
	slices.Sort(ls)
	return ls
}

// diffLines lists the lines only in a (-) or only in b (+), at most 20.
func diffLines(a, b []string) string {
	in := func(l []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range l {
			m[s] = true
		}
		return m
	}
	ia, ib := in(a), in(b)
	var out []string
	for _, s := range a {
		if !ib[s] {
			out = append(out, "- "+s)
		}
	}
	for _, s := range b {
		if !ia[s] {
			out = append(out, "+ "+s)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// withoutNodes is a multi-document manifest without its Node documents.
func withoutNodes(manifest string) string {
	var keep []string
	for _, doc := range strings.Split(manifest, "---\n") {
		if !strings.Contains(doc, "\nkind: Node\n") {
			keep = append(keep, doc)
		}
	}
	return strings.Join(keep, "---\n")
}

// sbsTable is the results as a Markdown table, a row per server and shape,
// and the ratio annex / metrics-server for memory and CPU.
func sbsTable(shapes []sbsShape, rows [][]sbsResult) string {
	var b strings.Builder
	mib := func(v uint64) string { return fmt.Sprintf("%.0f", float64(v)/(1<<20)) }
	ms := func(d time.Duration) string {
		if d == 0 {
			return "–"
		}
		if d < 10*time.Second {
			return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
		}
		return d.Round(100 * time.Millisecond).String()
	}
	b.WriteString("| shape | server | RSS MiB | RssAnon MiB | peak RSS MiB | CPU per scrape cycle | kubectl top pod -A p50 / p99 | GET pods p50 / p99 | sample → API p50 | change → new value p50 | watch of NodeMetrics |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for i, sh := range shapes {
		for _, r := range rows[i] {
			watch := r.watch
			if r.watchEvent > 0 {
				watch = fmt.Sprintf("event %s after the sample", ms(r.watchEvent))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s | %s |\n", sh, r.server,
				mib(r.rss), mib(r.rssAnon), mib(r.hwm), ms(r.cpuPerCycle),
				ms(percentile(r.top, 50)), ms(percentile(r.top, 99)), ms(percentile(r.get, 50)), ms(percentile(r.get, 99)),
				ms(percentile(r.sampleToAPI, 50)), ms(percentile(r.changeToValue, 50)), watch)
		}
		if len(rows[i]) < 2 || rows[i][0].server != "metrics-server" {
			continue
		}
		m := rows[i][0]
		for _, a := range rows[i][1:] {
			if m.rss > 0 && m.cpuPerCycle > 0 {
				fmt.Fprintf(&b, "| %s | %s ÷ metrics-server | %.2f | %.2f | %.2f | %.2f | | | | | |\n", sh, a.server,
					float64(a.rss)/float64(m.rss), float64(a.rssAnon)/float64(m.rssAnon), float64(a.hwm)/float64(m.hwm),
					float64(a.cpuPerCycle)/float64(m.cpuPerCycle))
			}
		}
	}
	return b.String()
}
