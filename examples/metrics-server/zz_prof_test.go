package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kubeletText is node i's /metrics/resource at t, as a kubelet writes it.
func kubeletText(i, pods int, t time.Time) []byte {
	var b bytes.Buffer
	ts := strconv.FormatInt(t.UnixMilli(), 10)
	secs := float64(t.UnixNano()) / 1e9
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	type ctr struct{ ns, pod, c string; cpu float64; mem float64 }
	var cs []ctr
	for j := 0; j < pods; j++ {
		ns, pod := fmt.Sprintf("team-%d", (i+j)%10), fmt.Sprintf("app-%d-%d", i, j)
		cs = append(cs, ctr{ns, pod, "app", float64(1+(7*i+j)%50) / 1000 * (secs - 1.7e9), float64(8+(i+j)%64) * 1048576})
		if j%3 == 0 {
			cs = append(cs, ctr{ns, pod, "sidecar", float64(1+(i+j)%5) / 1000 * (secs - 1.7e9), 4 * 1048576})
		}
	}
	b.WriteString("# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds\n# TYPE container_cpu_usage_seconds_total counter\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{container=%q,namespace=%q,pod=%q} %s %s\n", c.c, c.ns, c.pod, f(c.cpu), ts)
	}
	b.WriteString("# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes\n# TYPE container_memory_working_set_bytes gauge\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{container=%q,namespace=%q,pod=%q} %s %s\n", c.c, c.ns, c.pod, f(c.mem), ts)
	}
	b.WriteString("# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds\n# TYPE container_start_time_seconds gauge\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "container_start_time_seconds{container=%q,namespace=%q,pod=%q} %s %s\n", c.c, c.ns, c.pod, f(1.7e9), ts)
	}
	fmt.Fprintf(&b, "# HELP node_cpu_usage_seconds_total [STABLE] x\n# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total %s %s\n", f(0.5*(secs-1.7e9)), ts)
	fmt.Fprintf(&b, "# HELP node_memory_working_set_bytes [STABLE] x\n# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes %s %s\n", f(2e9), ts)
	b.WriteString("# HELP pod_cpu_usage_seconds_total [STABLE] x\n# TYPE pod_cpu_usage_seconds_total counter\n")
	for j := 0; j < pods; j++ {
		fmt.Fprintf(&b, "pod_cpu_usage_seconds_total{namespace=%q,pod=%q} %s %s\n", fmt.Sprintf("team-%d", (i+j)%10), fmt.Sprintf("app-%d-%d", i, j), f(1), ts)
	}
	b.WriteString("# HELP pod_memory_working_set_bytes [STABLE] x\n# TYPE pod_memory_working_set_bytes gauge\n")
	for j := 0; j < pods; j++ {
		fmt.Fprintf(&b, "pod_memory_working_set_bytes{namespace=%q,pod=%q} %s %s\n", fmt.Sprintf("team-%d", (i+j)%10), fmt.Sprintf("app-%d-%d", i, j), f(1e7), ts)
	}
	b.WriteString("# HELP resource_scrape_error [STABLE] x\n# TYPE resource_scrape_error gauge\nresource_scrape_error 0\n")
	return b.Bytes()
}

// synthSource decodes N nodes' texts as Kubelets.Scrape does.
func synthSource(nodes int) Source {
	return SourceFunc(func(ctx context.Context) (*Batch, error) {
		now := time.Now()
		texts := make([][]byte, nodes)
		for i := range texts {
			texts[i] = kubeletText(i+1, 30, now)
		}
		type result struct {
			node *NodeSample
			pods []PodSample
		}
		results := make(chan result, nodes)
		var wg sync.WaitGroup
		for i := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, p, err := decodeResourceMetrics(bytes.NewReader(texts[i]), now)
				if err != nil {
					panic(err)
				}
				n.Name = fmt.Sprintf("node-%d", i+1)
				results <- result{n, p}
			}()
		}
		wg.Wait()
		close(results)
		b := &Batch{}
		for r := range results {
			b.Nodes = append(b.Nodes, *r.node)
			b.Pods = append(b.Pods, r.pods...)
		}
		return b, nil
	})
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestProfCycle runs the server over a synthetic source of PROF_NODES nodes
// for PROF_CYCLES scrapes and reports CPU per cycle and memory.
func TestProfCycle(t *testing.T) {
	nodes, _ := strconv.Atoi(os.Getenv("PROF_NODES"))
	if nodes == 0 {
		t.Skip("PROF_NODES")
	}
	cycles := 10
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	a, err := setupSource([]string{"--data-dir", t.TempDir(), "--metric-resolution", "1h"}, io.Discard, ln, synthSource(nodes))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.run(ctx, io.Discard) }()
	time.Sleep(3 * time.Second)
	// Text generation is the test's cost, not the server's: pre-measure it.
	g0 := cpuNow()
	for i := 1; i <= nodes; i++ {
		_ = kubeletText(i, 30, time.Now())
	}
	gen := cpuNow() - g0
	c0 := cpuNow()
	for range cycles {
		a.store.scrape(ctx)
		time.Sleep(2 * time.Second) // the feed follows
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("CPU per cycle %v (text generation %v of it); heap in use %d MiB, sys %d MiB", (cpuNow()-c0)/time.Duration(cycles), gen, ms.HeapInuse>>20, ms.Sys>>20)
}
