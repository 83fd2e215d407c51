// This file holds the Evaluator: a Policy compiled once, so deciding a
// request's level is a walk over precomputed matchers with no allocation.

package audit

import (
	"slices"
	"strings"

	"github.com/annexapi/annex/filters"
)

// stageMask is a set of stages.
type stageMask uint8

func stageBit(s Stage) stageMask {
	switch s {
	case StageRequestReceived:
		return 1
	case StageResponseStarted:
		return 2
	case StageResponseComplete:
		return 4
	case StagePanic:
		return 8
	}
	return 0
}

func maskOf(stages []Stage) stageMask {
	var m stageMask
	for _, s := range stages {
		m |= stageBit(s)
	}
	return m
}

// RequestConfig is what the policy decided for one request.
type RequestConfig struct {
	// Level is the level the request is recorded at.
	Level Level
	// OmitManagedFields drops metadata.managedFields from recorded objects.
	OmitManagedFields bool
	omit              stageMask
}

// Omits reports whether events of stage s are not written.
func (c RequestConfig) Omits(s Stage) bool { return c.omit&stageBit(s) != 0 }

// Evaluator decides the RequestConfig of requests by a compiled Policy. It
// is immutable and safe for concurrent use.
type Evaluator struct {
	rules       []rule
	defaultOmit stageMask
	defaultOMF  bool
}

type rule struct {
	cfg             RequestConfig
	users           []string
	groups          []string
	verbs           []string
	namespaces      []string
	resources       []groupMatcher
	nonResourceURLs []string
	resourceRule    bool // has resources or namespaces
}

type groupMatcher struct {
	group    string
	all      bool // no resources listed
	patterns []resourcePattern
	names    []string
}

// resourcePattern is one entry of GroupResources.Resources, pre-split.
type resourcePattern struct {
	any      bool   // "*"
	resource string // "res" of "res", "res/sub" or "res/*"
	sub      string // "sub" of "res/sub" or "*/sub"
	anySub   bool   // "res/*"
	anyRes   bool   // "*/sub"
}

// NewEvaluator validates p and compiles it. p is not retained.
func NewEvaluator(p *Policy) (*Evaluator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	e := &Evaluator{defaultOmit: maskOf(p.OmitStages), defaultOMF: p.OmitManagedFields}
	for _, r := range p.Rules {
		c := rule{
			cfg: RequestConfig{
				Level:             r.Level,
				OmitManagedFields: p.OmitManagedFields,
				omit:              e.defaultOmit | maskOf(r.OmitStages),
			},
			users:           slices.Clone(r.Users),
			groups:          slices.Clone(r.UserGroups),
			verbs:           slices.Clone(r.Verbs),
			namespaces:      slices.Clone(r.Namespaces),
			nonResourceURLs: slices.Clone(r.NonResourceURLs),
			resourceRule:    len(r.Resources) > 0 || len(r.Namespaces) > 0,
		}
		if r.OmitManagedFields != nil {
			c.cfg.OmitManagedFields = *r.OmitManagedFields
		}
		for _, gr := range r.Resources {
			g := groupMatcher{group: gr.Group, all: len(gr.Resources) == 0, names: slices.Clone(gr.ResourceNames)}
			for _, res := range gr.Resources {
				g.patterns = append(g.patterns, compilePattern(res))
			}
			c.resources = append(c.resources, g)
		}
		e.rules = append(e.rules, c)
	}
	return e, nil
}

func compilePattern(res string) resourcePattern {
	if res == "*" {
		return resourcePattern{any: true}
	}
	r, sub, ok := strings.Cut(res, "/")
	switch {
	case !ok:
		return resourcePattern{resource: res}
	case r == "*":
		return resourcePattern{anyRes: true, sub: sub}
	case sub == "*":
		return resourcePattern{anySub: true, resource: r}
	}
	return resourcePattern{resource: r, sub: sub}
}

// Evaluate returns the config of the first rule that matches a request by
// user (the authenticated one, before impersonation) with info, or level
// None. A nil Evaluator audits nothing.
func (e *Evaluator) Evaluate(user *filters.User, info *filters.RequestInfo) RequestConfig {
	if e == nil {
		return RequestConfig{Level: LevelNone}
	}
	for i := range e.rules {
		if e.rules[i].matches(user, info) {
			return e.rules[i].cfg
		}
	}
	return RequestConfig{Level: LevelNone, OmitManagedFields: e.defaultOMF, omit: e.defaultOmit}
}

func (r *rule) matches(user *filters.User, info *filters.RequestInfo) bool {
	if len(r.users) > 0 && (user == nil || !slices.Contains(r.users, user.Name)) {
		return false
	}
	if len(r.groups) > 0 {
		if user == nil || !slices.ContainsFunc(user.Groups, func(g string) bool { return slices.Contains(r.groups, g) }) {
			return false
		}
	}
	if len(r.verbs) > 0 && !slices.Contains(r.verbs, info.Verb) {
		return false
	}
	if r.resourceRule {
		return r.matchesResource(info)
	}
	if len(r.nonResourceURLs) > 0 {
		if info.IsResourceRequest {
			return false
		}
		for _, spec := range r.nonResourceURLs {
			if pathMatches(info.Path, spec) {
				return true
			}
		}
		return false
	}
	return true
}

func pathMatches(path, spec string) bool {
	if spec == "*" || spec == path {
		return true
	}
	return strings.HasSuffix(spec, "*") && strings.HasPrefix(path, strings.TrimRight(spec, "*"))
}

func (r *rule) matchesResource(info *filters.RequestInfo) bool {
	if !info.IsResourceRequest {
		return false
	}
	if len(r.namespaces) > 0 && !slices.Contains(r.namespaces, info.Namespace) {
		return false
	}
	if len(r.resources) == 0 {
		return true
	}
	for i := range r.resources {
		g := &r.resources[i]
		if g.group != info.APIGroup {
			continue
		}
		if g.all {
			return true
		}
		if len(g.names) > 0 && !slices.Contains(g.names, info.Name) {
			continue
		}
		for _, p := range g.patterns {
			if p.matches(info.Resource, info.Subresource) {
				return true
			}
		}
	}
	return false
}

// matches follows Kubernetes exactly, including that "res/*" also matches
// res itself.
func (p resourcePattern) matches(resource, sub string) bool {
	switch {
	case p.any:
		return true
	case p.anyRes:
		return sub != "" && sub == p.sub
	case p.anySub:
		return resource == p.resource
	}
	return resource == p.resource && sub == p.sub
}
