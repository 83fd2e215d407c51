// This file holds the audit.k8s.io/v1 Policy, its loading from YAML or JSON
// (strict: unknown fields are refused) and its validation, as kube-apiserver
// loads --audit-policy-file.

package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Policy is an audit.k8s.io/v1 Policy: rules matched in order, the first
// match deciding the level of a request; no match means LevelNone.
type Policy struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	// Rules are tried in order; the first that matches decides.
	Rules []PolicyRule `json:"rules"`
	// OmitStages are never written, whatever the rule; unioned with each
	// rule's own.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields drops metadata.managedFields from recorded request
	// and response objects, unless a rule says otherwise.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule maps requests to a level. A request matches when it matches
// every non-empty field; an empty list matches anything.
type PolicyRule struct {
	Level Level `json:"level"`
	// Users are user names (the authenticated user, not an impersonated one).
	Users []string `json:"users,omitempty"`
	// UserGroups match a user in any of them.
	UserGroups []string `json:"userGroups,omitempty"`
	// Verbs are RequestInfo verbs (get, list, watch, create, ...).
	Verbs []string `json:"verbs,omitempty"`
	// Resources match resource requests; a rule with Resources or Namespaces
	// never matches a non-resource request.
	Resources []GroupResources `json:"resources,omitempty"`
	// Namespaces match resource requests in them; "" is cluster scope.
	Namespaces []string `json:"namespaces,omitempty"`
	// NonResourceURLs are paths ("/metrics"), "*", or prefixes ending in "*"
	// ("/healthz*"); a rule with them never matches a resource request.
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
	// OmitStages are stages not written for requests this rule matches.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields, when set, overrides the policy's.
	OmitManagedFields *bool `json:"omitManagedFields,omitempty"`
}

// GroupResources selects resources of one API group.
type GroupResources struct {
	// Group is the API group, "" for the core group (no wildcard).
	Group string `json:"group,omitempty"`
	// Resources are "res", "res/sub", "*" (everything, subresources too),
	// "res/*" (res and all its subresources) or "*/sub". Empty means all.
	Resources []string `json:"resources,omitempty"`
	// ResourceNames, when set, must contain the request's object name.
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// LoadPolicyFile reads and validates the policy file at path
// (--audit-policy-file).
func LoadPolicyFile(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return p, nil
}

// ParsePolicy decodes a policy from YAML or JSON, refusing unknown fields,
// and validates it as kube-apiserver does: apiVersion audit.k8s.io/v1, kind
// Policy, at least one rule, known levels and stages, group names that are
// DNS subdomains, resourceNames only with resources, non-resource URLs that
// start with "/" and have "*" only at the end, and no rule with both
// resources and non-resource URLs.
func ParsePolicy(data []byte) (*Policy, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty policy", ErrInvalidPolicy)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	// Aliases make a small file a large value (each use a copy when it is
	// turned into JSON below): refuse what expands past maxPolicyNodes.
	if expandsPast(&root, maxPolicyNodes) {
		return nil, fmt.Errorf("%w: the document expands to more than %d YAML nodes (through aliases)", ErrInvalidPolicy, maxPolicyNodes)
	}
	var doc any
	if err := root.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("%w: more than one YAML document", ErrInvalidPolicy)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	var p Policy
	jd := json.NewDecoder(bytes.NewReader(js))
	jd.DisallowUnknownFields()
	if err := jd.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// maxPolicyNodes bounds a policy document's size with its aliases expanded:
// kube's largest published policies have a few hundred nodes.
const maxPolicyNodes = 100000

// expandsPast reports whether n, with every alias expanded, has more than
// limit nodes; it stops counting once past it.
func expandsPast(n *yaml.Node, limit int) bool {
	count := 0
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		count++
		if count > limit {
			return true
		}
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			return walk(n.Alias)
		}
		for _, c := range n.Content {
			if walk(c) {
				return true
			}
		}
		return false
	}
	return walk(n)
}

// Validate returns every problem with p, joined, each wrapping
// ErrInvalidPolicy.
func (p *Policy) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidPolicy}, args...)...))
	}
	if p.APIVersion != APIVersion {
		bad("apiVersion %q is not supported, want %q", p.APIVersion, APIVersion)
	}
	if p.Kind != "Policy" {
		bad("kind %q, want \"Policy\"", p.Kind)
	}
	if len(p.Rules) == 0 {
		bad("loaded illegal policy with 0 rules")
	}
	checkStages := func(path string, stages []Stage) {
		for i, s := range stages {
			if stageBit(s) == 0 {
				bad("%s[%d]: Invalid value: %q: allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic", path, i, s)
			}
		}
	}
	checkStages("omitStages", p.OmitStages)
	for i, r := range p.Rules {
		path := fmt.Sprintf("rules[%d]", i)
		switch r.Level {
		case LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse:
		case "":
			bad("%s.level: Required value", path)
		default:
			bad("%s.level: Unsupported value: %q: supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"", path, r.Level)
		}
		for j, u := range r.NonResourceURLs {
			if u == "*" {
				continue
			}
			if !strings.HasPrefix(u, "/") {
				bad("%s.nonResourceURLs[%d]: Invalid value: %q: non-resource URL rules must begin with a '/' character", path, j, u)
			}
			if u != "" && strings.ContainsRune(u[:len(u)-1], '*') {
				bad("%s.nonResourceURLs[%d]: Invalid value: %q: non-resource URL wildcards '*' must be the final character of the rule", path, j, u)
			}
		}
		for _, gr := range r.Resources {
			if gr.Group != "" && !isDNSSubdomain(gr.Group) {
				bad("%s.resources.group: Invalid value: %q: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", path, gr.Group)
			}
			if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
				bad("%s.resources.resourceNames: Invalid value: %q: using resourceNames requires at least one resource", path, gr.ResourceNames)
			}
		}
		checkStages(path+".omitStages", r.OmitStages)
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			bad("%s.nonResourceURLs: Invalid value: %q: rules cannot apply to both regular resources and non-resource URLs", path, r.NonResourceURLs)
		}
	}
	return errors.Join(errs...)
}

// isDNSSubdomain reports whether s is a lowercase RFC 1123 subdomain of at
// most 253 characters.
func isDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) == 0 || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			alnum := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
			if !alnum && (c != '-' || i == 0 || i == len(label)-1) {
				return false
			}
		}
	}
	return true
}
