// This file holds the entry point of the conformance suite: Capabilities, Run,
// the case registry, and the per-case environment with its helpers.

package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// Capabilities describes what a backend cannot be probed for. Optional
// interfaces (storage.RevisionReader, storage.Compactor,
// storage.ProgressRequester, storage.Counter) are found by type assertion on
// a store from newStore; these fields only switch off what a type assertion
// would wrongly report as present. The zero value runs every case the store's
// type allows.
type Capabilities struct {
	// Timeout bounds every wait for something that must happen (an event, a
	// closed channel, a blocked writer). Zero means 10 seconds.
	Timeout time.Duration
	// NoCompaction skips the compaction cases even though the store
	// implements storage.Compactor (for a wrapper that forwards Compact to a
	// store that may not support it). Zero: run them when the type allows.
	NoCompaction bool
	// NoProgressNotify skips the RequestProgress cases even though the store
	// implements storage.ProgressRequester. Zero: run them when the type allows.
	NoProgressNotify bool
	// SharedRevision says the revision is shared with other writers (stores
	// from newStore are views, under prefixes of their own, of one etcd):
	// the cases that read the global revision, expect consecutive
	// revisions, or compact run one at a time, with no other case running,
	// while the others still run in parallel. Zero: every store is private
	// and every case runs in parallel.
	SharedRevision bool
	// RevisionGaps says a write may advance the store's revision by more
	// than one: kine on PostgreSQL takes revisions from a sequence, and an
	// insert that fails still uses one up. The checks that a write commits
	// at the revision right after the previous write's then check that it
	// commits after it; every other check stays, and a watch must still
	// deliver every write once, in strictly increasing revisions. A failed
	// or no-op write must still leave the revision where it was. Zero means
	// every write advances the store's revision by exactly one.
	RevisionGaps bool
}

func (c Capabilities) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 10 * time.Second
	}
	return c.Timeout
}

// need is a capability a case requires beyond storage.Interface.
type need uint8

const (
	needRevision need = 1 << iota
	needCompact
	needProgress
	needCount
	needReady
	needSizeLimit
)

// testCase is one conformance case.
type testCase struct {
	name  string
	needs need
	// private marks a case that reads the store's revision (env.current,
	// CurrentRevision), expects its writes at consecutive revisions, or
	// compacts: it needs no other writer on the revision while it runs.
	// env.current and env.compact fail an unmarked case, so a missing mark
	// shows on any backend.
	private bool
	run     func(e *env)
}

// group is a named set of cases, run as a subtest of Run.
type group struct {
	name  string
	cases []testCase
}

func groups() []group {
	return []group{
		{"create", createCases()},
		{"get", getCases()},
		{"delete", deleteCases()},
		{"update", updateCases()},
		{"list", listCases()},
		{"pagination", paginationCases()},
		{"watch", watchCases()},
		{"capabilities", capabilityCases()},
	}
}

// Run runs the conformance suite against the stores newStore makes. Every case
// is a subtest (group/case) on a fresh, empty store of its own; newStore
// registers the store's cleanup with t. A fresh store must have no writer
// but the suite: the suite checks that each committed write advances the
// revision by exactly one (by at least one with caps.RevisionGaps). Cases
// that need a capability the store lacks are not registered. Cases run in
// parallel with each other.
//
// With caps.SharedRevision the cases that need the revision to themselves
// run alone (see Capabilities).
func Run(t *testing.T, newStore func(t *testing.T) storage.Interface, caps Capabilities) {
	have := probe(t, newStore, caps)
	var turns turns
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				if c.needs&^have != 0 {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					defer turns.take(caps, c.private)()
					e := newEnv(t, newStore(t), caps)
					e.private = c.private
					c.run(e)
				})
			}
		})
	}
}

// turns lets private cases run alone on a shared revision: a private case
// holds the write lock, the others share the read lock.
type turns struct {
	mu sync.RWMutex
}

// take waits for the case's turn and returns the function that ends it.
// Without caps.SharedRevision every case's turn is now.
func (tr *turns) take(caps Capabilities, private bool) (release func()) {
	switch {
	case !caps.SharedRevision:
		return func() {}
	case private:
		tr.mu.Lock()
		return tr.mu.Unlock
	default:
		tr.mu.RLock()
		return tr.mu.RUnlock
	}
}

// probe finds the optional interfaces a store implements.
func probe(t *testing.T, newStore func(t *testing.T) storage.Interface, caps Capabilities) need {
	t.Helper()
	s := newStore(t)
	var have need
	if _, ok := s.(storage.RevisionReader); ok {
		have |= needRevision
	}
	if _, ok := s.(storage.Compactor); ok && !caps.NoCompaction {
		have |= needCompact
	}
	if _, ok := s.(storage.ProgressRequester); ok && !caps.NoProgressNotify {
		have |= needProgress
	}
	if _, ok := s.(storage.Counter); ok {
		have |= needCount
	}
	if _, ok := s.(storage.ReadinessChecker); ok {
		have |= needReady
	}
	if l, ok := s.(storage.ObjectSizeLimiter); ok && l.MaxObjectSize() > 0 {
		have |= needSizeLimit
	}
	return have
}

// env is the environment of one case: its store, a context that ends with
// the case, and the highest revision the case has seen a write commit at.
type env struct {
	t       *testing.T
	s       storage.Interface
	ctx     context.Context
	timeout time.Duration
	// private is set for a case that may read the store's revision (see
	// testCase.private).
	private bool
	// gaps is Capabilities.RevisionGaps.
	gaps bool
	last uint64
	// hist is every write made through create, update and delete, in
	// revision order; a deleted entry has deleted set.
	hist []write
}

// write is one committed write the case made.
type write struct {
	o       storage.Object
	deleted bool
}

func newEnv(t *testing.T, s storage.Interface, caps Capabilities) *env {
	return &env{t: t, s: s, ctx: t.Context(), timeout: caps.timeout(), gaps: caps.RevisionGaps}
}

const (
	testGroup    = "storagetest.annex.dev"
	testResource = "widgets"
)

// key is the key of object name in namespace ns.
func key(ns, name string) string { return storage.ObjectKey(testGroup, testResource, ns, name) }

// prefix is the prefix of every object of namespace ns ("" for all).
func prefix(ns string) string { return storage.ResourcePrefix(testGroup, testResource, ns) }

// widget is the JSON object the suite stores.
type widget struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   widgetMeta `json:"metadata"`
	Spec       widgetSpec `json:"spec"`
}

type widgetMeta struct {
	Name              string            `json:"name,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
}

type widgetSpec struct {
	Value string `json:"value"`
}

// obj returns the JSON of a widget; labels are name/value pairs.
func obj(ns, name, value string, labels ...string) []byte {
	w := widget{APIVersion: testGroup + "/v1", Kind: "Widget", Metadata: widgetMeta{Name: name, Namespace: ns}, Spec: widgetSpec{Value: value}}
	if len(labels) > 0 {
		w.Metadata.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			w.Metadata.Labels[labels[i]] = labels[i+1]
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(err) // a widget always marshals
	}
	return b
}

// decode parses a stored widget.
func decode(t testing.TB, data []byte) widget {
	t.Helper()
	var w widget
	if err := json.Unmarshal(data, &w); err != nil {
		// Errorf, not Fatalf: decode also runs inside callbacks that a
		// backend may call from a goroutine of its own.
		t.Errorf("stored data is not a widget: %v: %s", err, data)
	}
	return w
}

// value is spec.value of a stored widget.
func value(t testing.TB, o storage.Object) string {
	t.Helper()
	return decode(t, o.Data).Spec.Value
}

// withValue returns data (a stored widget) with spec.value replaced and
// every other byte of meaning kept, including metadata.resourceVersion.
func withValue(t testing.TB, data []byte, v string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		// Errorf, not Fatalf: this runs inside UpdateFuncs.
		t.Errorf("stored data is not a JSON object: %v: %s", err, data)
		return data
	}
	m["spec"] = map[string]any{"value": v}
	b, err := json.Marshal(m)
	if err != nil {
		t.Errorf("marshal: %v", err)
		return data
	}
	return b
}

// withLabels returns data with metadata.labels replaced.
func withLabels(t testing.TB, data []byte, labels ...string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		t.Errorf("stored data is not a JSON object: %v: %s", err, data)
		return data
	}
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		m["metadata"] = md
	}
	l := map[string]any{}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	md["labels"] = l
	b, err := json.Marshal(m)
	if err != nil {
		t.Errorf("marshal: %v", err)
		return data
	}
	return b
}

// checkObject asserts the invariants of every object a store returns: it
// lives under wantKey, has a revision, its bytes are a JSON object whose
// metadata.resourceVersion is that revision, and Meta is what Data says.
func checkObject(t testing.TB, o storage.Object, wantKey string) {
	t.Helper()
	if o.Key != wantKey {
		t.Errorf("object key = %q, want %q", o.Key, wantKey)
	}
	if o.ResourceVersion == 0 {
		t.Errorf("object %q has resource version 0", o.Key)
	}
	m, err := storage.ParseMeta(o.Data)
	if err != nil {
		t.Errorf("object %q: Data does not parse: %v: %s", o.Key, err, o.Data)
		return
	}
	rv := storage.FormatResourceVersion(o.ResourceVersion)
	if m.ResourceVersion != rv {
		t.Errorf("object %q: metadata.resourceVersion in Data = %q, Object.ResourceVersion = %s", o.Key, m.ResourceVersion, rv)
	}
	if o.Meta.ResourceVersion != rv {
		t.Errorf("object %q: Meta.ResourceVersion = %q, Object.ResourceVersion = %s", o.Key, o.Meta.ResourceVersion, rv)
	}
	if o.Meta.Name != m.Name || o.Meta.Namespace != m.Namespace || o.Meta.UID != m.UID ||
		o.Meta.CreationTimestamp != m.CreationTimestamp || o.Meta.DeletionTimestamp != m.DeletionTimestamp ||
		o.Meta.Labels != m.Labels {
		t.Errorf("object %q: Meta = %+v, but Data says %+v", o.Key, o.Meta, m)
	}
}

// storageError asserts that err is sentinel and returns the *storage.Error
// it carries, or nil when it carries none.
func storageError(t testing.TB, err, sentinel error) *storage.Error {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error = %v, want %v", err, sentinel)
	}
	var se *storage.Error
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// seen records a committed write's revision, asserting it is newer than
// every revision seen before.
func (e *env) seen(rev uint64) {
	e.t.Helper()
	if rev <= e.last {
		e.t.Fatalf("write committed at revision %d, not after the previous write's %d", rev, e.last)
	}
	e.last = rev
}

// follows reports whether a write at rev is the one right after a write at
// prev: at prev+1, or with Capabilities.RevisionGaps at any revision after
// prev.
func (e *env) follows(prev, rev uint64) bool {
	if e.gaps {
		return rev > prev
	}
	return rev == prev+1
}

// after says, for failure messages, which revision follows prev.
func (e *env) after(prev uint64) string {
	if e.gaps {
		return fmt.Sprintf("a revision after %d", prev)
	}
	return rvs(prev + 1)
}

func (e *env) create(k string, data []byte) storage.Object {
	e.t.Helper()
	o, err := e.s.Create(e.ctx, k, data)
	if err != nil {
		e.t.Fatalf("Create(%q): %v", k, err)
	}
	checkObject(e.t, o, k)
	e.seen(o.ResourceVersion)
	e.hist = append(e.hist, write{o: o})
	return o
}

// update sets k's spec.value to v, unconditionally.
func (e *env) update(k, v string) storage.Object {
	e.t.Helper()
	o, err := e.s.Update(e.ctx, k, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
		return withValue(e.t, cur.Data, v), nil
	})
	if err != nil {
		e.t.Fatalf("Update(%q): %v", k, err)
	}
	checkObject(e.t, o, k)
	e.seen(o.ResourceVersion)
	e.hist = append(e.hist, write{o: o})
	return o
}

func (e *env) delete(k string) storage.Object {
	e.t.Helper()
	o, err := e.s.Delete(e.ctx, k, storage.DeleteOptions{})
	if err != nil {
		e.t.Fatalf("Delete(%q): %v", k, err)
	}
	checkObject(e.t, o, k)
	e.seen(o.ResourceVersion)
	e.hist = append(e.hist, write{o: o, deleted: true})
	return o
}

func (e *env) get(k, rv string) storage.Object {
	e.t.Helper()
	o, err := e.s.Get(e.ctx, k, storage.GetOptions{ResourceVersion: rv})
	if err != nil {
		e.t.Fatalf("Get(%q, rv %q): %v", k, rv, err)
	}
	checkObject(e.t, o, k)
	return o
}

func (e *env) list(p string, opts storage.ListOptions) storage.ListResult {
	e.t.Helper()
	r, err := e.s.List(e.ctx, p, opts)
	if err != nil {
		e.t.Fatalf("List(%q, %+v): %v", p, opts, err)
	}
	e.checkList(r)
	return r
}

// checkList asserts the invariants of every page: items valid, in strictly
// increasing key order, none newer than the page's revision.
func (e *env) checkList(r storage.ListResult) {
	e.t.Helper()
	// A store that has never been written to may be at revision 0.
	if r.ResourceVersion == 0 && (e.last != 0 || len(r.Items) != 0) {
		e.t.Errorf("list resource version is 0")
	}
	for i, o := range r.Items {
		checkObject(e.t, o, o.Key)
		if o.ResourceVersion > r.ResourceVersion {
			e.t.Errorf("item %q has revision %d, newer than the list's %d", o.Key, o.ResourceVersion, r.ResourceVersion)
		}
		if i > 0 && r.Items[i-1].Key >= o.Key {
			e.t.Errorf("items out of key order: %q before %q", r.Items[i-1].Key, o.Key)
		}
	}
}

// current is the store's current revision: the last write the case made,
// cross-checked with CurrentRevision when the store has it.
func (e *env) current() uint64 {
	e.t.Helper()
	e.needPrivate("reads the current revision")
	if rr, ok := e.s.(storage.RevisionReader); ok {
		rev, err := rr.CurrentRevision(e.ctx)
		if err != nil {
			e.t.Fatalf("CurrentRevision: %v", err)
		}
		if e.last != 0 && rev != e.last {
			e.t.Fatalf("CurrentRevision = %d, the last write committed at %d", rev, e.last)
		}
		return rev
	}
	if e.last == 0 {
		e.t.Fatal("no write yet and no CurrentRevision: the current revision is unknown")
	}
	return e.last
}

func (e *env) compact(rev uint64) {
	e.t.Helper()
	e.needPrivate("compacts")
	if err := e.s.(storage.Compactor).Compact(e.ctx, rev); err != nil {
		e.t.Fatalf("Compact(%d): %v", rev, err)
	}
}

// needPrivate fails a case that does what only a private case may do.
func (e *env) needPrivate(what string) {
	e.t.Helper()
	if !e.private {
		e.t.Fatalf("the case %s but is not marked private: on a store with Capabilities.SharedRevision other cases would write meanwhile", what)
	}
}

func rvs(rev uint64) string { return storage.FormatResourceVersion(rev) }

// keysOf lists the keys of objects.
func keysOf(objs []storage.Object) []string {
	ks := make([]string, len(objs))
	for i, o := range objs {
		ks[i] = o.Key
	}
	return ks
}

// describe is a short form of an object for failure messages.
func describe(o storage.Object) string {
	return fmt.Sprintf("%s@%d", o.Key, o.ResourceVersion)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stateAt is what the case's writes left under prefix p at revision rev, in
// key order.
func (e *env) stateAt(p string, rev uint64) []storage.Object {
	e.t.Helper()
	pr, err := backend.PrefixRange(p)
	if err != nil {
		e.t.Fatal(err)
	}
	state := map[string]storage.Object{}
	for _, w := range e.hist {
		if w.o.ResourceVersion > rev || !strings.HasPrefix(w.o.Key, pr) {
			continue
		}
		if w.deleted {
			delete(state, w.o.Key)
		} else {
			state[w.o.Key] = w.o
		}
	}
	out := make([]storage.Object, 0, len(state))
	for _, k := range slices.Sorted(maps.Keys(state)) {
		out = append(out, state[k])
	}
	return out
}

// sameObjects asserts that got holds the states want holds: the same keys,
// revisions, uids and values, in the same order.
func sameObjects(t testing.TB, what string, got, want []storage.Object) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].Key == want[i].Key && got[i].ResourceVersion == want[i].ResourceVersion &&
			got[i].Meta.UID == want[i].Meta.UID && value(t, got[i]) == value(t, want[i])
	}
	if !same {
		t.Errorf("%s:\n got  %s\n want %s", what, describeAll(t, got), describeAll(t, want))
	}
}

func describeAll(t testing.TB, objs []storage.Object) string {
	parts := make([]string, len(objs))
	for i, o := range objs {
		parts[i] = describe(o) + "=" + value(t, o)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
