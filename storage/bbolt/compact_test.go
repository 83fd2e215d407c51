package bbolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// TestCompactionKeepsLiveStates runs random writes over a few keys with
// compactions and restarts in between, and checks against a model of every
// revision's state that, after each compaction to C: every read after C still
// sees the right states (latest, exact lists at each revision after C,
// watches from each revision after C with their previous states), reads at
// or before C fail with ErrExpired, and the log keeps exactly one entry at or
// before C per key that exists at C.
func TestCompactionKeepsLiveStates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "annex.db")
	s, err := Open(path, Options{UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "c", "d", "e", "f"}
	// states[r] is the model's state at revision r: key -> JSON.
	states := map[uint64]map[string][]byte{initialRevision: {}}
	cur := uint64(initialRevision)
	var compacted uint64
	for step := range 400 {
		name := keys[rng.IntN(len(keys))]
		key := testKey(name)
		next := maps.Clone(states[cur])
		var o storage.Object
		deleted := false
		switch _, exists := next[key]; {
		case !exists:
			o, err = s.Create(ctx, key, testObject(name, fmt.Sprint(step)))
		case rng.IntN(3) == 0:
			o, err = s.Delete(ctx, key, storage.DeleteOptions{})
			deleted = true
		default:
			o, err = s.Update(ctx, key, storage.UpdateOptions{}, func(storage.Object) ([]byte, error) {
				return testObject(name, fmt.Sprint(step)), nil
			})
		}
		if err != nil {
			t.Fatalf("step %d on %s: %v", step, key, err)
		}
		if o.ResourceVersion != cur+1 {
			t.Fatalf("step %d: rv %d, want %d", step, o.ResourceVersion, cur+1)
		}
		cur++
		if deleted {
			delete(next, key)
		} else {
			next[key] = o.Data
		}
		states[cur] = next

		if step%40 != 39 {
			continue
		}
		c := cur - 1 - uint64(rng.IntN(20))
		if err := s.Compact(ctx, c); err != nil {
			t.Fatal(err)
		}
		compacted = max(compacted, c)
		if step%80 == 79 { // restart: the pruned log and revision survive
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(path, Options{UnsafeNoSync: true}); err != nil {
				t.Fatal(err)
			}
		}
		checkCompacted(t, s, states, compacted, cur)
	}
}

func checkCompacted(t *testing.T, s *Store, states map[uint64]map[string][]byte, compacted, cur uint64) {
	t.Helper()
	ctx := context.Background()
	if rev, _ := s.CurrentRevision(ctx); rev != cur {
		t.Fatalf("revision %d, want %d", rev, cur)
	}
	// The log holds, at or before C, one entry per key live at C.
	var kept int
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(bucketEvents)).Cursor()
		for k, _ := c.First(); k != nil && getUint64(k) <= compacted; k, _ = c.Next() {
			kept++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept != len(states[compacted]) {
		t.Fatalf("compacted %d: %d log entries at or before it, want %d (keys live then)", compacted, kept, len(states[compacted]))
	}
	if _, err := s.List(ctx, testPrefix, storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(compacted), ResourceVersionMatch: storage.MatchExact}); !isExpired(err) {
		t.Fatalf("list at compacted %d: %v, want ErrExpired", compacted, err)
	}
	for r := compacted + 1; r <= cur; r++ {
		l, err := s.List(ctx, testPrefix, storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(r), ResourceVersionMatch: storage.MatchExact})
		if err != nil {
			t.Fatalf("list at %d (compacted %d): %v", r, compacted, err)
		}
		want := states[r]
		if len(l.Items) != len(want) {
			t.Fatalf("list at %d: %d items, want %d", r, len(l.Items), len(want))
		}
		for _, o := range l.Items {
			if !bytes.Equal(o.Data, want[o.Key]) {
				t.Fatalf("list at %d: %s = %s, want %s", r, o.Key, o.Data, want[o.Key])
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(states[cur])) {
		if o, err := s.Get(ctx, k, storage.GetOptions{}); err != nil || !bytes.Equal(o.Data, states[cur][k]) {
			t.Fatalf("get %s: %s, %v; want %s", k, o.Data, err, states[cur][k])
		}
	}
	// A watch from just after the compacted revision replays every change
	// with its previous state.
	w, err := s.Watch(ctx, testPrefix, storage.WatchOptions{ResourceVersion: storage.FormatResourceVersion(compacted + 1), Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for r := compacted + 2; r <= cur; r++ {
		ev := recv(t, w)
		before, after := states[r-1], states[r]
		key := ev.Object.Key
		if ev.Object.ResourceVersion != r {
			t.Fatalf("watch event at %d, want %d", ev.Object.ResourceVersion, r)
		}
		prev, had := before[key]
		now, has := after[key]
		switch {
		case !had && has:
			if ev.Type != storage.EventAdded || !bytes.Equal(ev.Object.Data, now) {
				t.Fatalf("event %d: %s %s, want ADDED %s", r, ev.Type, ev.Object.Data, now)
			}
		case had && has:
			if ev.Type != storage.EventModified || !bytes.Equal(ev.Object.Data, now) || ev.Prev == nil || !bytes.Equal(ev.Prev.Data, prev) {
				t.Fatalf("event %d: %s %s, want MODIFIED %s from %s", r, ev.Type, ev.Object.Data, now, prev)
			}
		case had && !has:
			want, err := backend.SetResourceVersion(prev, r)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type != storage.EventDeleted || !bytes.Equal(ev.Object.Data, want) || ev.Prev == nil || !bytes.Equal(ev.Prev.Data, prev) {
				t.Fatalf("event %d: %s %s, want DELETED %s", r, ev.Type, ev.Object.Data, want)
			}
		default:
			t.Fatalf("event %d on %s, which the model did not change", r, key)
		}
	}
}

func isExpired(err error) bool { return errors.Is(err, storage.ErrExpired) }
