package watch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/btree"

	"github.com/annexapi/annex/storage"
)

// ascendFrom visits the entries from its key on, as AscendGreaterOrEqual
// does, and a walk of the whole tree compares no keys: google/btree's
// search for the start in every node was a fifth of a selector's LIST.
func TestAscendFrom(t *testing.T) {
	compares := 0
	tr := btree.NewG(32, func(a, b elem) bool { compares++; return elemLess(a, b) })
	var keys []string
	for i := range 5000 {
		k := fmt.Sprintf("/registry/widgets/ns/w-%05d", i)
		keys = append(keys, k)
		tr.ReplaceOrInsert(elemOf(storage.Object{Key: k}))
	}
	walk := func(from string) []string {
		var got []string
		ascendFrom(tr, from, func(el elem) bool { got = append(got, el.key()); return true })
		return got
	}
	for _, tc := range []struct {
		from string
		want []string
	}{
		{"/registry/widgets/", keys},
		{keys[0], keys},
		{"/registry/widgets/ns/w-02500", keys[2500:]},
		{"/registry/widgets/ns/w-02500\x00", keys[2501:]},
		{"/registry/widgets/ns/w-99999", nil},
	} {
		if got := walk(tc.from); !slices.Equal(got, tc.want) {
			t.Errorf("from %q: %d entries, want %d", tc.from, len(got), len(tc.want))
		}
	}
	compares = 0
	walk("/registry/widgets/")
	// Min descends without comparing; the walk itself compares nothing.
	if compares > 1 {
		t.Errorf("a walk of the whole tree made %d key comparisons, want at most 1", compares)
	}
	compares = 0
	tr.AscendGreaterOrEqual(probe("/registry/widgets/"), func(elem) bool { return true })
	if compares < 500 {
		t.Errorf("AscendGreaterOrEqual made %d comparisons: the reason for ascendFrom is gone, reconsider it", compares)
	}
	t.Logf("whole walk of 5000: AscendGreaterOrEqual %d comparisons, ascendFrom 0", compares)
	empty := btree.NewG(32, elemLess)
	ascendFrom(empty, "/x", func(elem) bool { t.Error("an empty tree has no entry"); return true })
}

// BenchmarkAscendFrom walks 50,000 entries whose keys share a long prefix,
// as a selector's LIST of a whole collection does, with
// AscendGreaterOrEqual (the reference) and with ascendFrom:
//
//	go test ./watch -run '^$' -bench AscendFrom -count 6
func BenchmarkAscendFrom(b *testing.B) {
	tr := btree.NewG(32, elemLess)
	for i := range 50_000 {
		tr.ReplaceOrInsert(elemOf(storage.Object{Key: fmt.Sprintf("/registry/platform.example.com/environments/default/env-%06d", i)}))
	}
	const from = "/registry/platform.example.com/environments/"
	n := 0
	visit := func(elem) bool { n++; return true }
	b.Run("AscendGreaterOrEqual", func(b *testing.B) {
		for b.Loop() {
			tr.AscendGreaterOrEqual(probe(from), visit)
		}
	})
	b.Run("ascendFrom", func(b *testing.B) {
		for b.Loop() {
			ascendFrom(tr, from, visit)
		}
	})
	if n == 0 {
		b.Fatal("no entry visited")
	}
}

// allUnder: every key of the tree under the prefix, told from its first
// and last; a key outside at either end, or a prefix narrower than the
// tree (a namespace of a collection), and the walk must check each key.
func TestAllUnder(t *testing.T) {
	tr := btree.NewG(32, elemLess)
	if !allUnder(tr, "/registry/widgets/") {
		t.Error("an empty tree: nothing outside the prefix")
	}
	for _, k := range []string{"/registry/widgets/a/w1", "/registry/widgets/b/w2", "/registry/widgets/c/w3"} {
		tr.ReplaceOrInsert(elemOf(storage.Object{Key: k}))
	}
	for pr, want := range map[string]bool{
		"/registry/widgets/":   true,
		"/registry/":           true,
		"/registry/widgets/b/": false,
		"/registry/widgets/a/": false,
		"/registry/gadgets/":   false,
	} {
		if got := allUnder(tr, pr); got != want {
			t.Errorf("allUnder(%q) = %v, want %v", pr, got, want)
		}
	}
	tr.ReplaceOrInsert(elemOf(storage.Object{Key: "/registry/widgets0"})) // after the prefix's keys
	if allUnder(tr, "/registry/widgets/") {
		t.Error("a last key outside the prefix")
	}
}
