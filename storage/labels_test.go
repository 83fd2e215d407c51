package storage_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

func TestLabels(t *testing.T) {
	long := strings.Repeat("k", 300) // a length of two varint bytes
	cases := []map[string]string{
		nil,
		{"app": "demo"},
		{"tier": "web", "app": "demo", "z": ""},
		{long: strings.Repeat("v", 200), "a\x00b": "nul", "": "empty key"},
	}
	for _, m := range cases {
		l := storage.MakeLabels(m)
		if got := l.Map(); !maps.Equal(got, m) {
			t.Errorf("MakeLabels(%v).Map() = %v", m, got)
		}
		if l.Len() != len(m) {
			t.Errorf("MakeLabels(%v).Len() = %d", m, l.Len())
		}
		for k, v := range m {
			if got, ok := l.Lookup(k); !ok || got != v {
				t.Errorf("Lookup(%q) = %q, %v; want %q", k, got, ok, v)
			}
		}
		if _, ok := l.Lookup("absent"); ok {
			t.Errorf("Lookup(absent) found it in %v", l)
		}
		if got, want := l.String(), fmt.Sprint(m); got != want {
			t.Errorf("String() = %s, want %s", got, want)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(m)
		if string(b) != string(want) {
			t.Errorf("Marshal = %s, want %s", b, want)
		}
		var back storage.Labels
		if err := json.Unmarshal(b, &back); err != nil || back != l {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", b, back, err, l)
		}
	}
	var l storage.Labels
	if err := json.Unmarshal([]byte(`{"a":1}`), &l); err == nil {
		t.Error("labels with a number value decoded")
	}
	prev := 0
	for k := range storage.MakeLabels(map[string]string{"c": "", "a": "", "b": ""}).All() {
		if int(k[0]) < prev {
			t.Errorf("All() out of key order at %q", k)
		}
		prev = int(k[0])
	}
}

// TestLabelsSelectors checks that selectors read the compact labels as they
// read a map.
// A selector reads storage.Labels (with their LabelBits, which let it
// reject without a lookup) as it reads a map, for every operator, on label
// sets that have the key, another value, or nothing.
func TestLabelsSelectors(t *testing.T) {
	sets := []map[string]string{
		{"app": "demo", "tier": "web", "replicas": "3"},
		{"app": "other", "replicas": "1"},
		{"tier": "db"},
		{"app": "", "a=b": "c"},
		nil,
	}
	for i := range 40 { // enough labels that most of the 64 bits are set
		sets[0][fmt.Sprintf("k%d", i)] = fmt.Sprintf("v%d", i)
	}
	for _, m := range sets {
		l := storage.MakeLabels(m)
		for _, s := range []string{"", "app=demo", "app==demo", "app!=demo", "app in (demo,x)", "app in (x)", "tier notin (web)", "missing", "!missing",
			"!app", "app", "replicas>2", "replicas<2", "app=demo,tier=web", "app=demo,tier=db", "app=", "k7=v7", "k7=v8", "k7 in (v1,v7)"} {
			sel, err := meta.ParseLabelSelector(s)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sel.MatchesSet(&l), sel.Matches(m); got != want {
				t.Errorf("%v, %q: MatchesSet = %v, Matches(map) = %v", m, s, got, want)
			}
		}
	}
}

// BenchmarkLabelsSelect is a label selector read against one object's
// labels, as a LIST with a selector does for every object it walks (the
// flood's LIST: app=nobody over 50,000 objects). Under contention, compare
// the fastest of several runs:
//
//	go test ./storage -run '^$' -bench LabelsSelect -count 10
func BenchmarkLabelsSelect(b *testing.B) {
	sel, err := meta.ParseLabelSelector("app=nobody")
	if err != nil {
		b.Fatal(err)
	}
	o := &storage.Object{Meta: storage.Meta{Labels: storage.MakeLabels(map[string]string{"app": "web", "team": "a", "tier": "gold"})}}
	for b.Loop() {
		if sel.MatchesSet(&o.Meta.Labels) {
			b.Fatal("matched")
		}
	}
}
