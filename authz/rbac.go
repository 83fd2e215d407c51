// This file holds RBAC evaluated in process: Roles, ClusterRoles and their
// bindings in the rbac.authorization.k8s.io/v1 format, loaded from YAML, and
// Kubernetes' rule matching. It lets a standalone server (no cluster) have
// real policy.

package authz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// NameRBAC is the union name of the in-process RBAC authorizer.
const NameRBAC = "rbac"

// The values RBAC gives meaning to.
const (
	rbacGroup          = "rbac.authorization.k8s.io"
	rbacAPIVersion     = "rbac.authorization.k8s.io/v1"
	serviceAccountUser = "system:serviceaccount:"
)

// PolicyRule is one rule of a Role or ClusterRole.
type PolicyRule struct {
	Verbs           []string `yaml:"verbs" json:"verbs"`
	APIGroups       []string `yaml:"apiGroups,omitempty" json:"apiGroups,omitempty"`
	Resources       []string `yaml:"resources,omitempty" json:"resources,omitempty"`
	ResourceNames   []string `yaml:"resourceNames,omitempty" json:"resourceNames,omitempty"`
	NonResourceURLs []string `yaml:"nonResourceURLs,omitempty" json:"nonResourceURLs,omitempty"`
}

// Subject is who a binding binds: a User, a Group, or a ServiceAccount.
type Subject struct {
	Kind      string `yaml:"kind" json:"kind"`
	APIGroup  string `yaml:"apiGroup,omitempty" json:"apiGroup,omitempty"`
	Name      string `yaml:"name" json:"name"`
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
}

// RoleRef names the Role or ClusterRole a binding grants.
type RoleRef struct {
	APIGroup string `yaml:"apiGroup" json:"apiGroup"`
	Kind     string `yaml:"kind" json:"kind"`
	Name     string `yaml:"name" json:"name"`
}

// rbacObject is any of the four kinds (and List), as read from YAML.
type rbacObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Rules    []PolicyRule `yaml:"rules"`
	Subjects []Subject    `yaml:"subjects"`
	RoleRef  RoleRef      `yaml:"roleRef"`
	Items    []yaml.Node  `yaml:"items"`
}

type roleKey struct{ namespace, name string }

type binding struct {
	name      string
	namespace string // "" for a ClusterRoleBinding
	subjects  []Subject
	ref       RoleRef
	// reasons are the Allow reasons, one per subject, written when the
	// binding is read rather than for each request it allows.
	reasons []string
}

// withReasons returns b with its Allow reasons, in the words of
// Kubernetes' RBAC authorizer.
func (b binding) withReasons() binding {
	b.reasons = make([]string, len(b.subjects))
	bname, kind := b.name, "ClusterRoleBinding"
	if b.namespace != "" {
		bname, kind = b.name+"/"+b.namespace, "RoleBinding"
	}
	for i, s := range b.subjects {
		sname := s.Name
		if s.Namespace != "" {
			sname += "/" + s.Namespace
		}
		b.reasons[i] = fmt.Sprintf("RBAC: allowed by %s %q of %s %q to %s %q", kind, bname, b.ref.Kind, b.ref.Name, s.Kind, sname)
	}
	return b
}

// RBAC is an allow-only authorizer over a fixed set of roles and bindings.
// It never denies: a request no binding allows gets NoOpinion. It is
// immutable and safe for concurrent use; reload by building a new one.
type RBAC struct {
	roles        map[roleKey][]PolicyRule // namespace "" for ClusterRoles
	clusterBinds []binding
	nsBinds      map[string][]binding
}

var _ Authorizer = (*RBAC)(nil)

// LoadRBACFiles reads RBAC objects from files (--authorization-policy-file),
// each holding one or more YAML documents.
func LoadRBACFiles(paths ...string) (*RBAC, error) {
	var docs [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrRBAC, err)
		}
		docs = append(docs, b)
	}
	return ParseRBAC(docs...)
}

// ParseRBAC parses multi-document YAML (or JSON) holding Role, ClusterRole,
// RoleBinding, ClusterRoleBinding objects of rbac.authorization.k8s.io/v1,
// or Lists of them. Other kinds, other API versions, a binding to a role
// kind other than Role/ClusterRole, and a RoleBinding without a namespace
// are ErrRBAC. A binding to a role that does not exist grants nothing, as in
// Kubernetes. ClusterRole aggregation rules are not supported.
func ParseRBAC(docs ...[]byte) (*RBAC, error) {
	r := &RBAC{roles: map[roleKey][]PolicyRule{}, nsBinds: map[string][]binding{}}
	for _, doc := range docs {
		dec := yaml.NewDecoder(bytes.NewReader(doc))
		for {
			var node yaml.Node
			err := dec.Decode(&node)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrRBAC, err)
			}
			if err := r.addNode(&node); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

func (r *RBAC) addNode(node *yaml.Node) error {
	var o rbacObject
	if err := node.Decode(&o); err != nil {
		return fmt.Errorf("%w: %v", ErrRBAC, err)
	}
	if o.Kind == "" && o.APIVersion == "" {
		return nil // an empty document
	}
	if o.Kind == "List" {
		for i := range o.Items {
			if err := r.addNode(&o.Items[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if o.APIVersion != rbacAPIVersion {
		return fmt.Errorf("%w: %s %q: apiVersion %q, want %s", ErrRBAC, o.Kind, o.Metadata.Name, o.APIVersion, rbacAPIVersion)
	}
	name, ns := o.Metadata.Name, o.Metadata.Namespace
	if name == "" {
		return fmt.Errorf("%w: %s without metadata.name", ErrRBAC, o.Kind)
	}
	switch o.Kind {
	case "ClusterRole":
		r.roles[roleKey{"", name}] = append(r.roles[roleKey{"", name}], o.Rules...)
	case "Role":
		if ns == "" {
			return fmt.Errorf("%w: Role %q without metadata.namespace", ErrRBAC, name)
		}
		r.roles[roleKey{ns, name}] = append(r.roles[roleKey{ns, name}], o.Rules...)
	case "ClusterRoleBinding", "RoleBinding":
		if o.RoleRef.Kind != "ClusterRole" && (o.RoleRef.Kind != "Role" || o.Kind == "ClusterRoleBinding") {
			return fmt.Errorf("%w: %s %q: roleRef.kind %q", ErrRBAC, o.Kind, name, o.RoleRef.Kind)
		}
		b := binding{name: name, subjects: o.Subjects, ref: o.RoleRef}
		if o.Kind == "ClusterRoleBinding" {
			r.clusterBinds = append(r.clusterBinds, b.withReasons())
			break
		}
		if ns == "" {
			return fmt.Errorf("%w: RoleBinding %q without metadata.namespace", ErrRBAC, name)
		}
		b.namespace = ns
		r.nsBinds[ns] = append(r.nsBinds[ns], b.withReasons())
	default:
		return fmt.Errorf("%w: unsupported kind %q", ErrRBAC, o.Kind)
	}
	return nil
}

// Authorize allows a request a binding grants: a ClusterRoleBinding
// anywhere, a RoleBinding in its namespace. Otherwise NoOpinion. The reason
// of an Allow names the binding, as Kubernetes' RBAC authorizer does.
func (r *RBAC) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User == nil {
		return DecisionNoOpinion, "", nil
	}
	for _, b := range r.clusterBinds {
		if reason, ok := r.bindingAllows(b, a); ok {
			return DecisionAllow, reason, nil
		}
	}
	if a.Namespace != "" {
		for _, b := range r.nsBinds[a.Namespace] {
			if reason, ok := r.bindingAllows(b, a); ok {
				return DecisionAllow, reason, nil
			}
		}
	}
	return DecisionNoOpinion, "", nil
}

func (r *RBAC) bindingAllows(b binding, a Attributes) (string, bool) {
	subject := -1
	for i := range b.subjects {
		if SubjectMatches(b.subjects[i], b.namespace, a.User.Name, a.User.Groups) {
			subject = i
			break
		}
	}
	if subject < 0 {
		return "", false
	}
	ns := ""
	if b.ref.Kind == "Role" {
		ns = b.namespace
	}
	for _, rule := range r.roles[roleKey{ns, b.ref.Name}] {
		if RuleAllows(rule, a) {
			return b.reasons[subject], true
		}
	}
	return "", false
}

// SubjectMatches reports whether s names the user (or one of its groups), as
// Kubernetes' appliesToUser: a ServiceAccount subject without a namespace
// takes the binding's.
func SubjectMatches(s Subject, bindingNamespace, user string, groups []string) bool {
	switch s.Kind {
	case "User":
		return user == s.Name
	case "Group":
		return slices.Contains(groups, s.Name)
	case "ServiceAccount":
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" || s.Name == "" {
			return false
		}
		return user == serviceAccountUser+ns+":"+s.Name
	}
	return false
}

// RuleAllows reports whether rule allows the request, with Kubernetes'
// matching: verbs and apiGroups "*" or exact; resources "*", exact
// "resource" or "resource/subresource", or "*/subresource"; resourceNames
// empty or containing the request's name (so a rule with names never allows
// create, list or deletecollection without one); nonResourceURLs "*", exact,
// or a prefix ending in "*".
func RuleAllows(rule PolicyRule, a Attributes) bool {
	if !hasOrStar(rule.Verbs, a.Verb) {
		return false
	}
	if !a.IsResourceRequest {
		for _, u := range rule.NonResourceURLs {
			if u == "*" || u == a.Path || (strings.HasSuffix(u, "*") && strings.HasPrefix(a.Path, u[:len(u)-1])) {
				return true
			}
		}
		return false
	}
	if !hasOrStar(rule.APIGroups, a.APIGroup) {
		return false
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	resourceOK := false
	for _, r := range rule.Resources {
		if r == "*" || r == combined || (a.Subresource != "" && r == "*/"+a.Subresource) {
			resourceOK = true
			break
		}
	}
	if !resourceOK {
		return false
	}
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, a.Name)
}

func hasOrStar(list []string, v string) bool {
	for _, x := range list {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}
