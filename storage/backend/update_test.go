// Tests of the shared write loops (GuaranteedUpdate, GuaranteedDelete) and
// Preconditions.Check against a tiny in-memory backend, for the rules the
// conformance suite cannot isolate: how many reads a stale cached state
// costs, when a tryUpdate or Validate error against it stands, that a no-op
// is verified against fresh state, that a conflict retries from the state the
// commit found without another read, and that an outdated stored form is
// rewritten.

package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// fakeBackend is a one-goroutine key-value store with a revision counter.
type fakeBackend struct {
	rev  uint64
	objs map[string]storage.Object
	// outdated marks every stored value as written in an old form until the
	// next commit.
	outdated bool
	// beforeCommit, when set, runs at the start of every commit (a
	// concurrent writer).
	beforeCommit func()
	reads        int
	commits      int
}

var (
	_ backend.UpdateCommitter = (*fakeBackend)(nil)
	_ backend.DeleteCommitter = (*fakeBackend)(nil)
)

func newFake() *fakeBackend { return &fakeBackend{objs: map[string]storage.Object{}} }

// put writes data under key at the next revision, as another writer would.
func (f *fakeBackend) put(t testing.TB, key string, data []byte) storage.Object {
	t.Helper()
	f.rev++
	out, meta, err := backend.PrepareUpdate(data, f.rev)
	if err != nil {
		t.Fatalf("put %s: %v", data, err)
	}
	o := storage.Object{Key: key, ResourceVersion: f.rev, Data: out, Meta: meta}
	f.objs[key] = o
	return o
}

func (f *fakeBackend) state(key string) backend.State {
	o, ok := f.objs[key]
	return backend.State{Object: o, Exists: ok, Outdated: ok && f.outdated}
}

func (f *fakeBackend) ReadState(ctx context.Context, key string) (backend.State, error) {
	f.reads++
	return f.state(key), nil
}

func (f *fakeBackend) CommitUpdate(ctx context.Context, key string, data []byte, meta storage.Meta, expect uint64) (backend.Commit, error) {
	if f.beforeCommit != nil {
		f.beforeCommit()
	}
	if st := f.state(key); st.Object.ResourceVersion != expect {
		return backend.Commit{Conflict: true, Current: st}, nil
	}
	f.commits++
	f.rev++
	out, err := backend.SetResourceVersion(data, f.rev)
	if err != nil {
		return backend.Commit{}, err
	}
	meta.ResourceVersion = storage.FormatResourceVersion(f.rev)
	o := storage.Object{Key: key, ResourceVersion: f.rev, Data: out, Meta: meta}
	f.objs[key] = o
	f.outdated = false
	return backend.Commit{Object: o}, nil
}

func (f *fakeBackend) CommitDelete(ctx context.Context, key string, last storage.Object) (backend.Commit, error) {
	if f.beforeCommit != nil {
		f.beforeCommit()
	}
	if st := f.state(key); !st.Exists || st.Object.ResourceVersion != last.ResourceVersion {
		return backend.Commit{Conflict: true, Current: st}, nil
	}
	f.commits++
	f.rev++
	delete(f.objs, key)
	out, err := backend.SetResourceVersion(last.Data, f.rev)
	if err != nil {
		return backend.Commit{}, err
	}
	last.Meta.ResourceVersion = storage.FormatResourceVersion(f.rev)
	return backend.Commit{Object: storage.Object{Key: key, ResourceVersion: f.rev, Data: out, Meta: last.Meta}}, nil
}

const testKey = "/g/things/ns/a"

func thing(uid, v string) []byte {
	return fmt.Appendf(nil, `{"metadata":{"name":"a","uid":%q},"v":%q}`, uid, v)
}

// valueOf is "v" of a thing.
func valueOf(t testing.TB, o storage.Object) string {
	t.Helper()
	var v struct {
		V string `json:"v"`
	}
	if err := json.Unmarshal(o.Data, &v); err != nil {
		t.Fatalf("not a thing: %s: %v", o.Data, err)
	}
	return v.V
}

var errRefused = errors.New("refused")

func TestGuaranteedUpdate(t *testing.T) {
	type outcome struct {
		err     error  // sentinel or errRefused; nil for success
		value   string // the result's "v"
		rev     uint64 // the result's revision
		calls   int    // tryUpdate calls
		reads   int    // ReadState calls
		commits int    // committed writes
	}
	for _, c := range []struct {
		name string
		// setup writes the store's history and returns the cached state
		// (nil: none) and the options.
		setup func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions)
		// update is the tryUpdate; calls counts its calls so far.
		update func(cur storage.Object, calls int) ([]byte, error)
		want   outcome
	}{
		{
			name: "fresh_read_then_commit",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				f.put(t, testKey, thing("u1", "1"))
				return nil, storage.UpdateOptions{}
			},
			update: setValue("2"),
			want:   outcome{value: "2", rev: 2, calls: 1, reads: 1, commits: 1},
		},
		{
			name: "missing_key",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				return nil, storage.UpdateOptions{}
			},
			update: setValue("2"),
			want:   outcome{err: storage.ErrNotFound, reads: 1},
		},
		{
			name: "missing_key_ignore_not_found_creates_from_zero_object",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				return nil, storage.UpdateOptions{IgnoreNotFound: true}
			},
			update: func(cur storage.Object, _ int) ([]byte, error) {
				if cur.ResourceVersion != 0 || cur.Data != nil {
					return nil, fmt.Errorf("tryUpdate got %+v for a missing key, want the zero Object", cur)
				}
				return thing("u1", "new"), nil
			},
			want: outcome{value: "new", rev: 1, calls: 1, reads: 1, commits: 1},
		},
		{
			name: "cached_current_state_needs_no_read",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				o := f.put(t, testKey, thing("u1", "1"))
				return &o, storage.UpdateOptions{}
			},
			update: setValue("2"),
			want:   outcome{value: "2", rev: 2, calls: 1, reads: 0, commits: 1},
		},
		{
			name: "stale_cache_failing_precondition_is_retried_from_a_fresh_read",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u1", "2"))
				return &old, storage.UpdateOptions{Preconditions: storage.Preconditions{ResourceVersion: "2"}}
			},
			update: setValue("3"),
			want:   outcome{value: "3", rev: 3, calls: 1, reads: 1, commits: 1},
		},
		{
			name: "precondition_failing_on_fresh_state_too_is_a_conflict",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u1", "2"))
				return &old, storage.UpdateOptions{Preconditions: storage.Preconditions{ResourceVersion: "5"}}
			},
			update: setValue("3"),
			want:   outcome{err: storage.ErrConflict, reads: 1},
		},
		{
			name: "precondition_holding_only_on_cached_state_is_caught_by_the_commit",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u2", "2"))
				return &old, storage.UpdateOptions{Preconditions: storage.Preconditions{UID: "u1"}}
			},
			update: setValue("3"),
			want:   outcome{err: storage.ErrConflict, calls: 1, reads: 0},
		},
		{
			name: "update_error_against_stale_state_with_unchanged_revision_stands",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				o := f.put(t, testKey, thing("u1", "1"))
				return &o, storage.UpdateOptions{}
			},
			update: func(storage.Object, int) ([]byte, error) { return nil, errRefused },
			want:   outcome{err: errRefused, calls: 1, reads: 1},
		},
		{
			name: "update_error_against_stale_state_with_changed_revision_is_retried",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u1", "2"))
				return &old, storage.UpdateOptions{}
			},
			update: func(cur storage.Object, _ int) ([]byte, error) {
				if cur.ResourceVersion == 1 {
					return nil, errRefused
				}
				return setValue("3")(cur, 0)
			},
			want: outcome{value: "3", rev: 3, calls: 2, reads: 1, commits: 1},
		},
		{
			name: "update_error_against_fresh_state_needs_no_read",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				f.put(t, testKey, thing("u1", "1"))
				return nil, storage.UpdateOptions{}
			},
			update: func(storage.Object, int) ([]byte, error) { return nil, errRefused },
			want:   outcome{err: errRefused, calls: 1, reads: 1},
		},
		{
			name: "no_op_against_stale_state_is_verified_and_returns_stored_object",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				o := f.put(t, testKey, thing("u1", "1"))
				return &o, storage.UpdateOptions{}
			},
			update: keep,
			want:   outcome{value: "1", rev: 1, calls: 1, reads: 1, commits: 0},
		},
		{
			name: "no_op_against_stale_state_that_changed_is_recomputed",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u1", "2"))
				return &old, storage.UpdateOptions{}
			},
			update: keep,
			want:   outcome{value: "2", rev: 2, calls: 2, reads: 1, commits: 0},
		},
		{
			name: "no_op_on_outdated_stored_form_rewrites",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				f.put(t, testKey, thing("u1", "1"))
				f.outdated = true
				return nil, storage.UpdateOptions{}
			},
			update: keep,
			want:   outcome{value: "1", rev: 2, calls: 1, reads: 1, commits: 1},
		},
		{
			name: "conflict_retries_from_the_commits_state_without_a_read",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				f.put(t, testKey, thing("u1", "1"))
				f.beforeCommit = func() {
					f.beforeCommit = nil
					f.put(t, testKey, thing("u1", "other"))
				}
				return nil, storage.UpdateOptions{}
			},
			update: func(cur storage.Object, calls int) ([]byte, error) {
				return setValue(valueOf(t, cur)+"+mine")(cur, calls)
			},
			want: outcome{value: "other+mine", rev: 3, calls: 2, reads: 1, commits: 1},
		},
		{
			name: "cached_object_deleted_since_is_not_found",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				o := f.put(t, testKey, thing("u1", "1"))
				delete(f.objs, testKey)
				return &o, storage.UpdateOptions{}
			},
			update: setValue("2"),
			want:   outcome{err: storage.ErrNotFound, calls: 1, reads: 0},
		},
		{
			name: "invalid_result_names_the_key",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.UpdateOptions) {
				f.put(t, testKey, thing("u1", "1"))
				return nil, storage.UpdateOptions{}
			},
			update: func(storage.Object, int) ([]byte, error) { return []byte(`[1]`), nil },
			want:   outcome{err: storage.ErrInvalidObject, calls: 1, reads: 1},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			cached, opts := c.setup(t, f)
			opts.Cached = cached
			calls := 0
			got, err := backend.GuaranteedUpdate(t.Context(), f, testKey, opts, func(cur storage.Object) ([]byte, error) {
				calls++
				return c.update(cur, calls)
			})
			checkOutcome(t, got, err, c.want.err, c.want.value, c.want.rev)
			if calls != c.want.calls || f.reads != c.want.reads || f.commits != c.want.commits {
				t.Errorf("tryUpdate calls %d, reads %d, commits %d; want %d, %d, %d",
					calls, f.reads, f.commits, c.want.calls, c.want.reads, c.want.commits)
			}
		})
	}
}

// TestGuaranteedUpdateStopsRetryingWhenContextEnds: a store that always
// conflicts does not keep the loop going past its context.
func TestGuaranteedUpdateStopsRetryingWhenContextEnds(t *testing.T) {
	f := newFake()
	f.put(t, testKey, thing("u1", "1"))
	ctx, cancel := context.WithCancel(t.Context())
	n := 0
	f.beforeCommit = func() {
		n++
		if n == 3 {
			cancel()
		}
		f.put(t, testKey, thing("u1", fmt.Sprint("other", n)))
	}
	_, err := backend.GuaranteedUpdate(ctx, f, testKey, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
		return setValue("mine")(cur, 0)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n != 3 {
		t.Errorf("%d commits attempted, want 3 (the loop stops at the first retry after cancel)", n)
	}
}

func TestGuaranteedDelete(t *testing.T) {
	refuseOld := func(cur storage.Object) error {
		if cur.ResourceVersion == 1 {
			return errRefused
		}
		return nil
	}
	for _, c := range []struct {
		name     string
		setup    func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions)
		wantErr  error
		wantRev  uint64 // the deletion's revision
		wantVal  string // the last state's "v"
		reads    int
		validate int // Validate calls
	}{
		{
			name: "fresh_read_then_delete",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				f.put(t, testKey, thing("u1", "1"))
				return nil, storage.DeleteOptions{}
			},
			wantRev: 2, wantVal: "1", reads: 1,
		},
		{
			name: "missing_key",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				return nil, storage.DeleteOptions{}
			},
			wantErr: storage.ErrNotFound, reads: 1,
		},
		{
			name: "validate_error_against_stale_state_with_unchanged_revision_stands",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				o := f.put(t, testKey, thing("u1", "1"))
				return &o, storage.DeleteOptions{Validate: refuseOld}
			},
			wantErr: errRefused, reads: 1, validate: 1,
		},
		{
			name: "validate_error_against_stale_state_with_changed_revision_is_retried",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u1", "2"))
				return &old, storage.DeleteOptions{Validate: refuseOld}
			},
			wantRev: 3, wantVal: "2", reads: 1, validate: 2,
		},
		{
			name: "precondition_holding_only_on_cached_state_is_a_conflict",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u1", "2"))
				return &old, storage.DeleteOptions{Preconditions: storage.Preconditions{ResourceVersion: "1"}}
			},
			wantErr: storage.ErrConflict, reads: 0,
		},
		{
			name: "stale_cache_failing_precondition_is_retried_from_a_fresh_read",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				old := f.put(t, testKey, thing("u1", "1"))
				f.put(t, testKey, thing("u1", "2"))
				return &old, storage.DeleteOptions{Preconditions: storage.Preconditions{ResourceVersion: "2"}}
			},
			wantRev: 3, wantVal: "2", reads: 1,
		},
		{
			name: "conflict_retries_from_the_commits_state_and_validates_again",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				f.put(t, testKey, thing("u1", "1"))
				f.beforeCommit = func() {
					f.beforeCommit = nil
					f.put(t, testKey, thing("u1", "2"))
				}
				return nil, storage.DeleteOptions{Validate: func(storage.Object) error { return nil }}
			},
			wantRev: 3, wantVal: "2", reads: 1, validate: 2,
		},
		{
			name: "deleted_by_another_writer_during_the_commit_is_not_found",
			setup: func(t *testing.T, f *fakeBackend) (*storage.Object, storage.DeleteOptions) {
				f.put(t, testKey, thing("u1", "1"))
				f.beforeCommit = func() { delete(f.objs, testKey) }
				return nil, storage.DeleteOptions{}
			},
			wantErr: storage.ErrNotFound, reads: 1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			cached, opts := c.setup(t, f)
			opts.Cached = cached
			validate := 0
			if v := opts.Validate; v != nil {
				opts.Validate = func(cur storage.Object) error { validate++; return v(cur) }
			}
			got, err := backend.GuaranteedDelete(t.Context(), f, testKey, opts)
			checkOutcome(t, got, err, c.wantErr, c.wantVal, c.wantRev)
			if f.reads != c.reads || validate != c.validate {
				t.Errorf("reads %d, Validate calls %d; want %d, %d", f.reads, validate, c.reads, c.validate)
			}
			_, exists := f.objs[testKey]
			if err == nil && exists {
				t.Error("Delete succeeded, but the key exists")
			}
			if (errors.Is(err, storage.ErrConflict) || errors.Is(err, errRefused)) && !exists {
				t.Errorf("Delete refused (%v), but the key is gone", err)
			}
		})
	}
}

func TestCheckPreconditions(t *testing.T) {
	o := storage.Object{Key: testKey, ResourceVersion: 7, Meta: storage.Meta{UID: "u1"}}
	for _, c := range []struct {
		name    string
		pre     storage.Preconditions
		obj     storage.Object
		wantMsg string // "" for success
	}{
		{"none", storage.Preconditions{}, o, ""},
		{"both_hold", storage.Preconditions{UID: "u1", ResourceVersion: "7"}, o, ""},
		{"uid_differs", storage.Preconditions{UID: "u2"}, o,
			"Precondition failed: UID in precondition: u2, UID in object meta: u1"},
		{"resource_version_differs", storage.Preconditions{ResourceVersion: "6"}, o,
			"Precondition failed: ResourceVersion in precondition: 6, ResourceVersion in object meta: 7"},
		{"uid_is_checked_first", storage.Preconditions{UID: "u2", ResourceVersion: "6"}, o,
			"Precondition failed: UID in precondition: u2, UID in object meta: u1"},
		{"missing_object_has_empty_resource_version", storage.Preconditions{ResourceVersion: "7"}, storage.Object{},
			"Precondition failed: ResourceVersion in precondition: 7, ResourceVersion in object meta: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := backend.CheckPreconditions(c.pre, testKey, c.obj)
			if c.wantMsg == "" {
				if err != nil {
					t.Fatalf("CheckPreconditions = %v, want nil", err)
				}
				return
			}
			var se *storage.Error
			if !errors.As(err, &se) || se.Err != storage.ErrConflict || se.Key != testKey || se.Msg != c.wantMsg {
				t.Fatalf("CheckPreconditions = %#v, want ErrConflict on %s with %q", err, testKey, c.wantMsg)
			}
		})
	}
}

// setValue is a tryUpdate that sets "v" and keeps the rest.
func setValue(v string) func(cur storage.Object, _ int) ([]byte, error) {
	return func(cur storage.Object, _ int) ([]byte, error) {
		return thing(cur.Meta.UID, v), nil
	}
}

// keep is a tryUpdate that changes nothing.
func keep(cur storage.Object, _ int) ([]byte, error) { return cur.Data, nil }

func checkOutcome(t *testing.T, got storage.Object, err, wantErr error, wantValue string, wantRev uint64) {
	t.Helper()
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("err = %v, want %v", err, wantErr)
		}
		var se *storage.Error
		if errors.As(err, &se) && se.Key != testKey {
			t.Errorf("error %v names key %q, want %q", err, se.Key, testKey)
		}
		return
	}
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if got.ResourceVersion != wantRev || got.Meta.ResourceVersion != storage.FormatResourceVersion(wantRev) {
		t.Errorf("result at %d (meta %q), want %d", got.ResourceVersion, got.Meta.ResourceVersion, wantRev)
	}
	if v := valueOf(t, got); v != wantValue {
		t.Errorf("result v = %q, want %q", v, wantValue)
	}
}
