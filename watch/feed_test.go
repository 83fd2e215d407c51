package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// TestFeed: Put numbers each change (an unchanged object is none), splices
// the revision into the bytes, Remove emits DELETED, a watch from a past
// revision replays what followed, and writes through storage.Interface are
// refused.
func TestFeed(t *testing.T) {
	ctx := context.Background()
	f := NewFeed("metrics.k8s.io", "nodes")
	put := func(name, cpu string) {
		t.Helper()
		if err := f.Put([]byte(`{"kind":"NodeMetrics","metadata":{"name":"` + name + `"},"usage":{"cpu":"` + cpu + `"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	put("node-1", "250m")
	put("node-2", "1")
	put("node-1", "250m") // unchanged: no event
	if rev, _ := f.CurrentRevision(ctx); rev != 2 {
		t.Fatalf("revision %d after two changes", rev)
	}
	o, err := f.Get(ctx, storage.ObjectKey("metrics.k8s.io", "nodes", "", "node-1"), storage.GetOptions{})
	if err != nil || o.ResourceVersion != 1 || !strings.Contains(string(o.Data), `"resourceVersion":"1"`) {
		t.Fatalf("node-1: %+v %s %v", o, o.Data, err)
	}
	w, err := f.Watch(ctx, storage.ResourcePrefix("metrics.k8s.io", "nodes", ""), storage.WatchOptions{ResourceVersion: "1", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	put("node-1", "300m")
	if err := f.Remove("", "node-2"); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ  storage.EventType
		name string
		rev  uint64
	}{{storage.EventAdded, "node-2", 2}, {storage.EventModified, "node-1", 3}, {storage.EventDeleted, "node-2", 4}}
	for _, wv := range want {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != wv.typ || ev.Object.Meta.Name != wv.name || ev.Object.ResourceVersion != wv.rev {
				t.Errorf("event %s %s %d, want %+v", ev.Type, ev.Object.Meta.Name, ev.Object.ResourceVersion, wv)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event; want %+v", wv)
		}
	}
	res, err := f.List(ctx, storage.ResourcePrefix("metrics.k8s.io", "nodes", ""), storage.ListOptions{})
	if err != nil || len(res.Items) != 1 || res.ResourceVersion != 4 {
		t.Errorf("list: %+v %v", res, err)
	}
	if _, err := f.Create(ctx, "k", []byte(`{}`)); err == nil {
		t.Error("Create through storage.Interface accepted")
	}
	if _, err := f.Delete(ctx, "k", storage.DeleteOptions{}); err == nil {
		t.Error("Delete through storage.Interface accepted")
	}
}

// TestFeedSameState: whether a Put is a change does not depend on how the
// JSON is written (whitespace) nor on a resourceVersion in it, whichever way
// the feed compares (the hash of compact JSON without a resourceVersion, or
// the full comparison).
func TestFeedSameState(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		puts     []string
		wantRevs uint64
	}{
		{"compact_unchanged", []string{`{"metadata":{"name":"a"},"v":1}`, `{"metadata":{"name":"a"},"v":1}`}, 1},
		{"compact_changed", []string{`{"metadata":{"name":"a"},"v":1}`, `{"metadata":{"name":"a"},"v":2}`}, 2},
		{"whitespace_only", []string{`{"metadata":{"name":"a"},"v":1}`, `{"metadata": {"name": "a"}, "v": 1}`, "{\"metadata\":{\"name\":\"a\"},\n\"v\":1}"}, 1},
		{"space_in_a_string_changed", []string{`{"metadata":{"name":"a"},"m":"x y"}`, `{"metadata":{"name":"a"},"m":"x  y"}`}, 2},
		{"resource_version_only", []string{`{"metadata":{"name":"a"},"v":1}`, `{"metadata":{"name":"a","resourceVersion":"7"},"v":1}`, `{"metadata":{"name":"a"},"v":1}`}, 1},
		{"back_and_forth", []string{`{"metadata":{"name":"a"},"v":1}`, `{"metadata":{"name":"a"},"v":2}`, `{"metadata":{"name":"a"},"v":1}`}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFeed("g", "r")
			for _, p := range tt.puts {
				if err := f.Put([]byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			if rev, _ := f.CurrentRevision(ctx); rev != tt.wantRevs {
				t.Errorf("%d changes, want %d", rev, tt.wantRevs)
			}
		})
	}
}

// TestFeedExpired: a watch from before the history kept is ErrExpired.
func TestFeedExpired(t *testing.T) {
	f := NewFeed("g", "r")
	for i := range feedHistory + 10 {
		if err := f.Put([]byte(`{"metadata":{"name":"n"},"v":` + strings.Repeat("1", i%7+1) + `}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Watch(context.Background(), "/", storage.WatchOptions{ResourceVersion: "1", Recursive: true}); !errors.Is(err, storage.ErrExpired) {
		t.Errorf("watch from 1: %v, want ErrExpired", err)
	}
}

// BenchmarkFeedPut puts a PodMetrics-sized object that changed (a new
// sample), as a computed resource's feed does for every object each cycle.
func BenchmarkFeedPut(b *testing.B) {
	f := NewFeed("metrics.k8s.io", "pods")
	objs := make([][]byte, 1000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := i % len(objs)
		objs[n] = fmt.Appendf(objs[n][:0], `{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"name":"app-%d","namespace":"team-%d","creationTimestamp":"2026-11-26T10:00:00Z","labels":{"app":"app-%d"}},"timestamp":"2026-11-26T10:00:%02dZ","window":"15s","containers":[{"name":"app","usage":{"cpu":"%dn","memory":"12Mi"}}]}`, n, n%10, n%10, i%60, i)
		if err := f.Put(objs[n]); err != nil {
			b.Fatal(err)
		}
	}
}
