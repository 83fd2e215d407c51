// This file holds Admission, the attributes of one write, with the
// mutating chain's reinvocation state that rides along with it.

package attrs

import (
	"context"
	"errors"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// Operations, as AdmissionReview spells them.
const (
	Create  = "CREATE"
	Update  = "UPDATE"
	Delete  = "DELETE"
	Connect = "CONNECT"
)

// Admission describes one write being admitted. A mutator may replace or
// edit Object; nothing else may change it.
type Admission struct {
	// Operation is Create, Update, Delete or Connect.
	Operation string
	// Group, Version, Resource, Subresource and Kind name what is written.
	Group, Version, Resource, Subresource, Kind string
	// Namespace and Name of the object ("" for cluster-scoped, and Name is
	// "" on a create with generateName until the name is generated).
	Namespace, Name string
	// Object is the new object (nil for Delete); OldObject the stored one
	// (nil for Create). Both are generic JSON (numbers as json.Number).
	Object, OldObject map[string]any
	// DryRun is true for ?dryRun=All: nothing will be stored.
	DryRun bool
	// User is the requesting user (nil: anonymous, seen as "").
	User *filters.User
	// Options are the request's meta.CreateOptions, meta.UpdateOptions,
	// meta.PatchOptions or meta.DeleteOptions, or any value encoding/json
	// can marshal (sent to webhooks and CEL as `options`).
	Options any
	// MergeApply, when not nil, merges an apply configuration into an
	// object by the resource's schema (list and map types), as server-side
	// apply merges: a MutatingAdmissionPolicy's ApplyConfiguration uses it.
	// It returns a new object. Nil means maps merged recursively and
	// anything else replaced.
	MergeApply func(obj, applyConfiguration map[string]any) (map[string]any, error)
	// Versions are the versions the resource is served at, preferred
	// first, when it is served at more than one; Convert converts an
	// object of these attributes to another of them. Rules written for
	// another version match through them (matchPolicy Equivalent): see
	// AtVersion.
	Versions []string
	Convert  func(ctx context.Context, obj map[string]any, version string) (map[string]any, error)
	// RequestVersion is the version of the request when these attributes
	// were converted to Version by AtVersion; "" means Version.
	RequestVersion string

	// reinvocation state of this request; see IsReinvoke.
	reinvoking, reinvokeWanted bool
	// perPlugin lets a plugin keep state across the two mutating passes.
	perPlugin map[any]any
}

// AtVersion returns the attributes at another of Versions: a copy with
// Version set, RequestVersion the request's, and Object and OldObject
// converted, for a rule written for that version (kube's matchPolicy
// Equivalent). A mutator's changes go back with TakeMutation.
func (a *Admission) AtVersion(ctx context.Context, version string) (*Admission, error) {
	if version == a.Version {
		return a, nil
	}
	if a.Convert == nil {
		return nil, errors.New("attrs: no conversion to " + version)
	}
	b := *a
	b.Version = version
	if b.RequestVersion == "" {
		b.RequestVersion = a.Version
	}
	var err error
	for _, o := range []*map[string]any{&b.Object, &b.OldObject} {
		if *o != nil {
			if *o, err = a.Convert(ctx, *o, version); err != nil {
				return nil, err
			}
		}
	}
	return &b, nil
}

// TakeMutation takes the Object of m, attributes from a.AtVersion that a
// mutator changed, back to a's version, with m's reinvocation request.
func (a *Admission) TakeMutation(ctx context.Context, m *Admission) error {
	if m == a {
		return nil
	}
	obj, err := a.Convert(ctx, m.Object, a.Version)
	if err != nil {
		return err
	}
	a.Object = obj
	if m.reinvokeWanted {
		a.RequestReinvocation()
	}
	return nil
}

// GroupResource is the attributes' resource in its group.
func (a *Admission) GroupResource() meta.GroupResource {
	return meta.GroupResource{Group: a.Group, Resource: a.Resource}
}

// ObjectName is the name for matching and error messages: Name, or else
// the metadata.name of Object or OldObject.
func (a *Admission) ObjectName() string {
	if a.Name != "" {
		return a.Name
	}
	for _, o := range []map[string]any{a.Object, a.OldObject} {
		if md, ok := o["metadata"].(map[string]any); ok {
			if n, ok := md["name"].(string); ok && n != "" {
				return n
			}
		}
	}
	return ""
}

// IsReinvoke reports whether the mutating chain is running its mutators a
// second time (reinvocationPolicy IfNeeded).
func (a *Admission) IsReinvoke() bool { return a.reinvoking }

// RequestReinvocation asks the mutating chain to run all mutators once
// more after the current pass; it has no effect during the second pass.
func (a *Admission) RequestReinvocation() {
	if !a.reinvoking {
		a.reinvokeWanted = true
	}
}

// ReinvocationRequested reports whether RequestReinvocation was called
// since the last SetReinvoke. The mutating chain reads it after a pass.
func (a *Admission) ReinvocationRequested() bool { return a.reinvokeWanted }

// SetReinvoke marks the start of the mutating chain's first (false) or
// second (true) pass and clears any pending request. Only the chain that
// runs the mutators calls it.
func (a *Admission) SetReinvoke(second bool) {
	a.reinvoking, a.reinvokeWanted = second, false
}

// PluginState returns the per-request state a plugin stored under key (any
// comparable value private to the plugin), creating it with mk on first use.
func (a *Admission) PluginState(key any, mk func() any) any {
	if a.perPlugin == nil {
		a.perPlugin = map[any]any{}
	}
	v, ok := a.perPlugin[key]
	if !ok {
		v = mk()
		a.perPlugin[key] = v
	}
	return v
}
