// This file holds Versions: one stored resource served at several versions,
// each a Go type, converted hub and spoke by typed functions.

package typed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// Versions declares a stored resource served at several versions, each
// with its own Go type, hub and spoke: the Hub version's type is the one
// every other converts to and from (SpokeOf). Objects are stored at
// StorageVersion and converted when read at another version (rest's
// ConversionFuncs, with the typed functions below it).
//
// The fields the versions share (Group, Plural, Kind, Singular,
// Namespaced, ShortNames, Categories, Storage) are set here and left empty
// in each version's Stored; each version's Stored has its own Version,
// printer columns, status subresource, hooks, and Deprecated mark.
type Versions[Hub any] struct {
	Group, Plural, Kind    string
	Singular               string
	Namespaced             bool
	ShortNames, Categories []string
	// Storage is the store; nil means the Builder's.
	Storage storage.Interface

	// Hub is the hub version. Its Version is required.
	Hub Stored[Hub]
	// Spokes are the other versions, each made by SpokeOf.
	Spokes []Spoke[Hub]
	// StorageVersion names the version objects are stored at: the hub's
	// or a spoke's. Empty means the hub's.
	StorageVersion string
}

// Spoke is a version of a Versions resource other than the hub, with its
// conversions to and from the hub; make one with SpokeOf.
type Spoke[Hub any] struct {
	version  string
	resource func() (rest.Resource, error)
	conv     rest.VersionConversion
}

// SpokeOf declares the version s (of Go type S) of a resource whose hub
// type is Hub: toHub and fromHub convert its objects. They move fields
// only: the server keeps each object's kind, apiVersion and metadata, but
// for the labels and annotations of a result that carries its input's
// metadata (out.ObjectMeta = in.ObjectMeta), which a function may change,
// to keep in an annotation what the other version cannot hold, say. A
// function's error fails the request (500) with its text, as a failed
// conversion webhook does.
//
// What the input's type does not hold (a field it does not declare, such as
// a preserved unknown one, a null, an omitempty zero value) is carried to
// the same place in the result when the result has nothing there (inside
// objects both have, not into lists), where the other version's schema
// prunes it unless it has such a field or keeps unknown fields there. A
// renamed field's zero value does not cross: the function sees only the
// Go values.
func SpokeOf[S, Hub any](s Stored[S], toHub func(*S) (*Hub, error), fromHub func(*Hub) (*S, error)) Spoke[Hub] {
	return Spoke[Hub]{
		version:  s.Version,
		resource: s.Resource,
		conv: rest.VersionConversion{
			ToHub:   convertWith(toHub),
			FromHub: convertWith(fromHub),
		},
	}
}

// convertWith turns a typed conversion into one of generic objects.
func convertWith[In, Out any](f func(*In) (*Out, error)) func(context.Context, rest.Object) error {
	if f == nil {
		return nil
	}
	return func(_ context.Context, obj rest.Object) error {
		in, err := decode[In](obj)
		if err != nil {
			return fmt.Errorf("the object does not decode into %s: %w", reflect.TypeFor[In](), err)
		}
		inJSON, err := json.Marshal(in)
		if err != nil {
			return err
		}
		out, err := f(in)
		if err != nil {
			return err
		}
		if out == nil {
			return fmt.Errorf("the conversion to %s returned nil", reflect.TypeFor[Out]())
		}
		outJSON, err := json.Marshal(out)
		if err != nil {
			return err
		}
		orig := maps.Clone(obj)
		if err := replaceConverted(obj, inJSON, outJSON); err != nil {
			return err
		}
		carryDropped(obj, orig, inJSON, true)
		return nil
	}
}

// carryDropped copies to dst what src (the object before conversion) has
// and seen (its In type's encoding) has not, at the same place, where dst
// has nothing there; it follows objects that both have.
func carryDropped(dst, src map[string]any, seen []byte, root bool) {
	sm, _ := members(seen)
	for k, v := range src {
		if root && (k == "metadata" || k == "kind" || k == "apiVersion") {
			continue
		}
		sv, ok := sm.get(k)
		if !ok {
			if _, has := dst[k]; !has {
				dst[k] = v
			}
			continue
		}
		vm, srcMap := v.(map[string]any)
		dm, dstMap := dst[k].(map[string]any)
		if srcMap && dstMap && isKind(sv, '{') {
			carryDropped(dm, vm, sv, false)
		}
	}
}

// replaceConverted makes obj the converted object outJSON, keeping obj's
// kind, apiVersion and metadata; the changes the function made to the
// labels and annotations of metadata it carried over are applied.
func replaceConverted(obj rest.Object, inJSON, outJSON []byte) error {
	v, err := decodeValue(outJSON)
	if err != nil {
		return err
	}
	converted, ok := v.(map[string]any)
	if !ok {
		return errors.New("the converted object does not encode as a JSON object")
	}
	md, _ := obj["metadata"].(map[string]any)
	kind, apiVersion := obj["kind"], obj["apiVersion"]
	inMembers, _ := members(inJSON)
	outMembers, _ := members(outJSON)
	inMD, _ := inMembers.get("metadata")
	outMD, _ := outMembers.get("metadata")
	if md != nil && sameName(inMD, outMD) {
		if err := applyChanges(md, pick(inMD, "labels", "annotations"), pick(outMD, "labels", "annotations")); err != nil {
			return err
		}
	}
	clear(obj)
	for k, e := range converted {
		obj[k] = e
	}
	obj["kind"], obj["apiVersion"] = kind, apiVersion
	if md != nil {
		obj["metadata"] = md
	} else {
		delete(obj, "metadata")
	}
	return nil
}

// sameName reports whether two encoded metadata objects name the same
// object (a conversion that carried its input's metadata over).
func sameName(a, b []byte) bool {
	am, _ := members(a)
	bm, _ := members(b)
	an, ok1 := am.get("name")
	bn, ok2 := bm.get("name")
	return ok1 && ok2 && string(an) == string(bn)
}

// pick is the encoded object of the members keys of the encoded object b.
func pick(b []byte, keys ...string) []byte {
	ms, _ := members(b)
	out := []byte{'{'}
	for _, m := range ms {
		if slices.Contains(keys, m.key) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			k, _ := json.Marshal(m.key)
			out = append(append(append(out, k...), ':'), m.val...)
		}
	}
	return append(out, '}')
}

// Resources are the rest.Resources of the versions, newest first (as kube
// orders a CustomResourceDefinition's), the storage version marked and
// carrying the conversion.
func (v Versions[Hub]) Resources() ([]rest.Resource, error) {
	name := v.Plural + "." + v.Group
	if v.Hub.Version == "" {
		return nil, fmt.Errorf("typed: versions of %s: the hub's Version is required", name)
	}
	hub, err := v.Hub.Resource()
	if err != nil {
		return nil, err
	}
	out := []rest.Resource{hub}
	conv := rest.ConversionFuncs{Hub: v.Hub.Version, Funcs: map[string]rest.VersionConversion{}}
	for i, s := range v.Spokes {
		if s.resource == nil {
			return nil, fmt.Errorf("typed: versions of %s: Spokes[%d] was not made by SpokeOf", name, i)
		}
		if s.version == "" {
			return nil, fmt.Errorf("typed: versions of %s: Spokes[%d] has no Version", name, i)
		}
		if s.conv.ToHub == nil || s.conv.FromHub == nil {
			return nil, fmt.Errorf("typed: versions of %s: version %s needs both conversion functions", name, s.version)
		}
		if _, dup := conv.Funcs[s.version]; dup || s.version == v.Hub.Version {
			return nil, fmt.Errorf("typed: versions of %s: version %s is declared twice", name, s.version)
		}
		r, err := s.resource()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		conv.Funcs[s.version] = s.conv
	}
	storageVersion := v.StorageVersion
	if storageVersion == "" {
		storageVersion = v.Hub.Version
	}
	found := false
	for i := range out {
		if err := v.share(&out[i]); err != nil {
			return nil, err
		}
		if out[i].Version == storageVersion {
			out[i].StorageVersion, out[i].Conversion, found = true, conv, true
		}
	}
	if !found {
		return nil, fmt.Errorf("typed: versions of %s: StorageVersion %s is not one of the versions", name, storageVersion)
	}
	slices.SortStableFunc(out, func(a, b rest.Resource) int { return rest.CompareVersions(b.Version, a.Version) })
	return out, nil
}

// share sets on r the fields the versions share; a version's own value
// must be empty or the same.
func (v Versions[Hub]) share(r *rest.Resource) error {
	bad := func(what string) error {
		return fmt.Errorf("typed: versions of %s: version %s sets %s differently; set it once, in Versions", v.Plural+"."+v.Group, r.Version, what)
	}
	for _, f := range []struct {
		what      string
		own, want *string
	}{{"Group", &r.Group, &v.Group}, {"Plural", &r.Plural, &v.Plural}, {"Kind", &r.Kind, &v.Kind}, {"Singular", &r.Singular, &v.Singular}} {
		if *f.own != "" && *f.own != *f.want {
			return bad(f.what)
		}
		*f.own = *f.want
	}
	if r.Namespaced && !v.Namespaced {
		return bad("Namespaced")
	}
	r.Namespaced = v.Namespaced
	for _, f := range []struct {
		what      string
		own, want *[]string
	}{{"ShortNames", &r.ShortNames, &v.ShortNames}, {"Categories", &r.Categories, &v.Categories}} {
		if len(*f.own) > 0 && !slices.Equal(*f.own, *f.want) {
			return bad(f.what)
		}
		*f.own = *f.want
	}
	if r.Storage != nil {
		return fmt.Errorf("typed: versions of %s: version %s sets Storage; set it once, in Versions", v.Plural+"."+v.Group, r.Version)
	}
	r.Storage = v.Storage
	return nil
}
