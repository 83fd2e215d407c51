// This file holds what policies and webhooks share to decide whether a
// request concerns them: rules, label selectors, namespace lookups, and the
// CEL `request` object.

package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/annexapi/annex/meta"
)

// LabelSelector is metav1.LabelSelector.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one matchExpressions entry (In, NotIn,
// Exists, DoesNotExist).
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Matches reports whether labels satisfy the selector; a nil or empty
// selector matches everything.
func (s *LabelSelector) Matches(labels map[string]string) (bool, error) {
	if s == nil {
		return true, nil
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false, nil
		}
	}
	for _, r := range s.MatchExpressions {
		v, has := labels[r.Key]
		switch r.Operator {
		case "In":
			if !has || !slices.Contains(r.Values, v) {
				return false, nil
			}
		case "NotIn":
			if has && slices.Contains(r.Values, v) {
				return false, nil
			}
		case "Exists":
			if !has {
				return false, nil
			}
		case "DoesNotExist":
			if has {
				return false, nil
			}
		default:
			return false, fmt.Errorf("%q is not a valid label selector operator", r.Operator)
		}
	}
	return true, nil
}

// validate checks the selector as the API server validates a
// metav1.LabelSelector in a policy, binding or webhook configuration, and
// returns its first problem in kube's words, the field named from path.
func (s *LabelSelector) validate(path string) error {
	if s == nil {
		return nil
	}
	for _, k := range sortedKeys(s.MatchLabels) {
		if msgs := meta.IsQualifiedName(k); len(msgs) > 0 {
			return fmt.Errorf("%s.matchLabels: Invalid value: %q: %s", path, k, strings.Join(msgs, "; "))
		}
		if msgs := meta.IsValidLabelValue(s.MatchLabels[k]); len(msgs) > 0 {
			return fmt.Errorf("%s.matchLabels: Invalid value: %q: %s", path, s.MatchLabels[k], strings.Join(msgs, "; "))
		}
	}
	for i, r := range s.MatchExpressions {
		at := fmt.Sprintf("%s.matchExpressions[%d]", path, i)
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				return fmt.Errorf("%s.values: Required value: must be specified when `operator` is 'In' or 'NotIn'", at)
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) > 0 {
				return fmt.Errorf("%s.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'", at)
			}
		default:
			return fmt.Errorf("%s.operator: Invalid value: %q: not a valid selector operator", at, r.Operator)
		}
		if msgs := meta.IsQualifiedName(r.Key); len(msgs) > 0 {
			return fmt.Errorf("%s.key: Invalid value: %q: %s", at, r.Key, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// validateSelectors checks the selectors of a MatchResources at path.
func (m *MatchResources) validateSelectors(path string) error {
	if m == nil {
		return nil
	}
	if err := m.NamespaceSelector.validate(path + ".namespaceSelector"); err != nil {
		return err
	}
	return m.ObjectSelector.validate(path + ".objectSelector")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Rule is a RuleWithOperations (webhooks) or NamedRuleWithOperations
// (policies: with ResourceNames).
type Rule struct {
	Operations    []string `json:"operations,omitempty"`
	APIGroups     []string `json:"apiGroups,omitempty"`
	APIVersions   []string `json:"apiVersions,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	Scope         *string  `json:"scope,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// matchedVersion returns the version at which matches holds: a's own, or,
// unless policy is Exact, the first other of a.Versions (kube's matchPolicy
// Equivalent, the default): the request is then admitted as converted to
// that version (Attributes.AtVersion).
func matchedVersion(a *Attributes, policy *string, matches func(*Attributes) bool) (string, bool) {
	if matches(a) {
		return a.Version, true
	}
	if (policy != nil && *policy == "Exact") || a.Convert == nil {
		return "", false
	}
	b := *a
	for _, v := range a.Versions {
		if v == a.Version {
			continue
		}
		b.Version = v
		if matches(&b) {
			return v, true
		}
	}
	return "", false
}

func matchAny(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// Matches reports whether the rule covers the request.
func (r *Rule) Matches(a *Attributes) bool {
	if !matchAny(r.Operations, a.Operation) || !matchAny(r.APIGroups, a.Group) || !matchAny(r.APIVersions, a.Version) {
		return false
	}
	ok := false
	for _, res := range r.Resources {
		name, sub, _ := strings.Cut(res, "/")
		if (name == "*" || name == a.Resource) && ((sub == "" && a.Subresource == "") || sub == "*" || (sub != "" && sub == a.Subresource)) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if r.Scope != nil {
		switch *r.Scope {
		case "Cluster":
			if a.Namespace != "" {
				return false
			}
		case "Namespaced":
			if a.Namespace == "" {
				return false
			}
		}
	}
	if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, a.ObjectName()) {
		return false
	}
	return true
}

// NamespaceGetter returns a namespace object (as decoded JSON), for
// namespaceSelector, namespaceObject and namespace lifecycle. A namespace
// that does not exist is (nil, nil). It must be safe for concurrent use.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (map[string]any, error)
}

// NamespaceGetterFunc adapts a function to NamespaceGetter.
type NamespaceGetterFunc func(ctx context.Context, name string) (map[string]any, error)

// GetNamespace calls f.
func (f NamespaceGetterFunc) GetNamespace(ctx context.Context, name string) (map[string]any, error) {
	return f(ctx, name)
}

var _ NamespaceGetter = NamespaceGetterFunc(nil)

func labelsOf(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	raw, _ := md["labels"].(map[string]any)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// matchSelectors applies namespaceSelector and objectSelector as k8s does:
// a cluster-scoped object always matches the namespace selector; the object
// selector matches if the new or the old object matches.
func matchSelectors(ctx context.Context, nsSel, objSel *LabelSelector, a *Attributes, ns NamespaceGetter) (bool, error) {
	if nsSel != nil && (len(nsSel.MatchLabels) > 0 || len(nsSel.MatchExpressions) > 0) && a.Namespace != "" {
		var labels map[string]string
		if ns != nil {
			obj, err := ns.GetNamespace(ctx, a.Namespace)
			if err != nil {
				return false, err
			}
			labels = labelsOf(obj)
		}
		ok, err := nsSel.Matches(labels)
		if err != nil || !ok {
			return false, err
		}
	}
	if objSel != nil && (len(objSel.MatchLabels) > 0 || len(objSel.MatchExpressions) > 0) {
		for _, o := range []map[string]any{a.Object, a.OldObject} {
			if o == nil {
				continue
			}
			ok, err := objSel.Matches(labelsOf(o))
			if err != nil {
				return false, err
			}
			if ok {
				return true, nil
			}
		}
		return false, nil
	}
	return true, nil
}

// userInfo is authentication/v1 UserInfo.
func userInfo(a *Attributes) map[string]any {
	u := map[string]any{"username": ""}
	if a.User != nil {
		u["username"] = a.User.Name
		if a.User.UID != "" {
			u["uid"] = a.User.UID
		}
		if len(a.User.Groups) > 0 {
			u["groups"] = a.User.Groups
		}
		if len(a.User.Extra) > 0 {
			u["extra"] = a.User.Extra
		}
	}
	return u
}

// requestObject is the AdmissionRequest as CEL sees it (`request`) and,
// with uid, object and oldObject, as webhooks receive it.
func requestObject(a *Attributes, uid string) map[string]any {
	gvk := map[string]any{"group": a.Group, "version": a.Version, "kind": a.Kind}
	gvr := map[string]any{"group": a.Group, "version": a.Version, "resource": a.Resource}
	reqGVK, reqGVR := gvk, gvr
	if v := a.RequestVersion; v != "" && v != a.Version {
		// Converted for a rule of another version (matchPolicy Equivalent).
		reqGVK = map[string]any{"group": a.Group, "version": v, "kind": a.Kind}
		reqGVR = map[string]any{"group": a.Group, "version": v, "resource": a.Resource}
	}
	r := map[string]any{
		"kind": gvk, "resource": gvr, "requestKind": reqGVK, "requestResource": reqGVR,
		"name": a.ObjectName(), "namespace": a.Namespace, "operation": a.Operation,
		"userInfo": userInfo(a), "dryRun": a.DryRun,
	}
	if uid != "" {
		r["uid"] = uid
	}
	if a.Subresource != "" {
		r["subResource"] = a.Subresource
		r["requestSubResource"] = a.Subresource
	}
	if a.Options != nil {
		r["options"] = a.Options
	}
	return r
}
