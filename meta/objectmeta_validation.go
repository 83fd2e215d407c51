// This file validates ObjectMeta as k8s.io/apimachinery release-1.32 does
// (pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor and
// ValidateObjectMetaAccessorUpdate), returning causes ready for NewInvalid.

package meta

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// ValidateObjectMeta checks the metadata of an object being created: name or
// generateName (with nameFn; nil means NameIsDNSSubdomain), namespace
// (required and a DNS label when namespaced, forbidden otherwise), generation,
// labels, annotations (keys and 256 KiB in total), owner references,
// finalizers and managed fields. Each problem is one cause with Field
// "metadata.<field>" and the Message k8s gives (without the field).
func ValidateObjectMeta(m *ObjectMeta, namespaced bool, nameFn func(name string, prefix bool) []string) []StatusCause {
	if nameFn == nil {
		nameFn = NameIsDNSSubdomain
	}
	var errs []fieldError
	if m.GenerateName != "" {
		for _, msg := range nameFn(m.GenerateName, true) {
			errs = append(errs, invalidErr("metadata.generateName", m.GenerateName, msg))
		}
	}
	if m.Name == "" {
		errs = append(errs, requiredErr("metadata.name", "name or generateName is required"))
	} else {
		for _, msg := range nameFn(m.Name, false) {
			errs = append(errs, invalidErr("metadata.name", m.Name, msg))
		}
	}
	if namespaced {
		if m.Namespace == "" {
			errs = append(errs, requiredErr("metadata.namespace", ""))
		} else {
			for _, msg := range NameIsDNSLabel(m.Namespace, false) {
				errs = append(errs, invalidErr("metadata.namespace", m.Namespace, msg))
			}
		}
	} else if m.Namespace != "" {
		errs = append(errs, forbiddenErr("metadata.namespace", "not allowed on this type"))
	}
	if m.Generation < 0 {
		errs = append(errs, invalidErr("metadata.generation", m.Generation, "must be greater than or equal to 0"))
	}
	errs = append(errs, validateCommonMeta(m)...)
	errs = append(errs, validateFinalizers(m.Finalizers)...)
	return causes(errs)
}

// ValidateObjectMetaUpdate checks the metadata of an update against the
// stored object: no new finalizers while deleting, resourceVersion present,
// generation not decremented, name, namespace, uid, creationTimestamp,
// deletionTimestamp and deletionGracePeriodSeconds unchanged, and labels,
// annotations, owner references and managed fields valid.
func ValidateObjectMetaUpdate(newMeta, oldMeta *ObjectMeta) []StatusCause {
	var errs []fieldError
	if oldMeta.DeletionTimestamp != nil {
		var extra []string
		for _, f := range newMeta.Finalizers {
			if !slices.Contains(oldMeta.Finalizers, f) && !slices.Contains(extra, f) {
				extra = append(extra, f)
			}
		}
		if len(extra) > 0 {
			slices.Sort(extra)
			errs = append(errs, forbiddenErr("metadata.finalizers",
				fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", extra)))
		}
	}
	if newMeta.ResourceVersion == "" {
		errs = append(errs, invalidErr("metadata.resourceVersion", "", "must be specified for an update"))
	}
	if newMeta.Generation < oldMeta.Generation {
		errs = append(errs, invalidErr("metadata.generation", newMeta.Generation, "must not be decremented"))
	}
	const immutable = "field is immutable"
	if newMeta.Name != oldMeta.Name {
		errs = append(errs, invalidErr("metadata.name", newMeta.Name, immutable))
	}
	if newMeta.Namespace != oldMeta.Namespace {
		errs = append(errs, invalidErr("metadata.namespace", newMeta.Namespace, immutable))
	}
	if newMeta.UID != oldMeta.UID {
		errs = append(errs, invalidErr("metadata.uid", newMeta.UID, immutable))
	}
	if !newMeta.CreationTimestamp.Equal(oldMeta.CreationTimestamp.Time) {
		errs = append(errs, invalidErr("metadata.creationTimestamp", newMeta.CreationTimestamp.Time, immutable))
	}
	if !equalTimePtr(newMeta.DeletionTimestamp, oldMeta.DeletionTimestamp) {
		var v any
		if newMeta.DeletionTimestamp != nil {
			v = newMeta.DeletionTimestamp.Time
		}
		errs = append(errs, invalidErr("metadata.deletionTimestamp", v, immutable))
	}
	if !equalInt64Ptr(newMeta.DeletionGracePeriodSeconds, oldMeta.DeletionGracePeriodSeconds) {
		errs = append(errs, invalidErr("metadata.deletionGracePeriodSeconds", newMeta.DeletionGracePeriodSeconds, immutable))
	}
	errs = append(errs, validateCommonMeta(newMeta)...)
	return causes(errs)
}

func equalTimePtr(a, b *Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b.Time)
}

func equalInt64Ptr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// validateCommonMeta checks labels, annotations, owner references and
// managed fields, in that order. Map keys are visited in sorted order so the
// causes are deterministic (k8s visits them in map order).
func validateCommonMeta(m *ObjectMeta) []fieldError {
	var errs []fieldError
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		for _, msg := range IsQualifiedName(k) {
			errs = append(errs, invalidErr("metadata.labels", k, msg))
		}
		v := m.Labels[k]
		for _, msg := range IsValidLabelValue(v) {
			errs = append(errs, invalidErr("metadata.labels", v, msg))
		}
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(m.Annotations)) {
		for _, msg := range IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, invalidErr("metadata.annotations", k, msg))
		}
		total += len(k) + len(m.Annotations[k])
	}
	if total > TotalAnnotationSizeLimitB {
		errs = append(errs, tooLongErr("metadata.annotations", TotalAnnotationSizeLimitB))
	}
	errs = append(errs, validateOwnerReferences(m.OwnerReferences)...)
	for i, mf := range m.ManagedFields {
		p := fmt.Sprintf("metadata.managedFields[%d]", i)
		if mf.Operation != ManagedFieldsOperationApply && mf.Operation != ManagedFieldsOperationUpdate {
			errs = append(errs, invalidErr(p+".operation", mf.Operation, "must be `Apply` or `Update`"))
		}
		if mf.FieldsType != "" && mf.FieldsType != FieldsTypeV1 {
			errs = append(errs, invalidErr(p+".fieldsType", mf.FieldsType, "must be `FieldsV1`"))
		}
		errs = append(errs, validateFieldManager(mf.Manager, p+".manager")...)
		if len(mf.Subresource) > MaxSubresourceNameLength {
			errs = append(errs, tooLongErr(p+".subresource", MaxSubresourceNameLength))
		}
	}
	return errs
}

func validateFieldManager(manager, field string) []fieldError {
	var errs []fieldError
	if len(manager) > FieldManagerMaxLength {
		errs = append(errs, tooLongErr(field, FieldManagerMaxLength))
	}
	for i, r := range manager {
		if !unicode.IsPrint(r) {
			errs = append(errs, invalidErr(field, manager, fmt.Sprintf("invalid character %#U (at position %d)", r, i)))
		}
	}
	return errs
}

// validateOwnerReferences follows validateOwnerReference: the field paths
// carry no index, as in k8s. A bad value that is a whole reference is printed
// in a k8s-like %#v form.
func validateOwnerReferences(refs []OwnerReference) []fieldError {
	var errs []fieldError
	const p = "metadata.ownerReferences"
	firstController := ""
	for _, ref := range refs {
		group, version, ok := splitAPIVersion(ref.APIVersion)
		if !ok {
			group, version = "", ""
		}
		if version == "" {
			errs = append(errs, invalidErr(p+".apiVersion", ref.APIVersion, "version must not be empty"))
		}
		if ref.Kind == "" {
			errs = append(errs, invalidErr(p+".kind", ref.Kind, "kind must not be empty"))
		}
		if ref.Name == "" {
			errs = append(errs, invalidErr(p+".name", ref.Name, "name must not be empty"))
		}
		if ref.UID == "" {
			errs = append(errs, invalidErr(p+".uid", ref.UID, "uid must not be empty"))
		}
		if group == "" && version == "v1" && ref.Kind == "Event" {
			errs = append(errs, invalidErr(p, ownerRefValue(ref), "/v1, Kind=Event is disallowed from being an owner"))
		}
		if ref.Controller != nil && *ref.Controller {
			cur := ref.Kind + "/" + ref.Name
			if firstController != "" {
				errs = append(errs, invalidErr(p, ownerRefsValue(refs),
					fmt.Sprintf("Only one reference can have Controller set to true. Found \"true\" in references for %v and %v", firstController, cur)))
			} else {
				firstController = cur
			}
		}
	}
	return errs
}

// splitAPIVersion splits "group/version" or "version"; ok is false for more
// than one slash, which k8s treats as an empty group version.
func splitAPIVersion(apiVersion string) (group, version string, ok bool) {
	switch n := strings.Count(apiVersion, "/"); {
	case apiVersion == "":
		return "", "", true
	case n == 0:
		return "", apiVersion, true
	case n == 1:
		i := strings.IndexByte(apiVersion, '/')
		return apiVersion[:i], apiVersion[i+1:], true
	}
	return "", "", false
}

// badValue is a pre-rendered bad value for formatBadValue (a fmt.Stringer).
type badValue string

func (b badValue) String() string { return string(b) }

func ownerRefValue(r OwnerReference) badValue {
	ptr := func(b *bool) string {
		if b == nil {
			return "(*bool)(nil)"
		}
		return fmt.Sprintf("(*bool)(%v)", *b)
	}
	return badValue(fmt.Sprintf("v1.OwnerReference{APIVersion:%q, Kind:%q, Name:%q, UID:%q, Controller:%s, BlockOwnerDeletion:%s}",
		r.APIVersion, r.Kind, r.Name, r.UID, ptr(r.Controller), ptr(r.BlockOwnerDeletion)))
}

func ownerRefsValue(refs []OwnerReference) badValue {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = string(ownerRefValue(r)) // %#v names each element's type
	}
	return badValue("[]v1.OwnerReference{" + strings.Join(parts, ", ") + "}")
}

func validateFinalizers(finalizers []string) []fieldError {
	var errs []fieldError
	orphan, foreground := false, false
	for _, f := range finalizers {
		for _, msg := range IsQualifiedName(f) {
			errs = append(errs, invalidErr("metadata.finalizers", f, msg))
		}
		orphan = orphan || f == FinalizerOrphanDependents
		foreground = foreground || f == FinalizerDeleteDependents
	}
	if orphan && foreground {
		errs = append(errs, invalidErr("metadata.finalizers", finalizers,
			fmt.Sprintf("finalizer %s and %s cannot be both set", FinalizerOrphanDependents, FinalizerDeleteDependents)))
	}
	return errs
}
