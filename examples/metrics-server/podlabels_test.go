package main

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"
)

// TestPodLabels: each pod gets its own labels back, sorted by key; pods
// with equal labels share one slice and one namespace string; sets no pod
// holds any more are dropped at the next compaction.
func TestPodLabels(t *testing.T) {
	p := newPodLabels(0)
	web := map[string]string{"app": "web", "pod-template-hash": "abc"}
	p.set(podKey{string([]byte("team-1")), "web-1"}, web)
	p.set(podKey{string([]byte("team-1")), "web-2"}, map[string]string{"pod-template-hash": "abc", "app": "web"})
	p.set(podKey{"team-2", "db-0"}, map[string]string{"app": "db", "": "x", "long": string(make([]byte, 300))})
	p.set(podKey{"team-2", "bare"}, nil)

	for _, tc := range []struct {
		key  podKey
		want Labels
	}{
		{podKey{"team-1", "web-1"}, Labels{"app", "web", "pod-template-hash", "abc"}},
		{podKey{"team-1", "web-2"}, Labels{"app", "web", "pod-template-hash", "abc"}},
		{podKey{"team-2", "db-0"}, Labels{"", "x", "app", "db", "long", string(make([]byte, 300))}},
		{podKey{"team-2", "bare"}, nil},
		{podKey{"team-2", "unknown"}, nil},
	} {
		if got := p.get(tc.key); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.key, got, tc.want)
		}
	}
	a, b := p.get(podKey{"team-1", "web-1"}), p.get(podKey{"team-1", "web-2"})
	if &a[0] != &b[0] {
		t.Error("two pods with the same labels hold two copies of them")
	}
	var keys []podKey
	for k := range p.byPod {
		if k.namespace == "team-1" {
			keys = append(keys, k)
		}
	}
	ns := unsafe.StringData(p.namespace(string([]byte("team-1"))))
	if len(keys) != 2 || unsafe.StringData(keys[0].namespace) != ns || unsafe.StringData(keys[1].namespace) != ns {
		t.Errorf("namespace team-1: the pods' keys do not share one string")
	}

	// Pods come and go with labels of their own (a rollout a minute):
	// the sets kept stay about as many as the pods hold.
	for i := range 5000 {
		key := podKey{"team-3", fmt.Sprintf("job-%d", i)}
		p.set(key, map[string]string{"job": fmt.Sprint(i)})
		p.delete(key)
	}
	if n := len(p.sets); n >= 2*minInternCompact {
		t.Errorf("%d label sets kept for 2 held", n)
	}
	if got := p.get(podKey{"team-1", "web-1"}); !slices.Equal(got, Labels{"app", "web", "pod-template-hash", "abc"}) {
		t.Errorf("after compactions: %q", got)
	}
	p.compact()
	if n := len(p.sets); n != 2 {
		t.Errorf("after a compaction %d label sets, want the 2 held", n)
	}
}
