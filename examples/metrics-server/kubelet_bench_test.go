package main

import (
	"bytes"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// kubeletText is node i's /metrics/resource at t, as a kubelet writes it.
func kubeletText(i, pods int, t time.Time) []byte {
	var b bytes.Buffer
	ts := strconv.FormatInt(t.UnixMilli(), 10)
	secs := float64(t.UnixNano()) / 1e9
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	type ctr struct {
		ns, pod, c string
		cpu, mem   float64
	}
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

// protoAnswer is text (the exposition text format) re-encoded in the
// delimited protobuf format, as a kubelet answers a scraper that asks for
// it: the same families, parsed and encoded by expfmt.
func protoAnswer(tb testing.TB, text []byte, only ...string) []byte {
	tb.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, expfmt.FmtProtoDelim)
	for _, name := range slices.Sorted(maps.Keys(families)) {
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		if err := enc.Encode(families[name]); err != nil {
			tb.Fatal(err)
		}
	}
	return out.Bytes()
}

// BenchmarkDecodeResourceMetrics decodes one node's /metrics/resource with
// 30 pods (40 containers), as every scrape does for every node (with one
// of the scrape's parsers, reused), in each format a kubelet serves.
func BenchmarkDecodeResourceMetrics(b *testing.B) {
	text := kubeletText(1, 30, time.Now())
	for _, tc := range []struct {
		name   string
		format expfmt.Format
		answer []byte
	}{
		{"text", expfmt.FmtText, text},
		{"protobuf", expfmt.FmtProtoDelim, protoAnswer(b, text)},
		{"protobuf_named", expfmt.FmtProtoDelim, protoAnswer(b, text, familyNames()...)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := newResourceParser()
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.answer)))
			for b.Loop() {
				node, pods, err := p.decode(bytes.NewReader(tc.answer), tc.format, time.Now())
				if err != nil || node == nil || len(pods) != 30 {
					b.Fatalf("%v %v %d", err, node, len(pods))
				}
			}
		})
	}
}

// BenchmarkStoreAdd adds the batch of a scrape of 1,000 kubelets with 30
// pods each (the pods in the order the answers arrive), alternating two
// batches a resolution apart, as the store does every resolution.
func BenchmarkStoreAdd(b *testing.B) {
	t0 := time.Now()
	var batches [2]*Batch
	for k := range batches {
		batch := &Batch{}
		p := newResourceParser()
		for i := range 1000 {
			node, pods, err := p.decode(bytes.NewReader(kubeletText(i, 30, t0.Add(time.Duration(k)*15*time.Second))), expfmt.FmtText, t0)
			if err != nil {
				b.Fatal(err)
			}
			node.Name = fmt.Sprintf("node-%d", i)
			batch.Nodes = append(batch.Nodes, *node)
			batch.Pods = append(batch.Pods, pods...)
		}
		batches[k] = batch
	}
	st := NewStore(nil, 15*time.Second, nil)
	st.Add(batches[0])
	b.ReportAllocs()
	k := 1
	for b.Loop() {
		st.Add(batches[k])
		k = 1 - k
	}
}

// familyNames are resourceFamilies as strings.
func familyNames() []string {
	names := make([]string, len(resourceFamilies))
	for i, f := range resourceFamilies {
		names[i] = string(f)
	}
	return names
}

// TestFamilyNameField: familyName is the name field's number in the
// MetricFamily message expfmt decodes.
func TestFamilyNameField(t *testing.T) {
	if got := (&dto.MetricFamily{}).ProtoReflect().Descriptor().Fields().ByName("name").Number(); got != familyName {
		t.Fatalf("MetricFamily's name is field %d, familyName says %d", got, familyName)
	}
}

// BenchmarkSnapshotLive scrapes 1,000 kubelets' protobuf answers (30 pods
// each) into a batch, twice, adds both batches to a store as a scrape
// does and drops them, then reports the heap the store holds: what a
// server keeps through a resolution for the pods' samples (live-MB), and
// how long a batch's decode and Add take.
func BenchmarkSnapshotLive(b *testing.B) {
	const nodes = 1000
	t0 := time.Now()
	var answers [2][][]byte
	for k := range answers {
		for i := range nodes {
			answers[k] = append(answers[k], protoAnswer(b, kubeletText(i, 30, t0.Add(time.Duration(k)*15*time.Second))))
		}
	}
	scrape := func(k int) *Batch {
		batch := &Batch{}
		p := newResourceParser()
		for i := range nodes {
			node, pods, err := p.decode(bytes.NewReader(answers[k][i]), expfmt.FmtProtoDelim, t0)
			if err != nil {
				b.Fatal(err)
			}
			node.Name = fmt.Sprintf("node-%d", i)
			batch.Nodes = append(batch.Nodes, *node)
			batch.Pods = append(batch.Pods, pods...)
		}
		return batch
	}
	reportLive(b, func() any {
		st := NewStore(nil, 15*time.Second, nil)
		st.Add(scrape(0))
		st.Add(scrape(1))
		return st
	})
}

// reportLive runs build at every iteration of b and reports, as live-MB,
// the heap what it returns keeps alive (measured after a GC before and
// after it).
func reportLive(b *testing.B, build func() any) {
	var live uint64
	b.ReportAllocs()
	for b.Loop() {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		kept := build()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		live = ms.HeapAlloc - before
		runtime.KeepAlive(kept)
	}
	b.ReportMetric(float64(live)/(1<<20), "live-MB")
}
