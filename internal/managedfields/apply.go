// This file holds Apply: a server-side apply patch merged into the live
// object, with kube's checks, conflicts, and the client-side apply upgrade
// and sync for kubectl.

package managedfields

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/annexapi/annex/meta"
)

// Apply merges the apply configuration patch into live (nil: the object
// does not exist yet) as manager's, through subresource ("" or "status"),
// and returns the object to store, its metadata.managedFields set. force
// takes over the fields of other managers instead of conflicting. Errors
// are *meta.Status: 400 for a patch of another kind or version or with
// managedFields, or one the schema cannot type; 409 for conflicts.
func (m *Manager) Apply(live, patch map[string]any, manager, subresource string, force bool) (_ map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = meta.NewInternalError(fmt.Errorf("managedfields: %v", p))
		}
	}()
	apiVersion, _ := patch["apiVersion"].(string)
	kind, _ := patch["kind"].(string)
	if apiVersion != m.cfg.APIVersion || kind != m.cfg.Kind {
		group, version := "", apiVersion
		if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
			group, version = apiVersion[:i], apiVersion[i+1:]
		}
		return nil, meta.NewBadRequest(fmt.Sprintf("invalid object type: %s/%s, Kind=%s", group, version, kind))
	}
	if live == nil {
		live = map[string]any{}
	}
	mf, err := m.sets.decode(live)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("failed to decode managed fields: %v", err))
	}
	live = withoutManagedFields(live)
	obj, err := m.applyUpgrading(live, patch, &mf, manager, subresource, force)
	if err != nil {
		var conflicts merge.Conflicts
		if errors.As(err, &conflicts) {
			return nil, conflictStatus(conflicts)
		}
		return nil, err
	}
	if manager == kubectlManager && lastApplied(live) != "" {
		setLastApplied(obj, patch)
	}
	if err := m.sets.encode(obj, mf); err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("failed to encode managed fields: %v", err))
	}
	return obj, nil
}

// applyUpgrading is kube's lastAppliedManager: when kubectl's apply
// conflicts only on fields its client-side apply last set (the
// last-applied-configuration annotation, where the live object still has
// those values), it is forced: the server-side apply takes them over.
func (m *Manager) applyUpgrading(live, patch map[string]any, mf *managed, manager, subresource string, force bool) (map[string]any, error) {
	obj, err := m.applySkipping(live, patch, mf, manager, subresource, force)
	var conflicts merge.Conflicts
	if manager != kubectlManager || err == nil || !errors.As(err, &conflicts) {
		return obj, err
	}
	allowed, aerr := m.allowedFromLastApplied(live)
	if aerr != nil {
		return obj, err
	}
	conflictSet := fieldpath.NewSet()
	for _, c := range conflicts {
		conflictSet.Insert(c.Path)
	}
	if !conflictSet.Difference(allowed).Empty() {
		var rest merge.Conflicts
		for _, c := range conflicts {
			if !allowed.Has(c.Path) {
				rest = append(rest, c)
			}
		}
		return nil, rest
	}
	return m.applySkipping(live, patch, mf, manager, subresource, true)
}

// allowedFromLastApplied is the set of fields the last-applied annotation
// names whose values the live object still has.
func (m *Manager) allowedFromLastApplied(live map[string]any) (*fieldpath.Set, error) {
	la := lastApplied(live)
	if la == "" {
		return nil, errors.New("no last applied annotation")
	}
	liveTV := m.storedTyped(live)
	dec := json.NewDecoder(strings.NewReader(la))
	dec.UseNumber()
	var laObj map[string]any
	if err := dec.Decode(&laObj); err != nil {
		return nil, err
	}
	if av, _ := laObj["apiVersion"].(string); av != m.cfg.APIVersion {
		return nil, fmt.Errorf("expected version of last applied to match live object '%s', but got '%s'", m.cfg.APIVersion, av)
	}
	laTV, err := m.typedOf(laObj)
	if err != nil {
		return nil, err
	}
	set, err := laTV.ToFieldSet()
	if err != nil {
		return nil, err
	}
	cmp, err := laTV.Compare(liveTV)
	if err != nil {
		return nil, err
	}
	return set.Difference(cmp.Modified).Difference(cmp.Added).Difference(cmp.Removed), nil
}

// applySkipping is kube's skipNonAppliedManager for an apply: an object
// with no managed fields gets them first, all owned by
// "before-first-apply", so that the apply conflicts with what was there.
func (m *Manager) applySkipping(live, patch map[string]any, mf *managed, manager, subresource string, force bool) (map[string]any, error) {
	if len(mf.fields) == 0 {
		emptyTV, err := m.typedOf(map[string]any{})
		if err != nil {
			return nil, err
		}
		liveTV := m.storedTyped(live)
		if err := m.updateManaged(emptyTV, liveTV, mf, beforeFirstApply, subresource); err != nil {
			return nil, meta.NewInternalError(fmt.Errorf("failed to create manager for existing fields: %v", err))
		}
	}
	obj, err := m.applyMerge(live, patch, mf, manager, subresource, force)
	if err != nil {
		return nil, err
	}
	return obj, m.capUpdateManagers(mf)
}

// applyMerge is the structured merge of the apply, with its entry's time
// and the strip of server-owned metadata.
func (m *Manager) applyMerge(live, patch map[string]any, mf *managed, manager, subresource string, force bool) (map[string]any, error) {
	if pmd, ok := patch["metadata"].(map[string]any); ok {
		if v, has := pmd["managedFields"]; has && v != nil {
			return nil, meta.NewBadRequest("metadata.managedFields must be nil")
		}
	}
	patchTV, err := m.typedOf(patch)
	if err != nil {
		// kube-apiserver answers 500 here (kubernetes/kubernetes#139253);
		// the patch is the client's mistake: 400.
		return nil, meta.NewBadRequest(fmt.Sprintf("failed to create typed patch object (%s): %v", m.describe(patch), err))
	}
	liveTV := m.storedTyped(live)
	id := m.identifier(manager, meta.ManagedFieldsOperationApply, subresource)
	newTV, fields, err := m.updater(subresource).Apply(liveTV, patchTV, m.gv, mf.fields, id, force)
	if err != nil {
		return nil, err
	}
	mf.fields = fields
	var obj map[string]any
	if newTV == nil {
		obj = deepCopy(live).(map[string]any)
	} else {
		if obj, err = jsonNumbers(newTV.AsValue().Unstructured()); err != nil {
			return nil, meta.NewInternalError(err)
		}
		t := meta.NewTime(m.now().UTC())
		mf.times[id] = &t
	}
	m.strip(mf, id)
	return obj, nil
}

// describe is kube's objectGVKNN: namespace/name; group/version, Kind=kind.
func (m *Manager) describe(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group, version := "", av
	if i := strings.LastIndex(av, "/"); i >= 0 {
		group, version = av[:i], av[i+1:]
	}
	return fmt.Sprintf("%s/%s; %s/%s, Kind=%s", ns, name, group, version, kind)
}

func lastApplied(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	s, _ := ann[LastAppliedAnnotation].(string)
	return s
}

// setLastApplied is kube's lastAppliedUpdater: after kubectl's server-side
// apply to an object that has a last-applied annotation, the annotation
// becomes the applied configuration (without the annotation), so that a
// later client-side apply sees it; dropped when the annotations would grow
// beyond their limit.
func setLastApplied(obj, patch map[string]any) {
	cfg := deepCopy(patch).(map[string]any)
	if md, ok := cfg["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, LastAppliedAnnotation)
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[LastAppliedAnnotation] = string(b) + "\n"
	total := 0
	for k, v := range ann {
		s, _ := v.(string)
		total += len(k) + len(s)
	}
	if total > maxAnnotationBytes {
		delete(ann, LastAppliedAnnotation)
	}
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// Merge merges an apply configuration into obj by the schema, as a
// MutatingAdmissionPolicy's ApplyConfiguration merges in kube-apiserver
// (structured-merge-diff's merge: associative lists by key, atomic lists
// and maps replaced, granular maps merged), and returns the new object
// (obj is unchanged, and keeps its managedFields). The configuration must
// not set kind or apiVersion. Both are typed and checked against the schema
// either way; a configuration that only sets scalars through granular maps
// (canSetFields) is then set into the copy of obj without structured-merge-
// diff's walk of the whole object, to the same result.
func (m *Manager) Merge(obj, ac map[string]any) (_ map[string]any, err error) {
	defer recovered(&err)
	if _, has := ac["kind"]; has {
		return nil, errors.New("invalid ApplyConfiguration: kind and apiVersion must not be set")
	}
	if _, has := ac["apiVersion"]; has {
		return nil, errors.New("invalid ApplyConfiguration: kind and apiVersion must not be set")
	}
	patch := smdObject(ac)
	patchTV, err := m.typ.FromUnstructured(patch)
	if err != nil {
		return nil, fmt.Errorf("invalid ApplyConfiguration: %v", err)
	}
	live := smdObject(obj) // a copy of our own: setFields may change it
	liveTV, err := m.typ.FromUnstructured(live)
	if err != nil {
		return nil, err
	}
	var merged any = live
	if m.typ.Schema != nil && canSetFields(m.typ.Schema, m.typ.TypeRef, live, patch) {
		setFields(live, patch)
	} else {
		mv, err := liveTV.Merge(patchTV)
		if err != nil {
			return nil, err
		}
		merged = mv.AsValue().Unstructured()
	}
	out, err := jsonNumbers(merged)
	if err != nil {
		return nil, err
	}
	keepManagedFields(obj, out)
	return out, nil
}

// keepManagedFields sets obj's managedFields, if it has any, into out.
func keepManagedFields(obj, out map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		if v, has := md["managedFields"]; has {
			omd, _ := out["metadata"].(map[string]any)
			if omd == nil {
				omd = map[string]any{}
				out["metadata"] = omd
			}
			omd["managedFields"] = v
		}
	}
}

// canSetFields reports whether merging the apply configuration patch into
// live (both typed-checked, in structured-merge-diff's form) is setting
// patch's scalars into live: every map of patch is, in the schema at its
// path, a granular map (a struct or a map whose keys merge one by one, not
// an atomic one), live's value there is a map too (or absent), and patch
// holds no list and no null. structured-merge-diff's merge then keeps
// every field of live that patch does not name, and takes patch's value
// for every one it does, which setFields does without walking live. An
// apply configuration that sets a label or an annotation, the common
// mutating admission policy, is such a patch.
func canSetFields(s *smdschema.Schema, tr smdschema.TypeRef, live, patch map[string]any) bool {
	atom, ok := s.Resolve(tr)
	if !ok || atom.Map == nil || atom.Map.ElementRelationship == smdschema.Atomic {
		return false
	}
	for k, v := range patch {
		lv, has := live[k]
		switch v := v.(type) {
		case nil, []any:
			return false
		case map[string]any:
			ft := atom.Map.ElementType
			if f, ok := atom.Map.FindField(k); ok {
				ft = f.Type
			}
			lm, ok := lv.(map[string]any)
			if !has {
				lm, ok = map[string]any{}, true // patch's map goes in as it is: checked all the same
			}
			if !ok || !canSetFields(s, ft, lm, v) {
				return false
			}
		default: // a scalar replaces a scalar; over a map or a list, the merge decides
			switch lv.(type) {
			case map[string]any, []any:
				return false
			}
		}
	}
	return true
}

// setFields sets patch's fields into live, recursing into the maps both
// have (canSetFields said which).
func setFields(live, patch map[string]any) {
	for k, v := range patch {
		if pm, ok := v.(map[string]any); ok {
			if lm, ok := live[k].(map[string]any); ok {
				setFields(lm, pm)
				continue
			}
		}
		live[k] = v
	}
}

// jsonNumbers turns a merged value into decoded JSON with json.Number
// numbers, the form the rest of a write works on (smdValue's inverse), in
// new maps and slices.
func jsonNumbers(v any) (map[string]any, error) {
	out, ok := jsonValue(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("merged object is a %T", v)
	}
	return out, nil
}

// jsonValue is smdValue's inverse: int64 and float64 back to json.Number.
func jsonValue(v any) any {
	return copyLeaves(v, func(v any) any {
		switch v := v.(type) {
		case int64:
			return json.Number(strconv.FormatInt(v, 10))
		case float64:
			b, err := json.Marshal(v) // encoding/json's float form
			if err != nil {
				return v
			}
			return json.Number(b)
		}
		return v
	})
}
