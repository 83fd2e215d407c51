package watch

import (
	"context"
	"errors"
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
