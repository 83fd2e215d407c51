// This file declares what the write path needs from admission: the Admitter
// interface and the attributes of one write. rest never imports an admission
// implementation; the root package glues one to this interface.

package rest

import (
	"context"
	"errors"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// Admission operations.
const (
	OperationCreate = "CREATE"
	OperationUpdate = "UPDATE"
	OperationDelete = "DELETE"
)

// Admitter runs admission for a write. Mutate may change a.Object; Validate
// must not. Both are called on the request goroutine and may be called more
// than once for one request (once per storage conflict retry), so they must
// not have side effects beyond their answer. An error that is (or wraps) a
// *meta.Status is answered as that Status; any other error is a 500.
type Admitter interface {
	Mutate(ctx context.Context, a *AdmissionAttributes) error
	Validate(ctx context.Context, a *AdmissionAttributes) error
}

// AdmissionAttributes describe one write.
type AdmissionAttributes struct {
	// Operation is CREATE, UPDATE or DELETE.
	Operation string
	// Group, Version, Resource, Subresource and Kind name what is written.
	Group, Version, Resource, Subresource, Kind string
	// Namespace and Name name the object ("" name for a generated one).
	Namespace, Name string
	// Object is the new object (nil for DELETE); OldObject the stored one
	// (nil for CREATE).
	Object, OldObject map[string]any
	// DryRun is true when nothing will be stored.
	DryRun bool
	// User is the requester, when known.
	User *filters.User
	// Options is the request's meta.CreateOptions, meta.UpdateOptions,
	// meta.PatchOptions or meta.DeleteOptions.
	Options any
}

// AdmitterFuncs adapts two functions to Admitter; a nil one admits.
type AdmitterFuncs struct {
	MutateFunc   func(ctx context.Context, a *AdmissionAttributes) error
	ValidateFunc func(ctx context.Context, a *AdmissionAttributes) error
}

var _ Admitter = AdmitterFuncs{}

// Mutate calls MutateFunc.
func (f AdmitterFuncs) Mutate(ctx context.Context, a *AdmissionAttributes) error {
	if f.MutateFunc == nil {
		return nil
	}
	return f.MutateFunc(ctx, a)
}

// Validate calls ValidateFunc.
func (f AdmitterFuncs) Validate(ctx context.Context, a *AdmissionAttributes) error {
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

// attributes returns the admission attributes of a write on rh.
func (rh *resourceHandler) attributes(ctx context.Context, op, sub, namespace, name string, obj, old Object, dryRun bool, opts any) *AdmissionAttributes {
	a := &AdmissionAttributes{Operation: op, Group: rh.Group, Version: rh.Version, Resource: rh.Plural,
		Subresource: sub, Kind: rh.Kind, Namespace: namespace, Name: name, Object: obj, OldObject: old,
		DryRun: dryRun, Options: opts}
	if u, ok := filters.UserFrom(ctx); ok {
		a.User = u
	}
	return a
}

func (rh *resourceHandler) mutate(ctx context.Context, a *AdmissionAttributes) error {
	if rh.h.admission == nil {
		return nil
	}
	if err := rh.h.admission.Mutate(ctx, a); err != nil {
		return admissionError(err)
	}
	return nil
}

func (rh *resourceHandler) validateAdmission(ctx context.Context, a *AdmissionAttributes) error {
	if rh.h.admission == nil {
		return nil
	}
	if err := rh.h.admission.Validate(ctx, a); err != nil {
		return admissionError(err)
	}
	return nil
}
