// This file holds the write loops every backend shares: GuaranteedUpdate and
// GuaranteedDelete (optimistic concurrency on a key's mod revision, with the
// stale-cache rules of Kubernetes' GuaranteedUpdate), and the precondition
// check. A backend supplies only how to read a key's state and how to commit
// a write that holds if the key's mod revision is still the one expected.

package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/annexapi/annex/storage"
)

// State is a key's current state as a backend read it.
type State struct {
	// Object is the stored object; the zero Object when !Exists.
	Object storage.Object
	// Exists is false when the key is missing.
	Exists bool
	// Outdated says the stored form is not the one the backend writes now
	// (for example, a value encrypted with a key that has been rotated
	// out): GuaranteedUpdate then writes even a result that changes
	// nothing, so that rewriting every object completes a key rotation, as
	// Kubernetes does.
	Outdated bool
}

// Commit is the outcome of a conditional write.
type Commit struct {
	// Object is what was written: for a put, the new object; for a delete,
	// the last state with its resource version set to the deletion's
	// revision. It is unset when Conflict is.
	Object storage.Object
	// Conflict is set when the key's mod revision was not the expected one
	// (or, for a delete, the key was missing); nothing was written, and
	// Current is the key's state.
	Conflict bool
	Current  State
}

// StateReader reads a key's latest state. Implementations must be safe for
// concurrent use.
type StateReader interface {
	// ReadState returns the latest committed state of key. A missing key is
	// not an error: the State says !Exists.
	ReadState(ctx context.Context, key string) (State, error)
}

// UpdateCommitter is what GuaranteedUpdate needs from a backend.
// Implementations must be safe for concurrent use.
type UpdateCommitter interface {
	StateReader
	// CommitUpdate stores data (final JSON from PrepareUpdate, meta parsed
	// from it, both with some resource version the backend replaces by the
	// revision of the write) under key if the key's mod revision is still
	// expect (0: the key is missing). Otherwise it writes nothing and
	// returns Conflict with the current state.
	CommitUpdate(ctx context.Context, key string, data []byte, meta storage.Meta, expect uint64) (Commit, error)
}

// DeleteCommitter is what GuaranteedDelete needs from a backend.
// Implementations must be safe for concurrent use.
type DeleteCommitter interface {
	StateReader
	// CommitDelete removes key if its mod revision is still
	// last.ResourceVersion, and returns last with its resource version set
	// to the deletion's revision (see Commit.Object). Otherwise, or when the
	// key is missing, it removes nothing and returns Conflict with the
	// current state.
	CommitDelete(ctx context.Context, key string, last storage.Object) (Commit, error)
}

// CheckPreconditions returns storage.ErrConflict, with Kubernetes' message,
// when p does not hold on o (the zero Object for a missing key).
func CheckPreconditions(p storage.Preconditions, key string, o storage.Object) error {
	if p.UID != "" && p.UID != o.Meta.UID {
		return &storage.Error{Err: storage.ErrConflict, Key: key,
			Msg: fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", p.UID, o.Meta.UID)}
	}
	if p.ResourceVersion != "" {
		var have string
		if o.ResourceVersion != 0 {
			have = storage.FormatResourceVersion(o.ResourceVersion)
		}
		if p.ResourceVersion != have {
			return &storage.Error{Err: storage.ErrConflict, Key: key,
				Msg: fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", p.ResourceVersion, have)}
		}
	}
	return nil
}

// tracked is the state a write loop works from: what it read, and whether
// that came from a cache and was never verified.
type tracked struct {
	State
	// stale: State came from a Cached option and was not read from the
	// backend.
	stale bool
}

// startState returns the loop's first state: cached, when not nil, else a fresh
// read.
func startState(ctx context.Context, r StateReader, key string, cached *storage.Object) (tracked, error) {
	if cached != nil {
		return tracked{State: State{Object: *cached, Exists: true}, stale: true}, nil
	}
	st, err := r.ReadState(ctx, key)
	return tracked{State: st}, err
}

// refresh replaces a stale state with a fresh read. It reports whether the
// key kept the revision the stale state had: an error the caller's function
// returned against the stale state then stands, as it would against the
// fresh one.
func (t *tracked) refresh(ctx context.Context, r StateReader, key string) (unchanged bool, err error) {
	prev := t.Object.ResourceVersion
	st, err := r.ReadState(ctx, key)
	if err != nil {
		return false, err
	}
	t.State, t.stale = st, false
	return st.Exists && st.Object.ResourceVersion == prev, nil
}

// retryFresh decides a failed check (err) against t: against fresh state
// it stands; against a stale state the loop retries from a fresh read (nil).
func (t *tracked) retryFresh(ctx context.Context, r StateReader, key string, err error) error {
	if !t.stale {
		return err
	}
	_, rerr := t.refresh(ctx, r, key)
	return rerr
}

// recheck decides an error the caller's function (tryUpdate, Validate)
// returned against t: against fresh state it stands; against a stale state
// it stands when a fresh read finds the same revision, and the loop retries
// from the fresh state (nil) otherwise.
func (t *tracked) recheck(ctx context.Context, r StateReader, key string, fnErr error) error {
	if !t.stale {
		return fnErr
	}
	unchanged, err := t.refresh(ctx, r, key)
	switch {
	case err != nil:
		return err
	case unchanged:
		return fnErr
	}
	return nil
}

// noOp reports whether prepared changes nothing on t's state.
func (t *tracked) noOp(prepared []byte) bool {
	return t.Exists && !t.Outdated && bytes.Equal(prepared, t.Object.Data)
}

// GuaranteedUpdate implements Interface.Update over a backend: it checks
// opts.Preconditions and calls tryUpdate on the key's state, commits the
// result if the key's mod revision is still the one tryUpdate saw, and
// retries from the state the commit found otherwise. With opts.Cached it
// starts from that state and, whenever a precondition, tryUpdate or the
// no-op check fails or succeeds only against it, re-reads before deciding:
// a precondition failure is retried from the fresh state; a tryUpdate error
// stands when the key's revision is unchanged and is retried otherwise; a
// no-op is returned only when the fresh state is the same. A result equal to
// the stored bytes (and not State.Outdated) writes nothing and returns the
// stored object. key is not validated.
func GuaranteedUpdate(ctx context.Context, b UpdateCommitter, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.Object, error) {
	t, err := startState(ctx, b, key, opts.Cached)
	if err != nil {
		return storage.Object{}, err
	}
	for retrying := false; ; retrying = true {
		if retrying {
			if err := ctx.Err(); err != nil {
				return storage.Object{}, err
			}
		}
		if !t.Exists && !opts.IgnoreNotFound {
			return storage.Object{}, &storage.Error{Err: storage.ErrNotFound, Key: key}
		}
		state := t.Object
		if !t.Exists {
			state = storage.Object{}
		}
		if err := CheckPreconditions(opts.Preconditions, key, state); err != nil {
			if err := t.retryFresh(ctx, b, key, err); err != nil {
				return storage.Object{}, err
			}
			continue
		}
		newData, err := tryUpdate(state)
		if errors.Is(err, storage.ErrDeleteInstead) && !t.Exists {
			return storage.Object{}, &storage.Error{Err: storage.ErrNotFound, Key: key}
		}
		if errors.Is(err, storage.ErrDeleteInstead) {
			// Deleted in the update's place, if the key is still at the
			// revision tryUpdate saw (a stale cached state conflicts and is
			// retried from the current one).
			d, ok := b.(DeleteCommitter)
			if !ok {
				return storage.Object{}, fmt.Errorf("storage backend %T cannot delete in an update", b)
			}
			c, err := d.CommitDelete(ctx, key, t.Object)
			if err != nil {
				return storage.Object{}, err
			}
			if !c.Conflict {
				return c.Object, nil
			}
			t = tracked{State: c.Current}
			continue
		}
		if err != nil {
			if err := t.recheck(ctx, b, key, err); err != nil {
				return storage.Object{}, err
			}
			continue
		}
		prepared, meta, err := PrepareUpdate(newData, t.Object.ResourceVersion)
		if err != nil {
			return storage.Object{}, withKey(err, key)
		}
		if t.noOp(prepared) {
			if t.stale {
				// Verify the no-op against the real state.
				unchanged, err := t.refresh(ctx, b, key)
				if err != nil {
					return storage.Object{}, err
				}
				if unchanged && t.noOp(prepared) {
					return t.Object, nil
				}
				continue
			}
			return t.Object, nil
		}
		var expect uint64
		if t.Exists {
			expect = t.Object.ResourceVersion
		}
		c, err := b.CommitUpdate(ctx, key, prepared, meta, expect)
		if err != nil {
			return storage.Object{}, err
		}
		if !c.Conflict {
			return c.Object, nil
		}
		t = tracked{State: c.Current}
	}
}

// GuaranteedDelete implements Interface.Delete over a backend: it checks
// opts.Preconditions and opts.Validate on the key's state and deletes the key
// if its mod revision is still that state's, retrying from the state the
// commit found otherwise. With opts.Cached the stale-state rules of
// GuaranteedUpdate apply, Validate in the place of tryUpdate. key is not
// validated.
func GuaranteedDelete(ctx context.Context, b DeleteCommitter, key string, opts storage.DeleteOptions) (storage.Object, error) {
	t, err := startState(ctx, b, key, opts.Cached)
	if err != nil {
		return storage.Object{}, err
	}
	for retrying := false; ; retrying = true {
		if retrying {
			if err := ctx.Err(); err != nil {
				return storage.Object{}, err
			}
		}
		if !t.Exists {
			return storage.Object{}, &storage.Error{Err: storage.ErrNotFound, Key: key}
		}
		err := CheckPreconditions(opts.Preconditions, key, t.Object)
		if err != nil {
			if err := t.retryFresh(ctx, b, key, err); err != nil {
				return storage.Object{}, err
			}
			continue
		}
		if opts.Validate != nil {
			if err := opts.Validate(t.Object); err != nil {
				if err := t.recheck(ctx, b, key, err); err != nil {
					return storage.Object{}, err
				}
				continue
			}
		}
		c, err := b.CommitDelete(ctx, key, t.Object)
		if err != nil {
			return storage.Object{}, err
		}
		if !c.Conflict {
			return c.Object, nil
		}
		t = tracked{State: c.Current}
	}
}

// withKey sets the key of a *Error that has none.
func withKey(err error, key string) error {
	var se *storage.Error
	if errors.As(err, &se) && se.Key == "" {
		c := *se
		c.Key = key
		return &c
	}
	return err
}
