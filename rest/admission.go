// This file declares what the write path needs from admission: the Admitter
// interface over the attributes of one write (attrs.Admission, shared with
// package admission so no glue copies them), and the write path's one
// admission step, admit.

package rest

import (
	"context"
	"errors"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/attrs"
	"github.com/annexapi/annex/meta"
)

// Admitter runs admission for a write. Mutate may change a.Object; Validate
// must not. Both are called on the request goroutine and may be called more
// than once for one request (once per storage conflict retry), so they must
// not have side effects beyond their answer. An error that is (or wraps) a
// *meta.Status is answered as that Status; any other error is a 500.
// *admission.Chain implements it.
type Admitter interface {
	Mutate(ctx context.Context, a *attrs.Admission) error
	Validate(ctx context.Context, a *attrs.Admission) error
}

// SchemaChecker is what an Admitter may also implement to check an object
// against its resource's structural schema and x-kubernetes-validations
// rules (*admission.Chain does). The validate step calls it after
// ObjectMeta and the scale paths (prior, whose blocking causes keep the
// rules from running) and before the strategy's checks, so that every
// cause is in one 422 before validating admission, in kube's order.
type SchemaChecker interface {
	CheckSchema(ctx context.Context, a *attrs.Admission, prior []meta.StatusCause) []meta.StatusCause
}

// AdmitterFuncs adapts two functions to Admitter; a nil one admits.
type AdmitterFuncs struct {
	MutateFunc   func(ctx context.Context, a *attrs.Admission) error
	ValidateFunc func(ctx context.Context, a *attrs.Admission) error
}

var _ Admitter = AdmitterFuncs{}

// Mutate calls MutateFunc.
func (f AdmitterFuncs) Mutate(ctx context.Context, a *attrs.Admission) error {
	if f.MutateFunc == nil {
		return nil
	}
	return f.MutateFunc(ctx, a)
}

// Validate calls ValidateFunc.
func (f AdmitterFuncs) Validate(ctx context.Context, a *attrs.Admission) error {
	if f.ValidateFunc == nil {
		return nil
	}
	return f.ValidateFunc(ctx, a)
}

// admissionError keeps a *meta.Status and turns anything else into a 500.
func admissionError(err error) error {
	var st *meta.Status
	if errors.As(err, &st) {
		return st
	}
	return meta.NewInternalError(err)
}

// attributes returns the admission attributes of op on obj (nil for a
// delete) given the stored old (nil for a create).
func (rh *resourceHandler) attributes(ctx context.Context, op string, wr *writeRequest, obj, old Object) *attrs.Admission {
	a := &attrs.Admission{Operation: op, Group: rh.Group, Version: rh.Version, Resource: rh.Plural,
		Subresource: wr.sub, Kind: rh.Kind, Namespace: wr.namespace, Name: wr.name, Object: obj, OldObject: old,
		DryRun: wr.params.dryRun, Options: wr.opts}
	if rh.fields != nil {
		a.MergeApply = rh.fields.Merge
	}
	if rh.versions != nil {
		a.Versions, a.Convert = rh.versions.versions, rh.convertObject
	}
	if u, ok := filters.UserFrom(ctx); ok {
		a.User = u
	}
	return a
}

// The two phases of admission.
type admitPhase int

const (
	mutating admitPhase = iota
	validating
)

// admit is the write path's one admission step: mutating admission (which
// may replace a.Object) or validating admission, per phase. Every write
// passes here, twice (a delete only validates).
func (rh *resourceHandler) admit(ctx context.Context, phase admitPhase, a *attrs.Admission) error {
	if rh.h.admission == nil {
		return nil
	}
	var err error
	step := startStep(ctx)
	if phase == mutating {
		err = rh.h.admission.Mutate(ctx, a)
	} else {
		err = rh.h.admission.Validate(ctx, a)
	}
	step.admitDone(ctx, err)
	if err != nil {
		return admissionError(err)
	}
	return nil
}
