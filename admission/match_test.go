// This file tests, through the public API, how admission decides that a
// request concerns a policy or a webhook, case by case against Kubernetes'
// rules (k8s.io/apiserver/pkg/admission/plugin/webhook/predicates and
// .../policy/matching): operations, API groups and versions, resources with
// `*` and `resource/subresource`, scope, resource names, label selectors,
// namespaceSelector, objectSelector, excludeResourceRules and a binding's
// own matchResources.

package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// request is the attributes of a write of a widget (example.annex.dev/v1,
// namespaced unless ns is ""), with an object carrying labels.
func request(op, ns, name, sub string, labels map[string]any) *admission.Attributes {
	obj := map[string]any{"apiVersion": "example.annex.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}}
	a := &admission.Attributes{Operation: op, Group: "example.annex.dev", Version: "v1", Resource: "widgets",
		Subresource: sub, Kind: "Widget", Namespace: ns, Name: name, User: &filters.User{Name: "alice"}}
	switch op {
	case admission.Create:
		a.Object = obj
	case admission.Delete:
		a.OldObject = obj
	default:
		a.Object, a.OldObject = obj, obj
	}
	return a
}

func ptr[T any](v T) *T { return &v }

func TestRuleMatches(t *testing.T) {
	t.Parallel()
	rule := func(ops, groups, versions, resources []string) admission.Rule {
		return admission.Rule{Operations: ops, APIGroups: groups, APIVersions: versions, Resources: resources}
	}
	all := []string{"*"}
	group := []string{"example.annex.dev"}
	v1 := []string{"v1"}
	tests := []struct {
		name string
		rule admission.Rule
		a    *admission.Attributes
		want bool
	}{
		// Operations.
		{"operation_listed", rule([]string{"CREATE"}, all, all, all), request("CREATE", "ns", "w", "", nil), true},
		{"operation_not_listed", rule([]string{"CREATE"}, all, all, all), request("UPDATE", "ns", "w", "", nil), false},
		{"operation_star", rule(all, all, all, all), request("DELETE", "ns", "w", "", nil), true},
		{"operation_several", rule([]string{"CREATE", "DELETE"}, all, all, all), request("DELETE", "ns", "w", "", nil), true},
		{"operation_connect", rule([]string{"CONNECT"}, all, all, all), request("CONNECT", "ns", "w", "", nil), true},
		{"no_operations_match_nothing", rule(nil, all, all, all), request("CREATE", "ns", "w", "", nil), false},
		// API groups and versions.
		{"group_listed", rule(all, group, all, all), request("CREATE", "ns", "w", "", nil), true},
		{"group_other", rule(all, []string{"other.annex.dev"}, all, all), request("CREATE", "ns", "w", "", nil), false},
		{"core_group_is_not_ours", rule(all, []string{""}, all, all), request("CREATE", "ns", "w", "", nil), false},
		{"no_groups_match_nothing", rule(all, nil, all, all), request("CREATE", "ns", "w", "", nil), false},
		{"version_listed", rule(all, group, v1, all), request("CREATE", "ns", "w", "", nil), true},
		{"version_other", rule(all, group, []string{"v2"}, all), request("CREATE", "ns", "w", "", nil), false},
		// Resources and subresources.
		{"resource_named", rule(all, all, all, []string{"widgets"}), request("CREATE", "ns", "w", "", nil), true},
		{"resource_other", rule(all, all, all, []string{"gadgets"}), request("CREATE", "ns", "w", "", nil), false},
		{"resource_does_not_cover_its_subresource", rule(all, all, all, []string{"widgets"}), request("UPDATE", "ns", "w", "status", nil), false},
		{"subresource_named", rule(all, all, all, []string{"widgets/status"}), request("UPDATE", "ns", "w", "status", nil), true},
		{"subresource_does_not_cover_the_resource", rule(all, all, all, []string{"widgets/status"}), request("UPDATE", "ns", "w", "", nil), false},
		{"subresource_other", rule(all, all, all, []string{"widgets/scale"}), request("UPDATE", "ns", "w", "status", nil), false},
		{"resource_slash_star_covers_subresources", rule(all, all, all, []string{"widgets/*"}), request("UPDATE", "ns", "w", "status", nil), true},
		{"resource_slash_star_covers_the_resource", rule(all, all, all, []string{"widgets/*"}), request("UPDATE", "ns", "w", "", nil), true},
		{"star_covers_every_resource", rule(all, all, all, all), request("CREATE", "ns", "w", "", nil), true},
		{"star_does_not_cover_subresources", rule(all, all, all, all), request("UPDATE", "ns", "w", "status", nil), false},
		{"star_slash_star_covers_subresources", rule(all, all, all, []string{"*/*"}), request("UPDATE", "ns", "w", "status", nil), true},
		{"star_slash_status", rule(all, all, all, []string{"*/status"}), request("UPDATE", "ns", "w", "status", nil), true},
		{"star_slash_status_not_the_resource", rule(all, all, all, []string{"*/status"}), request("UPDATE", "ns", "w", "", nil), false},
		{"second_resource_entry", rule(all, all, all, []string{"gadgets", "widgets/status"}), request("UPDATE", "ns", "w", "status", nil), true},
		// Scope.
		{"scope_namespaced_namespaced_request", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, Scope: ptr("Namespaced")}, request("CREATE", "ns", "w", "", nil), true},
		{"scope_namespaced_cluster_request", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, Scope: ptr("Namespaced")}, request("CREATE", "", "w", "", nil), false},
		{"scope_cluster_cluster_request", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, Scope: ptr("Cluster")}, request("CREATE", "", "w", "", nil), true},
		{"scope_cluster_namespaced_request", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, Scope: ptr("Cluster")}, request("CREATE", "ns", "w", "", nil), false},
		{"scope_star_namespaced", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, Scope: ptr("*")}, request("CREATE", "ns", "w", "", nil), true},
		{"scope_star_cluster", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, Scope: ptr("*")}, request("CREATE", "", "w", "", nil), true},
		// Resource names (policies' NamedRuleWithOperations).
		{"resource_name_listed", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, ResourceNames: []string{"w"}}, request("UPDATE", "ns", "w", "", nil), true},
		{"resource_name_other", admission.Rule{Operations: all, APIGroups: all, APIVersions: all, Resources: all, ResourceNames: []string{"x"}}, request("UPDATE", "ns", "w", "", nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.Matches(tt.a); got != tt.want {
				t.Errorf("rule %+v on %s %s/%s: Matches = %v, want %v", tt.rule, tt.a.Operation, tt.a.Resource, tt.a.Subresource, got, tt.want)
			}
		})
	}
}

func TestLabelSelectorMatches(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"env": "prod", "team": "a"}
	req := func(key, op string, values ...string) admission.LabelSelectorRequirement {
		return admission.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	tests := []struct {
		name    string
		sel     *admission.LabelSelector
		want    bool
		wantErr bool
	}{
		{name: "nil_matches_everything", sel: nil, want: true},
		{name: "empty_matches_everything", sel: &admission.LabelSelector{}, want: true},
		{name: "match_labels", sel: &admission.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, want: true},
		{name: "match_labels_all_must_hold", sel: &admission.LabelSelector{MatchLabels: map[string]string{"env": "prod", "team": "b"}}, want: false},
		{name: "match_labels_missing_key", sel: &admission.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, want: false},
		{name: "in", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("env", "In", "dev", "prod")}}, want: true},
		{name: "in_other_value", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("env", "In", "dev")}}, want: false},
		{name: "in_missing_key", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("tier", "In", "web")}}, want: false},
		{name: "not_in", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("env", "NotIn", "dev")}}, want: true},
		{name: "not_in_listed_value", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("env", "NotIn", "prod")}}, want: false},
		{name: "not_in_missing_key_matches", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("tier", "NotIn", "web")}}, want: true},
		{name: "exists", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("team", "Exists")}}, want: true},
		{name: "exists_missing", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("tier", "Exists")}}, want: false},
		{name: "does_not_exist", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("tier", "DoesNotExist")}}, want: true},
		{name: "does_not_exist_present", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("env", "DoesNotExist")}}, want: false},
		{name: "labels_and_expressions_together", sel: &admission.LabelSelector{MatchLabels: map[string]string{"team": "a"}, MatchExpressions: []admission.LabelSelectorRequirement{req("env", "In", "dev")}}, want: false},
		{name: "unknown_operator_is_an_error", sel: &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{req("env", "Equals", "prod")}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sel.Matches(labels)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Matches: error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("Matches(%v) = %v, want %v", labels, got, tt.want)
			}
		})
	}
}

// namespaces is a NamespaceGetter over fixed namespaces' labels.
func namespaces(byName map[string]map[string]any) admission.NamespaceGetter {
	return admission.NamespaceGetterFunc(func(_ context.Context, name string) (map[string]any, error) {
		labels, ok := byName[name]
		if !ok {
			return nil, nil
		}
		return map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": name, "labels": labels}}, nil
	})
}

var testNamespaces = namespaces(map[string]map[string]any{
	"prod": {"env": "prod"},
	"dev":  {"env": "dev"},
})

// denyingPolicy is a ValidatingAdmissionPolicy whose one validation always
// fails with "matched", bound (Deny) with the binding's matchResources: it
// denies exactly the requests it matches.
func denyingPolicy(t *testing.T, constraints, binding *admission.MatchResources, failurePolicy string) *admission.ValidatingPolicies {
	t.Helper()
	p := admission.Policy{Metadata: admission.ObjectMeta{Name: "p"}, Spec: admission.PolicySpec{
		MatchConstraints: constraints,
		Validations:      []admission.Validation{{Expression: "false", Message: "matched"}},
	}}
	if failurePolicy != "" {
		p.Spec.FailurePolicy = ptr(failurePolicy)
	}
	b := admission.Binding{Metadata: admission.ObjectMeta{Name: "b"}, Spec: admission.BindingSpec{
		PolicyName: "p", ValidationActions: []string{"Deny"}, MatchResources: binding}}
	v, err := admission.NewValidatingPolicies([]admission.Policy{p}, []admission.Binding{b}, admission.PolicyOptions{Namespaces: testNamespaces})
	if err != nil {
		t.Fatalf("NewValidatingPolicies: %v", err)
	}
	return v
}

func TestPolicyMatchResources(t *testing.T) {
	t.Parallel()
	widgets := []admission.Rule{{Operations: []string{"*"}, APIGroups: []string{"example.annex.dev"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}
	prodOnly := &admission.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	red := &admission.LabelSelector{MatchLabels: map[string]string{"color": "red"}}
	tests := []struct {
		name        string
		constraints *admission.MatchResources
		binding     *admission.MatchResources
		failure     string
		a           *admission.Attributes
		// want is "matched" (denied by the validation), "" (not matched)
		// or the start of another denial message.
		want string
	}{
		{name: "rules_match", constraints: &admission.MatchResources{ResourceRules: widgets},
			a: request("CREATE", "prod", "w", "", nil), want: "matched"},
		{name: "rules_do_not_match_subresource", constraints: &admission.MatchResources{ResourceRules: widgets},
			a: request("UPDATE", "prod", "w", "status", nil), want: ""},
		{name: "no_constraints_match_nothing", constraints: nil,
			a: request("CREATE", "prod", "w", "", nil), want: ""},
		{name: "excluded", constraints: &admission.MatchResources{ResourceRules: widgets, ExcludeResourceRules: []admission.Rule{{
			Operations: []string{"DELETE"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}},
			a: request("DELETE", "prod", "w", "", nil), want: ""},
		{name: "exclusion_of_another_operation", constraints: &admission.MatchResources{ResourceRules: widgets, ExcludeResourceRules: []admission.Rule{{
			Operations: []string{"DELETE"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}},
			a: request("CREATE", "prod", "w", "", nil), want: "matched"},
		{name: "exclusion_by_name", constraints: &admission.MatchResources{ResourceRules: widgets, ExcludeResourceRules: []admission.Rule{{
			Operations: []string{"*"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, ResourceNames: []string{"w"}}}},
			a: request("UPDATE", "prod", "w", "", nil), want: ""},
		{name: "namespace_selector_matches", constraints: &admission.MatchResources{ResourceRules: widgets, NamespaceSelector: prodOnly},
			a: request("CREATE", "prod", "w", "", nil), want: "matched"},
		{name: "namespace_selector_does_not_match", constraints: &admission.MatchResources{ResourceRules: widgets, NamespaceSelector: prodOnly},
			a: request("CREATE", "dev", "w", "", nil), want: ""},
		{name: "namespace_selector_always_matches_cluster_scoped", constraints: &admission.MatchResources{ResourceRules: widgets, NamespaceSelector: prodOnly},
			a: request("CREATE", "", "w", "", nil), want: "matched"},
		{name: "empty_namespace_selector_matches_every_namespace", constraints: &admission.MatchResources{ResourceRules: widgets, NamespaceSelector: &admission.LabelSelector{}},
			a: request("CREATE", "dev", "w", "", nil), want: "matched"},
		{name: "object_selector_new_object", constraints: &admission.MatchResources{ResourceRules: widgets, ObjectSelector: red},
			a: request("CREATE", "prod", "w", "", map[string]any{"color": "red"}), want: "matched"},
		{name: "object_selector_no_match", constraints: &admission.MatchResources{ResourceRules: widgets, ObjectSelector: red},
			a: request("CREATE", "prod", "w", "", map[string]any{"color": "blue"}), want: ""},
		{name: "object_selector_old_object_on_delete", constraints: &admission.MatchResources{ResourceRules: widgets, ObjectSelector: red},
			a: request("DELETE", "prod", "w", "", map[string]any{"color": "red"}), want: "matched"},
		{name: "object_selector_old_or_new_on_update", constraints: &admission.MatchResources{ResourceRules: widgets, ObjectSelector: red},
			a: func() *admission.Attributes {
				a := request("UPDATE", "prod", "w", "", map[string]any{"color": "blue"})
				a.OldObject = request("DELETE", "prod", "w", "", map[string]any{"color": "red"}).OldObject
				return a
			}(), want: "matched"},
		{name: "match_policy_exact", constraints: &admission.MatchResources{ResourceRules: widgets, MatchPolicy: ptr("Exact")},
			a: request("CREATE", "prod", "w", "", nil), want: "matched"},
		{name: "match_policy_exact_other_version", constraints: &admission.MatchResources{MatchPolicy: ptr("Exact"), ResourceRules: []admission.Rule{{
			Operations: []string{"*"}, APIGroups: []string{"*"}, APIVersions: []string{"v2"}, Resources: []string{"widgets"}}}},
			a: request("CREATE", "prod", "w", "", nil), want: ""},
		{name: "match_policy_equivalent_same_version", constraints: &admission.MatchResources{ResourceRules: widgets, MatchPolicy: ptr("Equivalent")},
			a: request("CREATE", "prod", "w", "", nil), want: "matched"},
		// The binding's matchResources narrows the policy's.
		{name: "binding_namespace_selector", constraints: &admission.MatchResources{ResourceRules: widgets},
			binding: &admission.MatchResources{NamespaceSelector: prodOnly},
			a:       request("CREATE", "dev", "w", "", nil), want: ""},
		{name: "binding_without_rules_does_not_constrain_resources", constraints: &admission.MatchResources{ResourceRules: widgets},
			binding: &admission.MatchResources{NamespaceSelector: prodOnly},
			a:       request("CREATE", "prod", "w", "", nil), want: "matched"},
		{name: "binding_rules_narrow", constraints: &admission.MatchResources{ResourceRules: widgets},
			binding: &admission.MatchResources{ResourceRules: []admission.Rule{{Operations: []string{"UPDATE"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}},
			a:       request("CREATE", "prod", "w", "", nil), want: ""},
		{name: "binding_exclusion", constraints: &admission.MatchResources{ResourceRules: widgets},
			binding: &admission.MatchResources{ExcludeResourceRules: []admission.Rule{{Operations: []string{"CREATE"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}},
			a:       request("CREATE", "prod", "w", "", nil), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := denyingPolicy(t, tt.constraints, tt.binding, tt.failure)
			err := v.Validate(context.Background(), tt.a)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want the policy not to apply", err)
				}
				return
			}
			var st *meta.Status
			if !errors.As(err, &st) {
				t.Fatalf("Validate: %v, want a *meta.Status", err)
			}
			prefix := "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
			if tt.want != "matched" {
				prefix = "ValidatingAdmissionPolicy 'p' denied request: "
			}
			if !strings.Contains(st.Message, prefix+tt.want) {
				t.Errorf("message %q, want it to contain %q", st.Message, prefix+tt.want)
			}
		})
	}
}

// TestInvalidSelectorsRefusedAtLoad: a label selector the API server would
// refuse in a policy, binding or webhook configuration fails the load with
// kube's validation message, naming the field, instead of failing requests
// later.
func TestInvalidSelectorsRefusedAtLoad(t *testing.T) {
	t.Parallel()
	expr := func(key, op string, values ...string) *admission.LabelSelector {
		return &admission.LabelSelector{MatchExpressions: []admission.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := []struct {
		name string
		sel  *admission.LabelSelector
		want string // the message after the field path
	}{
		{name: "unknown_operator", sel: expr("color", "Equals", "red"),
			want: `matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator`},
		{name: "in_without_values", sel: expr("color", "In"),
			want: "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"},
		{name: "not_in_without_values", sel: expr("color", "NotIn"),
			want: "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"},
		{name: "exists_with_values", sel: expr("color", "Exists", "red"),
			want: "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
		{name: "bad_key", sel: expr("-color", "Exists"),
			want: `matchExpressions[0].key: Invalid value: "-color": name part must consist of alphanumeric characters`},
		{name: "bad_label_value", sel: &admission.LabelSelector{MatchLabels: map[string]string{"color": "red!"}},
			want: `matchLabels: Invalid value: "red!": a valid label must be an empty string or consist of alphanumeric characters`},
	}
	rules := []admission.Rule{{Operations: []string{"*"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loads := map[string]func() error{
				"spec.matchConstraints.objectSelector.": func() error {
					p := admission.Policy{Metadata: admission.ObjectMeta{Name: "p"}, Spec: admission.PolicySpec{
						MatchConstraints: &admission.MatchResources{ResourceRules: rules, ObjectSelector: tt.sel},
						Validations:      []admission.Validation{{Expression: "true"}}}}
					_, err := admission.NewValidatingPolicies([]admission.Policy{p}, nil, admission.PolicyOptions{})
					return err
				},
				"spec.matchResources.namespaceSelector.": func() error {
					p := admission.Policy{Metadata: admission.ObjectMeta{Name: "p"}, Spec: admission.PolicySpec{
						MatchConstraints: &admission.MatchResources{ResourceRules: rules}, Validations: []admission.Validation{{Expression: "true"}}}}
					b := admission.Binding{Metadata: admission.ObjectMeta{Name: "b"}, Spec: admission.BindingSpec{PolicyName: "p",
						ValidationActions: []string{"Deny"}, MatchResources: &admission.MatchResources{NamespaceSelector: tt.sel}}}
					_, err := admission.NewValidatingPolicies([]admission.Policy{p}, []admission.Binding{b}, admission.PolicyOptions{})
					return err
				},
				"namespaceSelector.": func() error {
					u := "https://127.0.0.1:1/validate"
					c := admission.WebhookConfiguration{Metadata: admission.ObjectMeta{Name: "c"}, Webhooks: []admission.Webhook{{
						Name: "w.example.com", ClientConfig: admission.WebhookClientConfig{URL: &u}, NamespaceSelector: tt.sel}}}
					_, err := admission.NewValidatingWebhooks([]admission.WebhookConfiguration{c}, admission.WebhookOptions{})
					return err
				},
			}
			for path, load := range loads {
				err := load()
				if !errors.Is(err, admission.ErrInvalidConfig) || !strings.Contains(err.Error(), path+tt.want) {
					t.Errorf("%s: %v, want ErrInvalidConfig with %q", path, err, path+tt.want)
				}
			}
		})
	}
}
