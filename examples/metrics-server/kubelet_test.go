package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"
)

// TestDecodeResourceMetrics reads a kubelet's /metrics/resource (the format
// metrics-server's decoder tests use, with kubelet 1.33's [STABLE] help):
// the node's counters at their own timestamp, each complete container, and
// no pod with an incomplete container (web-0's sidecar has no memory), as
// metrics-server decodes it.
func TestDecodeResourceMetrics(t *testing.T) {
	f, err := os.Open("testdata/metrics-resource.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	node, pods, err := decodeResourceMetrics(f, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if node == nil || node.Usage.CPUNanoseconds != 357354910000 || node.Usage.MemoryBytes != 1616273408 || !node.Usage.Time.Equal(time.UnixMilli(1633253809720)) {
		t.Errorf("node: %+v", node)
	}
	if len(pods) != 2 {
		t.Fatalf("pods: %+v, want coredns and metrics-server (web-0 is incomplete)", pods)
	}
	c := pods[0].Containers[0]
	if pods[0].Namespace != "kube-system" || pods[0].Name != "coredns-674b8bbfcf-6kq8x" || c.Name != "coredns" ||
		c.Usage.CPUNanoseconds != 4710169000 || c.Usage.MemoryBytes != 12533760 || !c.Usage.Time.Equal(time.UnixMilli(1633253812125)) {
		t.Errorf("coredns: %+v", pods[0])
	}
	if pods[1].Name != "metrics-server-7b4c4d4bfd-dxmlj" || pods[1].Containers[0].Usage.MemoryBytes != 21430272 {
		t.Errorf("metrics-server: %+v", pods[1])
	}
}

// TestDecodeResourceMetricsDefaults: a series without a timestamp is taken
// at the scrape's start; a node without its memory is left out; text that
// is not the exposition format is an error.
func TestDecodeResourceMetricsDefaults(t *testing.T) {
	start := time.Unix(1700000000, 0)
	node, pods, err := decodeResourceMetrics(strings.NewReader(`node_cpu_usage_seconds_total 10
container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} 2
container_memory_working_set_bytes{container="c",namespace="n",pod="p"} 1024
`), start)
	if err != nil {
		t.Fatal(err)
	}
	if node != nil {
		t.Errorf("a node without node_memory_working_set_bytes: %+v", node)
	}
	if len(pods) != 1 || !pods[0].Containers[0].Usage.Time.Equal(start) || pods[0].Containers[0].Usage.CPUNanoseconds != 2e9 {
		t.Errorf("pods: %+v", pods)
	}
	if _, _, err := decodeResourceMetrics(strings.NewReader("not { prometheus\n"), start); err == nil {
		t.Error("garbage parsed")
	}
}

func TestKubeletOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		o    KubeletOptions
		want string
	}{
		{KubeletOptions{CAFile: "ca.crt", InsecureTLS: true}, "cannot use both --kubelet-certificate-authority and --kubelet-insecure-tls"},
		{KubeletOptions{ClientCertFile: "c.crt"}, "need both --kubelet-client-key and --kubelet-client-certificate"},
		{KubeletOptions{RequestTimeout: -time.Second}, "kubelet-request-timeout should be positive"},
		{KubeletOptions{PreferredAddressTypes: []string{"Hostname", "PodIP"}}, `unknown address type "PodIP"`},
	} {
		if _, err := NewKubelets(tc.o, nil, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestSourceFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubelet-insecure-tls"}, "--kubelet-insecure-tls has no effect without --source kubelet"},
		{[]string{"--source", "kubelet"}, "--source kubelet needs --delegated-auth"},
		{[]string{"--source", "kubelet", "--delegated-auth", "--nodes", "a"}, "--nodes has no effect with --source kubelet"},
		{[]string{"--source", "prometheus"}, `--source "prometheus": want simulated or kubelet`},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestResourceParserReused: a scrape's parser reads one answer after
// another; each answer's pods keep their containers in order (a pod's
// sidecar included, an incomplete pod left out), and an answer's result
// is not changed by the next one's.
func TestResourceParserReused(t *testing.T) {
	p := newResourceParser()
	start := time.Unix(1700000000, 0)
	_, a, err := p.decode(strings.NewReader(`container_cpu_usage_seconds_total{container="app",namespace="n",pod="p1"} 1
container_cpu_usage_seconds_total{container="x",namespace="n",pod="bad"} 1
container_cpu_usage_seconds_total{container="sidecar",namespace="n",pod="p1"} 2
container_cpu_usage_seconds_total{container="app",namespace="m",pod="p2"} 3
container_memory_working_set_bytes{container="app",namespace="n",pod="p1"} 10
container_memory_working_set_bytes{container="sidecar",namespace="n",pod="p1"} 20
container_memory_working_set_bytes{container="app",namespace="m",pod="p2"} 30
`), expfmt.FmtText, start)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := p.decode(strings.NewReader(`container_cpu_usage_seconds_total{container="c",namespace="o",pod="p3"} 4
container_memory_working_set_bytes{container="c",namespace="o",pod="p3"} 40
`), expfmt.FmtText, start)
	if err != nil {
		t.Fatal(err)
	}
	got := func(pods []PodSample) string {
		var parts []string
		for _, pod := range pods {
			for _, c := range pod.Containers {
				parts = append(parts, fmt.Sprintf("%s/%s/%s=%d,%d", pod.Namespace, pod.Name, c.Name, c.Usage.CPUNanoseconds/1e9, c.Usage.MemoryBytes))
			}
		}
		return strings.Join(parts, " ")
	}
	if g, want := got(a), "n/p1/app=1,10 n/p1/sidecar=2,20 m/p2/app=3,30"; g != want {
		t.Errorf("first answer: %s, want %s", g, want)
	}
	if g, want := got(b), "o/p3/c=4,40"; g != want {
		t.Errorf("second answer: %s, want %s", g, want)
	}
}

// TestScrapeKubeletConnections scrapes an HTTPS kubelet (the fixture's
// answer, chunked as a kubelet sends it) as the scrape does: the bearer
// token is sent, the connection is kept for the next scrape and reused,
// one the kubelet closed meanwhile is replaced at once, and an answer that
// is not 200 is an error with its status.
func TestScrapeKubeletConnections(t *testing.T) {
	fixture, err := os.ReadFile("testdata/metrics-resource.txt")
	if err != nil {
		t.Fatal(err)
	}
	var conns, requests atomic.Int32
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/metrics/resource" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "want /metrics/resource with the token", http.StatusUnauthorized)
			return
		}
		if code := int(status.Load()); code != http.StatusOK {
			http.Error(w, "nope", code)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for chunk := range slices.Chunk(fixture, 1000) { // chunked, flushed as it goes
			_, _ = w.Write(chunk)
			w.(http.Flusher).Flush()
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := NewKubelets(KubeletOptions{CAFile: caFile, UseNodeStatusPort: true, PreferredAddressTypes: []string{"InternalIP"}}, nil, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	k.token = func() (string, error) { return "tok", nil }
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	node := kubeletNode{addresses: map[string]string{"InternalIP": u.Hostname()}, statusPort: port}
	scrape := func() error {
		t.Helper()
		n, pods, err := k.scrapeNode(context.Background(), "node-1", node)
		if err == nil && (n == nil || n.Name != "node-1" || len(pods) != 2) {
			t.Fatalf("scrape: node %+v, %d pods", n, len(pods))
		}
		return err
	}
	for range 3 {
		if err := scrape(); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for three scrapes, want 1 kept", n)
	}
	srv.CloseClientConnections() // the kubelet restarted
	if err := scrape(); err != nil {
		t.Fatalf("after the kept connection was closed: %v", err)
	}
	if n, r := conns.Load(), requests.Load(); n != 2 || r != 4 {
		t.Errorf("%d connections, %d requests; want 2, 4", n, r)
	}
	status.Store(http.StatusForbidden)
	if err := scrape(); err == nil || !strings.Contains(err.Error(), "403 Forbidden: nope") {
		t.Errorf("a 403: %v", err)
	}
}

// TestScrapeProtobufAndText scrapes two kubelets serving the same fixture:
// one negotiates the format as a kubelet's promhttp handler does (and gets
// the delimited protobuf format asked for first), the other writes the
// text whatever is asked (as a proxy or an older kubelet might). The
// samples are the same, and are the fixture's.
func TestScrapeProtobufAndText(t *testing.T) {
	fixture, err := os.ReadFile("testdata/metrics-resource.txt")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Value
	kubelet := func(negotiate bool) *httptest.Server {
		return httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			format := expfmt.Format(expfmt.FmtText)
			if negotiate {
				format = expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...)
			}
			served.Store(format)
			w.Header().Set("Content-Type", string(format))
			enc := expfmt.NewEncoder(w, format)
			for _, name := range slices.Sorted(maps.Keys(families)) {
				if err := enc.Encode(families[name]); err != nil {
					t.Error(err)
				}
			}
		}))
	}
	k, err := NewKubelets(KubeletOptions{InsecureTLS: true, PreferredAddressTypes: []string{"InternalIP"}}, nil, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	scrape := func(srv *httptest.Server) (*NodeSample, []PodSample, expfmt.Format) {
		t.Helper()
		defer srv.Close()
		u, _ := url.Parse(srv.URL)
		port, _ := strconv.Atoi(u.Port())
		k.opts.Port = port
		node, pods, err := k.scrapeNode(context.Background(), "node-1", kubeletNode{addresses: map[string]string{"InternalIP": u.Hostname()}})
		if err != nil {
			t.Fatal(err)
		}
		return node, pods, served.Load().(expfmt.Format)
	}
	pbNode, pbPods, pbFormat := scrape(kubelet(true))
	textNode, textPods, textFormat := scrape(kubelet(false))
	if pbFormat.FormatType() != expfmt.TypeProtoDelim || textFormat.FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("served %q and %q, want the delimited protobuf format and the text", pbFormat, textFormat)
	}
	if !reflect.DeepEqual(pbNode, textNode) || !reflect.DeepEqual(pbPods, textPods) {
		t.Errorf("protobuf: %+v %+v\ntext: %+v %+v", pbNode, pbPods, textNode, textPods)
	}
	// The fixture's values (TestDecodeResourceMetrics reads them from the text).
	if pbNode == nil || pbNode.Usage.CPUNanoseconds != 357354910000 || pbNode.Usage.MemoryBytes != 1616273408 ||
		len(pbPods) != 2 || pbPods[0].Containers[0].Usage.CPUNanoseconds != 4710169000 || pbPods[1].Containers[0].Usage.MemoryBytes != 21430272 {
		t.Errorf("node %+v, pods %+v", pbNode, pbPods)
	}
}

// TestKeepProtoFamilies: only the families the scrape reads are kept, and
// an answer cut short is an error, not a silent partial batch.
func TestKeepProtoFamilies(t *testing.T) {
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.FmtProtoDelim)
	for _, name := range []string{"container_cpu_usage_seconds_total", "container_start_time_seconds", "node_memory_working_set_bytes", "node_memory_working_set_bytes_x"} {
		typ := dto.MetricType_GAUGE
		f := &dto.MetricFamily{Name: &name, Help: &name, Type: &typ, Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: new(float64)}}}}
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	answer := b.Bytes()
	kept, err := keepProtoFamilies(slices.Clone(answer))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	dec := expfmt.NewDecoder(bytes.NewReader(kept), expfmt.FmtProtoDelim)
	for {
		var f dto.MetricFamily
		if err := dec.Decode(&f); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		names = append(names, f.GetName())
	}
	if got, want := strings.Join(names, " "), "container_cpu_usage_seconds_total node_memory_working_set_bytes"; got != want {
		t.Errorf("kept %s, want %s", got, want)
	}
	if _, err := keepProtoFamilies(slices.Clone(answer[:len(answer)-3])); err == nil {
		t.Error("an answer cut short was read")
	}
}

// TestAppendGet: the GET a scrape writes is the one net/http's
// Request.Write writes for the same request.
func TestAppendGet(t *testing.T) {
	for _, tc := range []struct {
		name, addr, token string
	}{
		{"ipv4_token", "10.0.0.1:10250", "eyJhbGciOi.x-y_z"},
		{"ipv6_no_token", "[fd00::1]:10250", ""},
		{"hostname", "node-1:10250", "tok"},
		{"token_with_line_breaks", "node-1:10250", " a\r\nInjected: yes\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "https://"+tc.addr+"/metrics/resource", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", kubeletAccept)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			var want bytes.Buffer
			if err := req.Write(&want); err != nil {
				t.Fatal(err)
			}
			if got := appendGet(nil, tc.addr, "/metrics/resource", tc.token); string(got) != want.String() {
				t.Errorf("got\n%q\nwant\n%q", got, want.String())
			}
		})
	}
}

// TestScrapeKubelets scrapes several kubelets at once, as every
// resolution does: each node's counters and pods are in the batch with
// their labels, a kubelet that fails is left out, and the batch is an
// error only when every one failed.
func TestScrapeKubelets(t *testing.T) {
	fixture, err := os.ReadFile("testdata/metrics-resource.txt")
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKubelets(KubeletOptions{InsecureTLS: true, UseNodeStatusPort: true, PreferredAddressTypes: []string{"InternalIP"}}, nil, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	// Every pod of the fixture is known, with labels.
	_, fixturePods, err := decodeResourceMetrics(bytes.NewReader(fixture), time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fixturePods {
		k.labels.set(p.Namespace, p.Name, map[string]string{"app": p.Name})
	}
	var down atomic.Bool
	const nodes = 12
	for i := range nodes {
		failing := i == 3
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if failing || down.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write(fixture)
		}))
		t.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		port, _ := strconv.Atoi(u.Port())
		k.nodes[fmt.Sprintf("node-%d", i)] = kubeletNode{labels: Labels{"n", strconv.Itoa(i)}, addresses: map[string]string{"InternalIP": u.Hostname()}, statusPort: port}
	}
	close(k.nodesListed)
	close(k.podsListed)
	for round := range 2 { // the second on the kept connections
		b, err := k.Scrape(context.Background())
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(b.Nodes) != nodes-1 || len(b.Pods) != (nodes-1)*len(fixturePods) {
			t.Fatalf("round %d: %d nodes and %d pods, want %d and %d", round, len(b.Nodes), len(b.Pods), nodes-1, (nodes-1)*len(fixturePods))
		}
		for _, n := range b.Nodes {
			if n.Name == "node-3" || n.Labels[1] != strings.TrimPrefix(n.Name, "node-") || n.Usage.CPUNanoseconds != 357354910000 {
				t.Errorf("round %d: node %+v", round, n)
			}
		}
		for _, p := range b.Pods {
			if v, _ := p.Labels.Lookup("app"); v != p.Name || len(p.Containers) == 0 {
				t.Errorf("round %d: pod %+v", round, p)
			}
		}
	}
	down.Store(true)
	if b, err := k.Scrape(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("every kubelet down: %+v, %v", b, err)
	}
}

// TestSendKeptWriteFails: a kept connection that cannot be written any
// more is given up, and the GET goes out on a new one (by send, which may
// dial; sendKept never does).
func TestSendKeptWriteFails(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	c := newKubeletConns(&tls.Config{InsecureSkipVerify: true}, 5*time.Second) //nolint:gosec // a test server
	addr := srv.Listener.Addr().String()
	get := func(r *kubeletRequest) {
		t.Helper()
		if err := r.read(bufio.NewReader(nil), func(body io.Reader, _ http.Header) error {
			_, err := io.Copy(io.Discard, body)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := c.send(context.Background(), addr, "/metrics/resource", "")
	if err != nil {
		t.Fatal(err)
	}
	get(r)
	if r := c.sendKept(context.Background(), "127.0.0.1:1", "/metrics/resource", ""); r != nil {
		t.Fatal("sendKept without a kept connection gave a request")
	}
	c.idle[addr].conn.Close() // as if the kubelet had reset it
	if r := c.sendKept(context.Background(), addr, "/metrics/resource", ""); r != nil {
		t.Fatal("sendKept on a closed connection gave a request")
	}
	if _, kept := c.idle[addr]; kept {
		t.Fatal("the closed connection is still kept")
	}
	if r, err = c.send(context.Background(), addr, "/metrics/resource", ""); err != nil {
		t.Fatal(err)
	}
	get(r)
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}
