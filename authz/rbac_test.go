package authz_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
)

const policyYAML = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: thing-reader}
rules:
- {apiGroups: [example.com], resources: [things, things/status], verbs: [get, list, watch]}
- {nonResourceURLs: [/metrics, /debug/*], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: thing-reader}
subjects:
- {kind: Group, apiGroup: rbac.authorization.k8s.io, name: readers}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: team-admin, namespace: team}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-admins, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: team-admin}
subjects:
- {kind: User, apiGroup: rbac.authorization.k8s.io, name: tara}
- {kind: ServiceAccount, name: deployer}
---
apiVersion: v1
kind: List
items:
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata: {name: one-thing-editor}
  rules:
  - {apiGroups: [example.com], resources: [things], resourceNames: [special], verbs: [get, update, delete, list, create]}
  - {apiGroups: [example.com], resources: ["*/scale"], verbs: [update]}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: ed, namespace: team}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: one-thing-editor}
  subjects:
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: eddie}
  - {kind: ServiceAccount, name: bot, namespace: other}
`

func user(name string, groups ...string) *filters.User {
	return &filters.User{Name: name, Groups: groups}
}

func thing(u *filters.User, verb, ns, name string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, IsResourceRequest: true, APIGroup: "example.com", APIVersion: "v1", Namespace: ns, Resource: "things", Name: name}
}

func TestRBAC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(policyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := authz.LoadRBACFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	reader, tara, eddie := user("rita", "readers"), user("tara"), user("eddie")
	sub := func(a authz.Attributes, s string) authz.Attributes { a.Subresource = s; return a }
	tests := []struct {
		name       string
		attrs      authz.Attributes
		want       authz.Decision
		wantReason string
	}{
		{name: "group_binding_list", attrs: thing(reader, "list", "", ""), want: authz.DecisionAllow,
			wantReason: `RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "thing-reader" to Group "readers"`},
		{name: "group_binding_get_in_any_namespace", attrs: thing(reader, "get", "x", "t1"), want: authz.DecisionAllow},
		{name: "verb_not_granted", attrs: thing(reader, "delete", "x", "t1"), want: authz.DecisionNoOpinion},
		{name: "subresource_listed", attrs: sub(thing(reader, "get", "x", "t1"), "status"), want: authz.DecisionAllow},
		{name: "subresource_not_listed", attrs: sub(thing(reader, "get", "x", "t1"), "scale"), want: authz.DecisionNoOpinion},
		{name: "other_group", attrs: authz.Attributes{User: reader, Verb: "get", IsResourceRequest: true, APIGroup: "other.com", Resource: "things"}, want: authz.DecisionNoOpinion},
		{name: "non_resource_exact", attrs: authz.Attributes{User: reader, Verb: "get", Path: "/metrics"}, want: authz.DecisionAllow},
		{name: "non_resource_prefix", attrs: authz.Attributes{User: reader, Verb: "get", Path: "/debug/pprof/heap"}, want: authz.DecisionAllow},
		{name: "non_resource_not_prefix_of_metrics", attrs: authz.Attributes{User: reader, Verb: "get", Path: "/metricsx"}, want: authz.DecisionNoOpinion},
		{name: "non_resource_wrong_verb", attrs: authz.Attributes{User: reader, Verb: "post", Path: "/metrics"}, want: authz.DecisionNoOpinion},
		{name: "role_binding_in_namespace", attrs: thing(tara, "delete", "team", "t1"), want: authz.DecisionAllow,
			wantReason: `RBAC: allowed by RoleBinding "team-admins/team" of Role "team-admin" to User "tara"`},
		{name: "role_binding_other_namespace", attrs: thing(tara, "delete", "prod", "t1"), want: authz.DecisionNoOpinion},
		// CVE-2019-11247: a namespace grant never reaches cluster-scoped
		// attributes (namespace ""), whatever the verb.
		{name: "cve_2019_11247_namespace_admin_cluster_scoped_get", attrs: thing(tara, "get", "", "t1"), want: authz.DecisionNoOpinion},
		{name: "cve_2019_11247_namespace_admin_cluster_wide_list", attrs: thing(tara, "list", "", ""), want: authz.DecisionNoOpinion},
		{name: "cve_2019_11247_namespace_admin_cluster_scoped_delete", attrs: thing(tara, "delete", "", "t1"), want: authz.DecisionNoOpinion},
		{name: "cve_2019_11247_namespace_admin_namespaces_resource", attrs: authz.Attributes{User: tara, Verb: "delete", IsResourceRequest: true, Resource: "namespaces", Name: "team"}, want: authz.DecisionNoOpinion},
		{name: "service_account_defaults_to_binding_namespace", attrs: thing(user("system:serviceaccount:team:deployer"), "create", "team", ""), want: authz.DecisionAllow},
		{name: "service_account_other_namespace_same_name", attrs: thing(user("system:serviceaccount:prod:deployer"), "create", "team", ""), want: authz.DecisionNoOpinion},
		{name: "service_account_explicit_namespace", attrs: thing(user("system:serviceaccount:other:bot"), "get", "team", "special"), want: authz.DecisionAllow},
		{name: "resource_names_match", attrs: thing(eddie, "update", "team", "special"), want: authz.DecisionAllow},
		{name: "resource_names_other_name", attrs: thing(eddie, "update", "team", "ordinary"), want: authz.DecisionNoOpinion},
		{name: "resource_names_list_without_name", attrs: thing(eddie, "list", "team", ""), want: authz.DecisionNoOpinion},
		{name: "resource_names_create_without_name", attrs: thing(eddie, "create", "team", ""), want: authz.DecisionNoOpinion},
		{name: "star_subresource", attrs: sub(thing(eddie, "update", "team", "any"), "scale"), want: authz.DecisionAllow},
		{name: "star_subresource_not_main_resource", attrs: thing(eddie, "update", "team", "any"), want: authz.DecisionNoOpinion},
		{name: "no_user", attrs: authz.Attributes{Verb: "get", Path: "/metrics"}, want: authz.DecisionNoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, reason, err := r.Authorize(t.Context(), tt.attrs)
			if err != nil || d != tt.want || (tt.wantReason != "" && reason != tt.wantReason) {
				t.Errorf("got %v %q %v, want %v %q", d, reason, err, tt.want, tt.wantReason)
			}
		})
	}
}

func TestParseRBAC_rejects(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"wrong_api_version":      "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: ClusterRole\nmetadata: {name: x}\n",
		"unknown_kind":           "apiVersion: rbac.authorization.k8s.io/v1\nkind: Pod\nmetadata: {name: x}\n",
		"role_without_ns":        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: x}\n",
		"crb_to_role":            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: x}\nroleRef: {kind: Role, name: r}\n",
		"rolebinding_without_ns": "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: x}\nroleRef: {kind: ClusterRole, name: r}\n",
		"no_name":                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n",
		"not_yaml":               "{{{",
	}
	for name, doc := range tests {
		if _, err := authz.ParseRBAC([]byte(doc)); !errors.Is(err, authz.ErrRBAC) {
			t.Errorf("%s: err = %v, want ErrRBAC", name, err)
		}
	}
}

// TestParseRBAC_billion_laughs: YAML alias expansion (CVE-2019-11253) is
// refused quickly instead of exhausting memory.
func TestParseRBAC_billion_laughs(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	sb.WriteString("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x}\nx0: &a0 [{verbs: [get], resources: [lol]}]\n")
	for i := 1; i < 10; i++ {
		sb.WriteString("x" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 9 {
			if j > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("*a" + string(rune('0'+i-1)))
		}
		sb.WriteString("]\n")
	}
	sb.WriteString("rules: *a9\n")
	start := time.Now()
	_, err := authz.ParseRBAC([]byte(sb.String()))
	if err == nil {
		t.Error("billion laughs accepted")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestBootstrapRBAC(t *testing.T) {
	t.Parallel()
	r, err := authz.BootstrapRBAC()
	if err != nil {
		t.Fatal(err)
	}
	bob := &filters.User{Name: "bob", Groups: []string{"dev", "system:authenticated"}}
	anon := &filters.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	tests := []struct {
		name   string
		a      authz.Attributes
		want   authz.Decision
		reason string
	}{
		{name: "discovery", a: authz.Attributes{User: bob, Verb: "get", Path: "/apis/shop.example.com/v1"},
			want: authz.DecisionAllow, reason: `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`},
		{name: "openapi", a: authz.Attributes{User: bob, Verb: "get", Path: "/openapi/v3"}, want: authz.DecisionAllow},
		{name: "self_subject_access_review", a: authz.Attributes{User: bob, Verb: "create", IsResourceRequest: true,
			APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, want: authz.DecisionAllow},
		{name: "self_subject_review", a: authz.Attributes{User: bob, Verb: "create", IsResourceRequest: true,
			APIGroup: "authentication.k8s.io", Resource: "selfsubjectreviews"}, want: authz.DecisionAllow},
		{name: "anonymous_version", a: authz.Attributes{User: anon, Verb: "get", Path: "/version"}, want: authz.DecisionAllow},
		{name: "anonymous_discovery", a: authz.Attributes{User: anon, Verb: "get", Path: "/apis"}, want: authz.DecisionNoOpinion},
		{name: "resources", a: authz.Attributes{User: bob, Verb: "list", IsResourceRequest: true, APIGroup: "shop.example.com", Resource: "widgets"},
			want: authz.DecisionNoOpinion},
		{name: "metrics", a: authz.Attributes{User: bob, Verb: "get", Path: "/metrics"}, want: authz.DecisionNoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := r.Authorize(context.Background(), tt.a)
			if err != nil || d != tt.want || (tt.reason != "" && reason != tt.reason) {
				t.Errorf("Authorize = %v %q %v, want %v %q", d, reason, err, tt.want, tt.reason)
			}
		})
	}
}
