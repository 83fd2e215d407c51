// This file checks that the cacher and the store give the same answers for
// the same resource version while writers run concurrently.

package watch

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/annexapi/annex/storage"
)

// sameList reports how two lists differ, or "" when they are the same:
// the same revision, keys, revisions and bytes.
func sameList(a, b storage.ListResult) string {
	if a.ResourceVersion != b.ResourceVersion {
		return fmt.Sprintf("revision %d vs %d", a.ResourceVersion, b.ResourceVersion)
	}
	if len(a.Items) != len(b.Items) {
		return fmt.Sprintf("%d items vs %d", len(a.Items), len(b.Items))
	}
	for i := range a.Items {
		x, y := a.Items[i], b.Items[i]
		if x.Key != y.Key || x.ResourceVersion != y.ResourceVersion || !bytes.Equal(x.Data, y.Data) {
			return fmt.Sprintf("item %d: %s@%d vs %s@%d", i, x.Key, x.ResourceVersion, y.Key, y.ResourceVersion)
		}
	}
	return ""
}

// allPages lists prefix page by page (limit 3) at exactly rev.
func allPages(t *testing.T, s storage.Interface, p string, rev uint64) storage.ListResult {
	t.Helper()
	ctx := context.Background()
	r, err := s.List(ctx, p, storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rev), ResourceVersionMatch: storage.MatchExact, Limit: 3})
	if err != nil {
		t.Fatalf("List(%q) at %d: %v", p, rev, err)
	}
	all := r
	for r.Continue != "" {
		if r, err = s.List(ctx, p, storage.ListOptions{Limit: 3, Continue: r.Continue}); err != nil {
			t.Fatalf("List(%q) next page at %d: %v", p, rev, err)
		}
		if r.ResourceVersion != all.ResourceVersion {
			t.Fatalf("page at %d, first page at %d", r.ResourceVersion, all.ResourceVersion)
		}
		all.Items = append(all.Items, r.Items...)
	}
	all.Continue = ""
	return all
}

// exactListsAsStored checks that the cache holds revision rev in memory and
// that its exact lists at rev (whole and paginated, of the resource and of
// one namespace) are the store's.
// randomWrite creates, updates (creating if absent) or deletes ns/name,
// chosen by rng; j is written into the object. Errors (exists, not found)
// mean no write.
func randomWrite(ctx context.Context, c *Cacher, rng *rand.Rand, ns, name string, j int) (storage.Object, error) {
	k := key(ns, name)
	switch rng.IntN(3) {
	case 0:
		return c.Create(ctx, k, object(ns, name, fmt.Sprint(j)))
	case 1:
		return c.Update(ctx, k, storage.UpdateOptions{IgnoreNotFound: true}, func(storage.Object) ([]byte, error) {
			return object(ns, name, fmt.Sprint(j)), nil
		})
	}
	return c.Delete(ctx, k, storage.DeleteOptions{})
}

func exactListsAsStored(t *testing.T, c *Cacher, store storage.Interface, rev uint64) {
	t.Helper()
	ctx := context.Background()
	c.mu.RLock()
	_, inMemory := c.snapshotAt(rev)
	c.mu.RUnlock()
	if !inMemory {
		t.Fatalf("revision %d is not in the cache's ring", rev)
	}
	for _, p := range []string{prefix(""), prefix("ns1")} {
		opts := storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(rev), ResourceVersionMatch: storage.MatchExact}
		got, err := c.List(ctx, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		want, err := store.List(ctx, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := sameList(got, want); d != "" {
			t.Fatalf("List(%q) at %d: cache and store differ: %s", p, rev, d)
		}
		if d := sameList(allPages(t, c, p, rev), want); d != "" {
			t.Fatalf("paginated List(%q) at %d from the cache differs from the store: %s", p, rev, d)
		}
	}
}

func TestConsistencyUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	store := openBolt(t, true)
	c := startCacher(t, store, Config{})
	ctx := context.Background()
	const writers, ops = 4, 60
	var mu sync.Mutex
	var revs []uint64
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			ns := fmt.Sprintf("ns%d", i%2)
			for j := range ops {
				name := fmt.Sprintf("w%d-o%d", i, rng.IntN(6))
				o, err := randomWrite(ctx, c, rng, ns, name, j)
				if err != nil {
					continue // already exists / not found: no write
				}
				mu.Lock()
				revs = append(revs, o.ResourceVersion)
				mu.Unlock()
			}
		})
	}
	// While the writers run: a consistent list from the cache equals the
	// store's list at the revision the cache answered at.
	checks := 0
	writersDone := waitGroupDone(&wg)
	for done := false; !done; {
		select {
		case <-writersDone:
			done = true
		default:
		}
		got, err := c.List(ctx, prefix(""), storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion == 0 {
			if len(got.Items) != 0 {
				t.Fatalf("list at revision 0 has %d items", len(got.Items))
			}
			continue // nothing written yet: no revision to compare at
		}
		want, err := store.List(ctx, prefix(""), storage.ListOptions{ResourceVersion: storage.FormatResourceVersion(got.ResourceVersion), ResourceVersionMatch: storage.MatchExact})
		if err != nil {
			t.Fatal(err)
		}
		if d := sameList(got, want); d != "" {
			t.Fatalf("consistent list from the cache differs from the store at %d: %s", got.ResourceVersion, d)
		}
		checks++
	}
	if len(revs) < writers*ops/4 {
		t.Fatalf("only %d writes committed", len(revs))
	}
	// Afterwards: for every committed revision, exact lists (whole and
	// paginated, of the resource and of one namespace) are the same, and the
	// cache served them from memory.
	for _, rev := range revs {
		exactListsAsStored(t, c, store, rev)
	}
	t.Logf("%d writes, %d concurrent consistent-list checks, %d revisions compared", len(revs), checks, len(revs))
}

func waitGroupDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// TestExactListsAcrossTheRing checks the states the cache rebuilds for past
// revisions (the current state with the later events undone, kept once
// built): after the ring has wrapped several times, an exact list at every
// revision of its window, asked in random order and twice, is the store's,
// and one before the window goes to the store.
func TestExactListsAcrossTheRing(t *testing.T) {
	t.Parallel()
	store := openBolt(t, true)
	c := startCacher(t, store, Config{RingSize: 8})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	var revs []uint64
	for j := range 60 {
		ns := fmt.Sprintf("ns%d", j%2)
		name := fmt.Sprintf("o%d", rng.IntN(5))
		o, err := randomWrite(ctx, c, rng, ns, name, j)
		if err == nil {
			revs = append(revs, o.ResourceVersion)
		}
		if j%7 == 0 { // a reader now and then: some events keep their state
			if _, err := c.List(ctx, prefix(""), storage.ListOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := revs[len(revs)-1]
	if ok, err := c.waitRevision(ctx, last); !ok || err != nil {
		t.Fatalf("the cache did not reach %d: %v", last, err)
	}
	c.mu.RLock()
	start := c.ringStart
	c.mu.RUnlock()
	var window []uint64
	for r := start; r <= last; r++ {
		window = append(window, r)
	}
	if len(window) < 8 {
		t.Fatalf("ring window %d..%d: want the ring full", start, last)
	}
	for range 2 {
		rng.Shuffle(len(window), func(i, j int) { window[i], window[j] = window[j], window[i] })
		for _, rev := range window {
			exactListsAsStored(t, c, store, rev)
		}
	}
	c.mu.RLock()
	_, inMemory := c.snapshotAt(start - 1)
	c.mu.RUnlock()
	if inMemory {
		t.Fatalf("revision %d, before the ring's window, served from memory", start-1)
	}
}
