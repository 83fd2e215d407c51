package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// TestStorePods: two batches make pod metrics whatever order the kubelets
// report the pods in: the CPU rate of each container between the batches,
// lists by namespace and name (all, or one namespace's), a pod the first
// batch lacked or whose counter reset has none, a pod reported twice is
// the last report, and GET finds each.
func TestStorePods(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	pod := func(ns, name string, at time.Time, cpuSeconds ...uint64) PodSample {
		p := PodSample{Namespace: ns, Name: name}
		for i, c := range cpuSeconds {
			p.Containers = append(p.Containers, ContainerSample{Name: fmt.Sprintf("c%d", i), Usage: Usage{Time: at, CPUNanoseconds: c * 1e9, MemoryBytes: 1 << 20}})
		}
		return p
	}
	st := NewStore(nil, time.Second, nil)
	st.Add(&Batch{Pods: []PodSample{
		pod("b", "x", t0, 10), pod("a", "z", t0, 10, 20), pod("a", "y", t0, 10), pod("c", "reset", t0, 50),
	}})
	t1 := t0.Add(10 * time.Second)
	st.Add(&Batch{Pods: []PodSample{
		pod("b", "x", t1, 99), // reported twice: the last counts
		pod("c", "reset", t1, 1), pod("a", "y", t1, 15), pod("c", "new", t1, 1), pod("b", "x", t1, 20), pod("a", "z", t1, 11, 40),
	}})
	list := func(ns string) string {
		t.Helper()
		items, err := st.PodList(context.Background(), ns, rest.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range items {
			var m PodMetrics
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			var cpu []string
			for _, c := range m.Containers {
				cpu = append(cpu, c.Usage["cpu"])
			}
			out = append(out, m.Namespace+"/"+m.Name+"="+strings.Join(cpu, ","))
		}
		return strings.Join(out, " ")
	}
	if got, want := list(""), "a/y=500m a/z=100m,2 b/x=1"; got != want {
		t.Errorf("all pods: %s, want %s", got, want)
	}
	if got, want := list("a"), "a/y=500m a/z=100m,2"; got != want {
		t.Errorf("namespace a: %s, want %s", got, want)
	}
	if got := list("c"); got != "" {
		t.Errorf("namespace c (a new pod, a reset counter): %s, want none", got)
	}
	if got := list("aa"); got != "" {
		t.Errorf("namespace aa: %s", got)
	}
	if _, err := st.Pod(context.Background(), "b", "x"); err != nil {
		t.Errorf("GET b/x: %v", err)
	}
	for _, k := range [][2]string{{"c", "new"}, {"c", "reset"}, {"b", "y"}, {"", "x"}} {
		if _, err := st.Pod(context.Background(), k[0], k[1]); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("GET %s/%s: %v, want not found", k[0], k[1], err)
		}
	}
}

// TestRateTruncatesAsMetricsServer: a container using 44m/3 of a core reads
// 14666666n, as metrics-server computes it, so kubectl top (which rounds
// each container up to a millicore and sums them) shows the pod at 44m on
// both servers. Rounded to the nearest nanocore it read 14666667n, and the
// pod showed 45m.
func TestRateTruncatesAsMetricsServer(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	window := 15 * time.Second
	prev := Usage{Time: t0, CPUNanoseconds: nanos(1234.5)}
	cur := Usage{Time: t0.Add(window), CPUNanoseconds: prev.CPUNanoseconds + 220_000_000} // 0.22 s in 15 s
	got, w, ok := rate(cur, prev)
	if !ok || w != window || got != 14666666 {
		t.Fatalf("rate = %d, %v, %v; want 14666666n over %v", got, w, ok, window)
	}
	if got := nanos(0.1); got != 100000000 {
		t.Fatalf("nanos(0.1) = %d", got)
	}
}
