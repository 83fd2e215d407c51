// This file serves SelfSubjectRulesReview (kubectl auth can-i --list):
// the rules the requesting user has in a namespace, from the authorizers
// that can list them (RulesResolver). Behind kube-aggregator kubectl asks
// the cluster, which answers from its own RBAC; a standalone server answers
// itself.

package authz

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/review"
	"github.com/annexapi/annex/meta"
)

// SelfSubjectRulesReviewPath is where SelfSubjectRulesReviews are created.
const SelfSubjectRulesReviewPath = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"

// ResourceRule is one rule of a SelfSubjectRulesReview's status.
type ResourceRule struct {
	Verbs         []string `json:"verbs"`
	APIGroups     []string `json:"apiGroups,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// NonResourceRule is one non-resource rule of a SelfSubjectRulesReview's
// status.
type NonResourceRule struct {
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// Rules is what a RulesResolver lists. Incomplete means some authorizer
// may allow more than it lists.
type Rules struct {
	Resource    []ResourceRule
	NonResource []NonResourceRule
	Incomplete  bool
}

// RulesResolver is an optional interface of an Authorizer: the rules user
// has in namespace ("" for cluster-wide ones alone). RulesFor is called
// concurrently. An error means incomplete rules, with a reason.
type RulesResolver interface {
	RulesFor(ctx context.Context, user *filters.User, namespace string) (Rules, error)
}

var (
	_ RulesResolver = (*RBAC)(nil)
	_ RulesResolver = (*PrivilegedGroups)(nil)
	_ RulesResolver = (*AlwaysAllowPaths)(nil)
	_ RulesResolver = (*union)(nil)
	_ RulesResolver = (*Webhook)(nil)
)

// RulesFor lists the rules of the roles bound to user cluster-wide and in
// namespace.
func (r *RBAC) RulesFor(_ context.Context, user *filters.User, namespace string) (Rules, error) {
	var out Rules
	if user == nil {
		return out, nil
	}
	binds := r.clusterBinds
	if namespace != "" {
		binds = append(slices.Clip(binds), r.nsBinds[namespace]...)
	}
	for _, b := range binds {
		if !slices.ContainsFunc(b.subjects, func(s Subject) bool { return SubjectMatches(s, b.namespace, user.Name, user.Groups) }) {
			continue
		}
		ns := ""
		if b.ref.Kind == "Role" {
			ns = b.namespace
		}
		for _, rule := range r.roles[roleKey{ns, b.ref.Name}] {
			if len(rule.NonResourceURLs) > 0 {
				out.NonResource = append(out.NonResource, NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
				continue
			}
			out.Resource = append(out.Resource, ResourceRule{Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames})
		}
	}
	return out, nil
}

// RulesFor is everything for a user in a privileged group.
func (p *PrivilegedGroups) RulesFor(_ context.Context, user *filters.User, _ string) (Rules, error) {
	if user == nil || !slices.ContainsFunc(user.Groups, func(g string) bool { return slices.Contains(p.groups, g) }) {
		return Rules{}, nil
	}
	return Rules{Resource: []ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		NonResource: []NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}, nil
}

// RulesFor is every verb on the paths, for everyone.
func (a *AlwaysAllowPaths) RulesFor(context.Context, *filters.User, string) (Rules, error) {
	var urls []string
	for p := range a.exact {
		urls = append(urls, "/"+p)
	}
	for _, p := range a.prefixes {
		urls = append(urls, "/"+p+"*")
	}
	slices.Sort(urls)
	if len(urls) == 0 {
		return Rules{}, nil
	}
	return Rules{NonResource: []NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: urls}}}, nil
}

// RulesFor cannot list what the cluster allows: incomplete, as kube's
// webhook authorizer.
func (w *Webhook) RulesFor(context.Context, *filters.User, string) (Rules, error) {
	return Rules{Incomplete: true}, fmt.Errorf("webhook authorizer does not support user rule resolution")
}

// RulesFor joins the rules of the chain; an authorizer that cannot list its
// rules makes them incomplete.
func (u *union) RulesFor(ctx context.Context, user *filters.User, namespace string) (Rules, error) {
	var out Rules
	var errs []error
	for _, n := range u.chain {
		rr, ok := n.Authorizer.(RulesResolver)
		if !ok {
			out.Incomplete = true
			errs = append(errs, fmt.Errorf("%s does not list rules", n.Name))
			continue
		}
		r, err := rr.RulesFor(ctx, user, namespace)
		out.Resource, out.NonResource = append(out.Resource, r.Resource...), append(out.NonResource, r.NonResource...)
		out.Incomplete = out.Incomplete || r.Incomplete || err != nil
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return out, joinErrors(errs)
	}
	return out, nil
}

func joinErrors(errs []error) error {
	msg := ""
	for i, e := range errs {
		if i > 0 {
			msg += ", "
		}
		msg += e.Error()
	}
	return fmt.Errorf("%s", msg)
}

type selfSubjectRulesReview struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Namespace string `json:"namespace,omitempty"`
	} `json:"spec"`
	Status *rulesReviewStatus `json:"status,omitempty"`
}

type rulesReviewStatus struct {
	ResourceRules    []ResourceRule    `json:"resourceRules"`
	NonResourceRules []NonResourceRule `json:"nonResourceRules"`
	Incomplete       bool              `json:"incomplete"`
	EvaluationError  string            `json:"evaluationError,omitempty"`
}

// SelfSubjectRulesReviewHandler answers a SelfSubjectRulesReview
// (POST SelfSubjectRulesReviewPath, JSON): the rules the requesting user
// has in spec.namespace, from authorizer when it is a RulesResolver (else
// none, incomplete). It answers 201 with the review and its status, as kube.
func SelfSubjectRulesReviewHandler(authorizer Authorizer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var rv selfSubjectRulesReview
		proto, st := review.Read(r, &rv, "SelfSubjectRulesReview", "authorization.k8s.io/v1")
		if st == nil && proto != nil {
			// runtime.Unknown's raw (2) is the review, whose spec (2) has
			// the namespace (1).
			raw, err := protoField(proto, 2)
			var spec, ns []byte
			if err == nil {
				spec, err = protoField(raw, 2)
			}
			if err == nil {
				ns, err = protoField(spec, 1)
			}
			rv.Spec.Namespace = string(ns)
			if err != nil {
				st = meta.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
			}
		}
		if st != nil {
			filters.WriteStatus(w, st)
			return
		}
		user, _ := filters.UserFrom(r.Context())
		status := &rulesReviewStatus{ResourceRules: []ResourceRule{}, NonResourceRules: []NonResourceRule{}, Incomplete: true}
		if rr, ok := authorizer.(RulesResolver); ok {
			rules, err := rr.RulesFor(r.Context(), user, rv.Spec.Namespace)
			status.ResourceRules = append(status.ResourceRules, rules.Resource...)
			status.NonResourceRules = append(status.NonResourceRules, rules.NonResource...)
			status.Incomplete = rules.Incomplete
			if err != nil {
				status.EvaluationError = err.Error()
			}
		}
		rv.Status = status
		rv.Kind, rv.APIVersion = "SelfSubjectRulesReview", "authorization.k8s.io/v1"
		if rv.Metadata == nil {
			rv.Metadata = map[string]any{}
		}
		rv.Metadata["creationTimestamp"] = nil
		review.Write(w, rv)
	}
}
