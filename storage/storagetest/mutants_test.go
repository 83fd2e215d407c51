// The suite's own test: it must fail against stores that break the contract.
// Each mutant wraps a real bbolt store and breaks one rule; the test re-runs
// this test binary with the mutant selected and expects the named case to
// fail.

package storagetest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/storagetest"
)

const mutantEnv = "STORAGETEST_MUTANT"

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
		{"update_ignores_preconditions", "update/resource_version_precondition", func(s *bbolt.Store) storage.Interface { return &noPreconditions{s} }},
		{"watch_drops_an_event", "watch/ordered_without_gaps_under_concurrent_writers", func(s *bbolt.Store) storage.Interface { return &dropEvent{Store: s} }},
		{"list_ignores_continue_snapshot", "pagination/snapshot_across_writes", func(s *bbolt.Store) storage.Interface { return &inconsistentPages{s} }},
	}
}

func TestMutantsAreCaught(t *testing.T) {
	if name := os.Getenv(mutantEnv); name != "" {
		// Child: run the suite against the named mutant.
		for _, m := range mutants() {
			if m.name == name {
				storagetest.Run(t, func(t *testing.T) storage.Interface { return m.wrap(openBbolt(t)) }, storagetest.Capabilities{Timeout: 2 * time.Second})
				return
			}
		}
		t.Fatalf("unknown mutant %q", name)
	}
	for _, m := range mutants() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			group, _, _ := strings.Cut(m.wantFail, "/")
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMutantsAreCaught$/^"+group+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), mutantEnv+"="+m.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed against mutant %s:\n%s", m.name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestMutantsAreCaught/"+m.wantFail+" ") {
				t.Fatalf("mutant %s: case %s did not fail:\n%s", m.name, m.wantFail, out)
			}
		})
	}
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
	w, err := m.Store.Watch(ctx, k, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan storage.Event)
	go func() {
		defer close(out)
		var n atomic.Int64
		for ev := range w.ResultChan() {
			if n.Add(1) == 5 {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return &lossyWatcher{w, out}, nil
}

type lossyWatcher struct {
	storage.Watcher
	out chan storage.Event
}

func (w *lossyWatcher) ResultChan() <-chan storage.Event { return w.out }
