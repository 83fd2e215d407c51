package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/annexapi/annex/meta"
)

// TestObjectJSON: the JSON json.go writes is what encoding/json makes of the
// Go types of store.go (their schema is what the server publishes), field
// by field, with kind and apiVersion.
func TestObjectJSON(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	at := now.Add(-2 * time.Second)
	nodeLabels := map[string]string{"kubernetes.io/hostname": "node-1", "a": "b"}
	node := &nodeEntry{name: "node-1", labels: LabelsOf(nodeLabels),
		cur: Usage{Time: at, MemoryBytes: 1536 << 20}, cpu: 250_000_000, window: 15*time.Second + 4*time.Millisecond, ok: true}
	pod := &podEntry{namespace: "default", name: `we"ird<0>`, window: 15 * time.Second, ok: true,
		containers: []ContainerSample{{Name: "web", Usage: Usage{Time: at.Add(-time.Second), MemoryBytes: 12 << 20}}, {Name: "sidecar", Usage: Usage{Time: at, MemoryBytes: 1000}}}}
	podCPU := []int64{2_000_001, 0}
	tests := []struct {
		name string
		data []byte
		into any
		want any
		kind string
	}{
		{"node", appendNodeJSON(nil, node, now), &NodeMetrics{}, &NodeMetrics{
			ObjectMeta: meta.ObjectMeta{Name: "node-1", CreationTimestamp: meta.Time{Time: now}, Labels: nodeLabels},
			Timestamp:  "2026-11-26T09:59:58Z", Window: "15.004s", Usage: ResourceList{"cpu": "250m", "memory": "1536Mi"}}, "NodeMetrics"},
		{"pod_without_labels", appendPodJSON(nil, pod, podCPU, now), &PodMetrics{}, &PodMetrics{
			ObjectMeta: meta.ObjectMeta{Name: `we"ird<0>`, Namespace: "default", CreationTimestamp: meta.Time{Time: now}},
			Timestamp:  "2026-11-26T09:59:58Z", Window: "15s",
			Containers: []ContainerMetrics{{Name: "web", Usage: ResourceList{"cpu": "2000001n", "memory": "12Mi"}}, {Name: "sidecar", Usage: ResourceList{"cpu": "0", "memory": "1000"}}}}, "PodMetrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid(tt.data) {
				t.Fatalf("not JSON: %s", tt.data)
			}
			if err := json.Unmarshal(tt.data, tt.into); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tt.into, tt.want) {
				t.Errorf("decoded %+v\nwant %+v\nfrom %s", tt.into, tt.want, tt.data)
			}
			var head struct{ Kind, APIVersion string }
			if err := json.Unmarshal(tt.data, &head); err != nil || head.Kind != tt.kind || head.APIVersion != apiVersion {
				t.Errorf("kind and apiVersion %+v in %s", head, tt.data)
			}
			// Nothing json.go writes is missing from the type, or the
			// other way round: the type re-encoded has the same members.
			var a, b map[string]any
			again, _ := json.Marshal(tt.into)
			_ = json.Unmarshal(tt.data, &a)
			_ = json.Unmarshal(again, &b)
			delete(a, "kind")
			delete(a, "apiVersion")
			if !reflect.DeepEqual(a, b) {
				t.Errorf("written %v\nthe type's %v", a, b)
			}
		})
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "node-1", "app.kubernetes.io/name", `a"b`, `a\b`, "tab\there", "<html>&", "é", "\x00"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// BenchmarkPodJSON writes one PodMetrics, as every list and every scrape's
// watch feed does for every pod.
func BenchmarkPodJSON(b *testing.B) {
	now := time.Now()
	e := &podEntry{namespace: "team-1", name: "app-12-3", labels: Labels{"app", "app-3"}, window: 15 * time.Second, ok: true,
		containers: []ContainerSample{{Name: "app", Usage: Usage{Time: now, MemoryBytes: 23 << 20}}, {Name: "sidecar", Usage: Usage{Time: now, MemoryBytes: 4 << 20}}}}
	cpu := []int64{7_000_000, 1_999_999}
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = appendPodJSON(buf[:0], e, cpu, now)
	}
}

func TestLabels(t *testing.T) {
	l := LabelsOf(map[string]string{"b": "2", "a": "1", "c": ""})
	if fmt.Sprint(l) != "[a 1 b 2 c ]" {
		t.Errorf("LabelsOf: %q, want sorted pairs", l)
	}
	for _, tc := range []struct {
		key, want string
		ok        bool
	}{{"a", "1", true}, {"c", "", true}, {"d", "", false}} {
		if v, ok := l.Lookup(tc.key); v != tc.want || ok != tc.ok {
			t.Errorf("Lookup(%q) = %q, %v", tc.key, v, ok)
		}
	}
	if LabelsOf(nil) != nil {
		t.Error("LabelsOf(nil) is not nil")
	}
}
