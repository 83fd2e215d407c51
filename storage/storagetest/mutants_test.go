// The suite's own test: it must fail against stores that break the contract,
// with and without Capabilities.RevisionGaps, and pass a correct store whose
// writes skip revisions only when RevisionGaps says they may. Each mutant
// wraps a real bbolt store and breaks one rule; the test re-runs this test
// binary with the mutant selected and expects the named case to fail.

package storagetest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/storagetest"
)

const (
	mutantEnv = "STORAGETEST_MUTANT"
	// gapsEnv set runs the child with Capabilities.RevisionGaps.
	gapsEnv = "STORAGETEST_REVISION_GAPS"
)

// mutant is a store that breaks one rule, and the case that must catch it.
type mutant struct {
	name     string
	wantFail string // group/case
	wrap     func(s *bbolt.Store) storage.Interface
}

func mutants() []mutant {
	return []mutant{
		{"get_reports_wrong_revision", "get/latest", func(s *bbolt.Store) storage.Interface { return &wrongGetRevision{s} }},
		{"exact_list_reads_latest", "list/exact", func(s *bbolt.Store) storage.Interface { return &listLatest{s} }},
		{"delete_returns_last_stored_revision", "delete/unconditional", func(s *bbolt.Store) storage.Interface { return &deleteOldRevision{s} }},
		{"delete_reports_a_later_revision", "delete/unconditional", func(s *bbolt.Store) storage.Interface { return &deleteLaterRevision{s} }},
		{"update_ignores_preconditions", "update/resource_version_precondition", func(s *bbolt.Store) storage.Interface { return &noPreconditions{s} }},
		{"failed_create_moves_revision", "capabilities/revision_advances_once_per_write", func(s *bbolt.Store) storage.Interface { return &burnOnFailedCreate{s} }},
		{"watch_drops_an_event", "watch/ordered_without_gaps_under_concurrent_writers", func(s *bbolt.Store) storage.Interface { return &dropEvent{Store: s} }},
		{"watch_repeats_an_event", "watch/ordered_without_gaps_under_concurrent_writers", func(s *bbolt.Store) storage.Interface { return &repeatEvent{Store: s} }},
		{"watch_swaps_two_events", "watch/non_reading_watcher_blocks_nobody", func(s *bbolt.Store) storage.Interface { return &swapEvents{Store: s} }},
		{"list_ignores_continue_snapshot", "pagination/snapshot_across_writes", func(s *bbolt.Store) storage.Interface { return &inconsistentPages{s} }},
		// Not a mutant: a correct store whose creates skip a revision. It
		// must fail the exact-revision checks and pass with RevisionGaps.
		{"creates_skip_a_revision", "delete/unconditional", func(s *bbolt.Store) storage.Interface { return &skipOnCreate{Store: s} }},
	}
}

// caps is what a child runs the suite with.
func caps() storagetest.Capabilities {
	return storagetest.Capabilities{Timeout: 2 * time.Second, RevisionGaps: os.Getenv(gapsEnv) != ""}
}

func TestMutantsAreCaught(t *testing.T) {
	if name := os.Getenv(mutantEnv); name != "" {
		// Child: run the suite against the named mutant.
		for _, m := range mutants() {
			if m.name == name {
				newStore := func(t *testing.T) storage.Interface { return m.wrap(openBbolt(t)) }
				storagetest.Run(t, newStore, caps())
				t.Run("property", func(t *testing.T) { storagetest.RunProperty(t, newStore, caps()) })
				return
			}
		}
		t.Fatalf("unknown mutant %q", name)
	}
	for _, m := range mutants() {
		for _, gaps := range []bool{false, true} {
			if m.name == "creates_skip_a_revision" && gaps {
				continue // TestRevisionGapsAllowed
			}
			t.Run(fmt.Sprintf("%s/revision_gaps_%t", m.name, gaps), func(t *testing.T) {
				t.Parallel()
				group, _, _ := strings.Cut(m.wantFail, "/")
				out, err := runChild(t, m.name, gaps, "^TestMutantsAreCaught$/^"+group+"$")
				if err == nil {
					t.Fatalf("the suite passed against mutant %s:\n%s", m.name, out)
				}
				if !strings.Contains(out, "--- FAIL: TestMutantsAreCaught/"+m.wantFail+" ") {
					t.Fatalf("mutant %s: case %s did not fail:\n%s", m.name, m.wantFail, out)
				}
			})
		}
	}
}

// TestRevisionGapsAllowed runs the whole suite and the property test with
// RevisionGaps against a correct store whose creates skip a revision: they
// must pass.
func TestRevisionGapsAllowed(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		return
	}
	out, err := runChild(t, "creates_skip_a_revision", true, "^TestMutantsAreCaught$")
	if err != nil {
		t.Fatalf("the suite with RevisionGaps failed a store whose creates skip a revision: %v\n%s", err, out)
	}
	for _, c := range []string{"delete/unconditional", "property/seed_0"} {
		if !strings.Contains(out, "--- PASS: TestMutantsAreCaught/"+c+" ") {
			t.Fatalf("the child ran no %s case:\n%s", c, out)
		}
	}
}

// runChild re-runs this test binary against mutant name.
func runChild(t *testing.T, name string, gaps bool, run string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), mutantEnv+"="+name)
	if gaps {
		cmd.Env = append(cmd.Env, gapsEnv+"=1")
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func openBbolt(t *testing.T) *bbolt.Store {
	t.Helper()
	s, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wrongGetRevision reports a Get's revision one too high (Data unchanged).
type wrongGetRevision struct{ *bbolt.Store }

func (m *wrongGetRevision) Get(ctx context.Context, k string, opts storage.GetOptions) (storage.Object, error) {
	o, err := m.Store.Get(ctx, k, opts)
	o.ResourceVersion++
	return o, err
}

// listLatest ignores the requested revision.
type listLatest struct{ *bbolt.Store }

func (m *listLatest) List(ctx context.Context, p string, opts storage.ListOptions) (storage.ListResult, error) {
	if opts.Continue == "" {
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
	return m.Store.List(ctx, p, opts)
}

// deleteOldRevision returns the deleted object as it was last stored.
type deleteOldRevision struct{ *bbolt.Store }

func (m *deleteOldRevision) Delete(ctx context.Context, k string, opts storage.DeleteOptions) (storage.Object, error) {
	before, err := m.Store.Get(ctx, k, storage.GetOptions{})
	if err != nil {
		return before, err
	}
	if _, err := m.Store.Delete(ctx, k, opts); err != nil {
		return storage.Object{}, err
	}
	return before, nil
}

// deleteLaterRevision reports a delete one revision later than it
// committed, so the next write repeats the reported revision.
type deleteLaterRevision struct{ *bbolt.Store }

func (m *deleteLaterRevision) Delete(ctx context.Context, k string, opts storage.DeleteOptions) (storage.Object, error) {
	o, err := m.Store.Delete(ctx, k, opts)
	if err != nil {
		return o, err
	}
	return backend.AtRevision(k, &o, o.ResourceVersion+1)
}

// burnKey is a key outside every prefix the suite reads: a write to it
// moves the revision and nothing the suite can see.
var burnKey = storage.ObjectKey("storagetest.annex.dev", "burned", "", "n")

// burn writes burnKey.
func burn(ctx context.Context, s storage.Interface) error {
	_, err := s.Update(ctx, burnKey, storage.UpdateOptions{IgnoreNotFound: true}, func(cur storage.Object) ([]byte, error) {
		return fmt.Appendf(nil, `{"metadata":{"name":"n"},"after":%d}`, cur.ResourceVersion), nil
	})
	return err
}

// burnOnFailedCreate moves the revision when a create fails.
type burnOnFailedCreate struct{ *bbolt.Store }

func (m *burnOnFailedCreate) Create(ctx context.Context, k string, data []byte) (storage.Object, error) {
	o, err := m.Store.Create(ctx, k, data)
	if err != nil {
		if berr := burn(ctx, m.Store); berr != nil {
			return o, berr
		}
	}
	return o, err
}

// skipOnCreate skips a revision before each create that will succeed, as
// kine on PostgreSQL does after an insert that failed: correct, with gaps.
// A failed create moves nothing.
type skipOnCreate struct {
	*bbolt.Store
}

func (m *skipOnCreate) Create(ctx context.Context, k string, data []byte) (storage.Object, error) {
	if _, err := m.Store.Get(ctx, k, storage.GetOptions{}); err == nil {
		return m.Store.Create(ctx, k, data) // fails: exists
	}
	if err := burn(ctx, m.Store); err != nil {
		return storage.Object{}, err
	}
	return m.Store.Create(ctx, k, data)
}

// noPreconditions drops Update's preconditions.
type noPreconditions struct{ *bbolt.Store }

func (m *noPreconditions) Update(ctx context.Context, k string, opts storage.UpdateOptions, try storage.UpdateFunc) (storage.Object, error) {
	opts.Preconditions = storage.Preconditions{}
	return m.Store.Update(ctx, k, opts, try)
}

// inconsistentPages serves every continue page at the latest revision.
type inconsistentPages struct{ *bbolt.Store }

func (m *inconsistentPages) List(ctx context.Context, p string, opts storage.ListOptions) (storage.ListResult, error) {
	if opts.Continue != "" {
		pr, _ := backend.PrefixRange(p)
		if k, _, err := backend.DecodeContinue(opts.Continue, pr); err == nil {
			if tok, err := backend.EncodeContinue(k, pr, 0); err == nil {
				opts.Continue = tok
			}
		}
	}
	return m.Store.List(ctx, p, opts)
}

// dropEvent loses the fifth event of every watch.
type dropEvent struct{ *bbolt.Store }

func (m *dropEvent) Watch(ctx context.Context, k string, opts storage.WatchOptions) (storage.Watcher, error) {
	return rewrite(ctx, m.Store, k, opts, func(n int64, ev storage.Event) []storage.Event {
		if n == 5 {
			return nil
		}
		return []storage.Event{ev}
	})
}

type lossyWatcher struct {
	storage.Watcher
	out chan storage.Event
}

func (w *lossyWatcher) ResultChan() <-chan storage.Event { return w.out }

// repeatEvent delivers the fifth event of every watch twice.
type repeatEvent struct{ *bbolt.Store }

func (m *repeatEvent) Watch(ctx context.Context, k string, opts storage.WatchOptions) (storage.Watcher, error) {
	return rewrite(ctx, m.Store, k, opts, func(n int64, ev storage.Event) []storage.Event {
		if n == 5 {
			return []storage.Event{ev, ev}
		}
		return []storage.Event{ev}
	})
}

// swapEvents delivers the fifth event of every watch after the sixth.
type swapEvents struct{ *bbolt.Store }

func (m *swapEvents) Watch(ctx context.Context, k string, opts storage.WatchOptions) (storage.Watcher, error) {
	var held storage.Event
	return rewrite(ctx, m.Store, k, opts, func(n int64, ev storage.Event) []storage.Event {
		switch n {
		case 5:
			held = ev
			return nil
		case 6:
			return []storage.Event{ev, held}
		}
		return []storage.Event{ev}
	})
}

// rewrite is s's watch with each event (the nth, from 1) replaced by what
// f returns; f runs on one goroutine.
func rewrite(ctx context.Context, s storage.Interface, k string, opts storage.WatchOptions, f func(n int64, ev storage.Event) []storage.Event) (storage.Watcher, error) {
	w, err := s.Watch(ctx, k, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan storage.Event)
	go func() {
		defer close(out)
		var n int64
		for ev := range w.ResultChan() {
			n++
			for _, ev := range f(n, ev) {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return &lossyWatcher{w, out}, nil
}
