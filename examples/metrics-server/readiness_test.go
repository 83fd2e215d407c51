package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/rest"
)

// gatedSource is a Source whose first scrapes find no node or pod (a
// metrics-server whose node list is not synced yet, or kubelets not yet
// reachable); then it waits for open and answers as next does.
type gatedSource struct {
	empty   int
	scraped chan int // the number of each scrape that returned
	open    chan struct{}
	next    Source
	n       int
}

func (g *gatedSource) Scrape(ctx context.Context) (*Batch, error) {
	g.n++
	if g.n > g.empty {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var b *Batch
	if g.n <= g.empty {
		b = &Batch{}
	} else {
		var err error
		if b, err = g.next.Scrape(ctx); err != nil {
			return nil, err
		}
	}
	select {
	case g.scraped <- g.n:
	default:
	}
	return b, nil
}

// TestReadyzWaitsForMetricsToServe: /readyz (what kube-aggregator and the
// kubelet probe) fails with metrics-server's "no metrics to serve" while
// GET /apis/metrics.k8s.io/v1beta1/nodes would answer no items, even once
// two scrapes are in; it passes only when there are metrics.
func TestReadyzWaitsForMetricsToServe(t *testing.T) {
	spec, err := SpecFromNames([]string{"node-1", "node-2"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := NewSimulated(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := &gatedSource{empty: 2, scraped: make(chan int, 8), open: make(chan struct{}), next: sim}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, err := setupSource([]string{"--data-dir", dir, "--metric-resolution", "1s"}, io.Discard, ln, src)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	s := &started{url: a.srv.URL(), dataDir: dir}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "certs", "admin.crt"), filepath.Join(dir, "certs", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}}
	get := func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd")
		req.Header.Set("Accept", "application/json, */*")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Two scrapes are in, neither found a node.
	for want := 1; want <= 2; want++ {
		select {
		case n := <-src.scraped:
			if n != want {
				t.Fatalf("scrape %d returned, want %d", n, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("scrape %d never returned", want)
		}
	}
	waitFor(t, "the store to hold both batches", func() (bool, string) {
		return a.store.snapshot().batches >= 2, "fewer than two batches"
	})
	if code, body := get("/apis/metrics.k8s.io/v1beta1/nodes"); code != 200 || !strings.Contains(body, `"items":[]`) {
		t.Fatalf("nodes before any metrics: %d %s", code, body)
	}
	if code, body := get("/readyz"); code == 200 {
		t.Errorf("/readyz passed with no metrics to serve: %s", body)
	}
	if code, body := get("/readyz?verbose"); code != 500 || !strings.Contains(body, "[-]metric-storage-ready failed") {
		t.Errorf("/readyz?verbose: %d %s", code, body)
	}
	if code, body := get("/readyz/metric-storage-ready"); code != 500 || !strings.Contains(body, "no metrics to serve") {
		t.Errorf("/readyz/metric-storage-ready: %d %s", code, body)
	}

	// Nodes appear; ready exactly when a pair of samples gives metrics.
	close(src.open)
	waitFor(t, "readyz", func() (bool, string) {
		code, body := get("/readyz")
		return code == 200, body
	})
	if code, body := get("/apis/metrics.k8s.io/v1beta1/nodes"); code != 200 || !strings.Contains(body, `"name":"node-1"`) || !strings.Contains(body, `"name":"node-2"`) {
		t.Errorf("nodes once ready: %d %s", code, body)
	}
}

// TestStoreReady: the store is ready exactly when a list would have an item.
func TestStoreReady(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(name string, at time.Duration, cpu uint64) NodeSample {
		return NodeSample{Name: name, Usage: Usage{Time: t0.Add(at), CPUNanoseconds: cpu, MemoryBytes: 1 << 20}}
	}
	pod := func(at time.Duration, cpu uint64, containers ...string) PodSample {
		p := PodSample{Namespace: "ns", Name: "p"}
		for _, c := range containers {
			p.Containers = append(p.Containers, ContainerSample{Name: c, Usage: Usage{Time: t0.Add(at), CPUNanoseconds: cpu}})
		}
		return p
	}
	tests := []struct {
		name    string
		batches []Batch
		ready   bool
	}{
		{name: "no_batch", ready: false},
		{name: "one_batch", batches: []Batch{{Nodes: []NodeSample{node("n", 0, 1)}}}, ready: false},
		{name: "two_empty_batches", batches: []Batch{{}, {}}, ready: false},
		{name: "node_only_in_newest", batches: []Batch{{}, {Nodes: []NodeSample{node("n", time.Second, 2)}}}, ready: false},
		{name: "different_nodes", batches: []Batch{{Nodes: []NodeSample{node("a", 0, 1)}}, {Nodes: []NodeSample{node("b", time.Second, 2)}}}, ready: false},
		{name: "counter_reset", batches: []Batch{{Nodes: []NodeSample{node("n", 0, 5)}}, {Nodes: []NodeSample{node("n", time.Second, 1)}}}, ready: false},
		{name: "same_time", batches: []Batch{{Nodes: []NodeSample{node("n", 0, 1)}}, {Nodes: []NodeSample{node("n", 0, 2)}}}, ready: false},
		{name: "node_pair", batches: []Batch{{Nodes: []NodeSample{node("n", 0, 1)}}, {Nodes: []NodeSample{node("n", time.Second, 2)}}}, ready: true},
		{name: "old_pair_pushed_out", batches: []Batch{{Nodes: []NodeSample{node("n", 0, 1)}}, {Nodes: []NodeSample{node("n", time.Second, 2)}}, {}}, ready: false},
		{name: "pod_pair", batches: []Batch{{Pods: []PodSample{pod(0, 1, "c")}}, {Pods: []PodSample{pod(time.Second, 2, "c")}}}, ready: true},
		{name: "pod_with_new_container", batches: []Batch{{Pods: []PodSample{pod(0, 1, "c")}}, {Pods: []PodSample{pod(time.Second, 2, "c", "d")}}}, ready: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(SourceFunc(func(context.Context) (*Batch, error) { return &Batch{}, nil }), 0, nil)
			for i := range tt.batches {
				s.Add(&tt.batches[i])
			}
			err := s.Ready(context.Background())
			if (err == nil) != tt.ready {
				t.Fatalf("Ready = %v, want ready %v", err, tt.ready)
			}
			if err != nil && err.Error() != "no metrics to serve" {
				t.Errorf("error %q, want metrics-server's %q", err, "no metrics to serve")
			}
			nodes, _ := s.NodeList(context.Background(), "", rest.ListOptions{})
			pods, _ := s.PodList(context.Background(), "", rest.ListOptions{})
			if has := len(nodes)+len(pods) > 0; has != tt.ready {
				t.Errorf("lists hold %d nodes and %d pods, ready %v", len(nodes), len(pods), tt.ready)
			}
		})
	}
}
