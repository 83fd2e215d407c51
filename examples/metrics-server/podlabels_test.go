package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// TestPodLabels: each pod gets its own labels back, sorted by key; pods
// with equal labels share one slice; sets no pod holds any more are
// dropped at the next compaction.
func TestPodLabels(t *testing.T) {
	p := newPodLabels()
	get := func(namespace, name string) Labels { return p.get(appendPodRef(nil, namespace, name)) }
	p.set("team-1", "web-1", map[string]string{"app": "web", "pod-template-hash": "abc"})
	p.set("team-1", "web-2", map[string]string{"pod-template-hash": "abc", "app": "web"})
	p.set("team-2", "db-0", map[string]string{"app": "db", "": "x", "long": string(make([]byte, 300))})
	p.set("team-2", "bare", nil)
	p.set("team-2", "gone", map[string]string{"app": "gone"})
	p.delete("team-2", "gone")

	for _, tc := range []struct {
		namespace, name string
		want            Labels
	}{
		{"team-1", "web-1", Labels{"app", "web", "pod-template-hash", "abc"}},
		{"team-1", "web-2", Labels{"app", "web", "pod-template-hash", "abc"}},
		{"team-2", "db-0", Labels{"", "x", "app", "db", "long", string(make([]byte, 300))}},
		{"team-2", "bare", nil},
		{"team-2", "gone", nil},
		{"team-2", "unknown", nil},
	} {
		if got := get(tc.namespace, tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("%s/%s: %q, want %q", tc.namespace, tc.name, got, tc.want)
		}
	}
	if a, b := get("team-1", "web-1"), get("team-1", "web-2"); &a[0] != &b[0] {
		t.Error("two pods with the same labels hold two copies of them")
	}

	// Pods come and go with labels of their own (a rollout a minute):
	// the sets kept stay about as many as the pods hold.
	for i := range 5000 {
		p.set("team-3", fmt.Sprintf("job-%d", i), map[string]string{"job": fmt.Sprint(i)})
		p.delete("team-3", fmt.Sprintf("job-%d", i))
	}
	if n := len(p.sets); n >= 2*minInternCompact {
		t.Errorf("%d label sets kept for 3 held", n)
	}
	if got := get("team-1", "web-1"); !slices.Equal(got, Labels{"app", "web", "pod-template-hash", "abc"}) {
		t.Errorf("after compactions: %q", got)
	}
	p.compact()
	if n := len(p.sets); n != 2 {
		t.Errorf("after a compaction %d label sets, want the 2 held", n)
	}
}

// BenchmarkPodLabelsLive keeps the labels of 30,000 pods as the pods
// informer delivers them (ten distinct sets, as the e2e cluster's pods
// have) and reports the heap they hold (live-MB).
func BenchmarkPodLabelsLive(b *testing.B) {
	var items []json.RawMessage
	for i := range 1000 {
		for j := range 30 {
			items = append(items, json.RawMessage(fmt.Sprintf(`{"metadata":{"name":"app-%d-%d","namespace":"team-%d","labels":{"app":"app-%d"}},"spec":{"nodeName":"node-%d"}}`, i, j, (i+j)%10, j%10, i)))
		}
	}
	reportLive(b, func() any {
		p := newPodLabels()
		for _, raw := range items {
			key, labels, err := decodePodLabels(raw)
			if err != nil {
				b.Fatal(err)
			}
			p.set(key.namespace, key.name, labels)
		}
		return p
	})
}
