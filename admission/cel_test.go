// This file tests, through the public API, the variables a
// ValidatingAdmissionPolicy's CEL expressions see, as Kubernetes defines
// them: object and oldObject (null when absent), request (the
// AdmissionRequest: kind, resource, subResource, requestKind,
// requestResource, name, namespace, operation, userInfo, dryRun, options),
// params (null without paramKind), namespaceObject (null for cluster-scoped
// requests) and variables (in order, each seeing the earlier ones).

package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// celPolicy is a policy for every write of every resource whose one
// validation is expr, with the given variables, param kind and binding
// paramRef.
func celPolicy(t *testing.T, expr string, variables []admission.NamedExpression, paramKind *admission.ParamKind, ref *admission.ParamRef, params []map[string]any) *admission.ValidatingPolicies {
	t.Helper()
	all := []string{"*"}
	p := admission.Policy{Metadata: admission.ObjectMeta{Name: "p"}, Spec: admission.PolicySpec{
		ParamKind: paramKind,
		MatchConstraints: &admission.MatchResources{ResourceRules: []admission.Rule{{
			Operations: all, APIGroups: all, APIVersions: all, Resources: []string{"*", "*/*"}}}},
		Variables:   variables,
		Validations: []admission.Validation{{Expression: expr}},
	}}
	b := admission.Binding{Metadata: admission.ObjectMeta{Name: "b"}, Spec: admission.BindingSpec{
		PolicyName: "p", ValidationActions: []string{"Deny"}, ParamRef: ref}}
	v, err := admission.NewValidatingPolicies([]admission.Policy{p}, []admission.Binding{b},
		admission.PolicyOptions{Namespaces: testNamespaces, Params: params})
	if err != nil {
		t.Fatalf("NewValidatingPolicies(%q): %v", expr, err)
	}
	return v
}

func TestPolicyCELVariables(t *testing.T) {
	t.Parallel()
	create := request("CREATE", "prod", "w", "", map[string]any{"color": "red"})
	create.User = &filters.User{Name: "alice", UID: "u-1", Groups: []string{"devs", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"a", "b"}}}
	update := request("UPDATE", "prod", "w", "", map[string]any{"color": "blue"})
	update.OldObject = request("DELETE", "prod", "w", "", map[string]any{"color": "red"}).OldObject
	del := request("DELETE", "prod", "w", "", map[string]any{"color": "red"})
	status := request("UPDATE", "prod", "w", "status", nil)
	cluster := request("CREATE", "", "w", "", nil)
	dry := request("CREATE", "dev", "w", "", nil)
	dry.DryRun = true
	dry.Options = map[string]any{"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": []string{"All"}}
	anonymous := request("CREATE", "dev", "w", "", nil)
	anonymous.User = nil
	// Numbers as the REST layer decodes them (json.Number), and as Go code
	// may build them (float64, int): integral ones are CEL ints, at any depth.
	numbers := request("CREATE", "prod", "w", "", nil)
	dec := json.NewDecoder(strings.NewReader(`{"replicas": 3, "ratio": 0.5, "big": 1e3, "ports": [{"port": 80}, {"port": 443}], "nested": {"list": [[1, 2.5]]}}`))
	dec.UseNumber()
	var spec map[string]any
	if err := dec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	spec["float"], spec["int"], spec["half"] = float64(7), 8, float64(1.5)
	numbers.Object["spec"] = spec
	numbers.OldObject = numbers.Object

	limits := &admission.ParamKind{APIVersion: "example.annex.dev/v1", Kind: "Limits"}
	param := func(ns, name string, max int) map[string]any {
		return map[string]any{"apiVersion": "example.annex.dev/v1", "kind": "Limits",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"tier": name}},
			"spec":     map[string]any{"max": max}}
	}
	params := []map[string]any{param("prod", "small", 3), param("prod", "large", 30), param("dev", "small", 5)}

	tests := []struct {
		name      string
		a         *admission.Attributes
		expr      string
		variables []admission.NamedExpression
		paramKind *admission.ParamKind
		ref       *admission.ParamRef
		// wantDenied: the expression must be false (or fail), else true;
		// the denial's message then starts with wantMsg.
		wantDenied bool
		wantMsg    string
	}{
		// object and oldObject.
		{name: "object_on_create", a: create, expr: `object.metadata.name == "w" && object.metadata.labels.color == "red"`},
		{name: "old_object_null_on_create", a: create, expr: `oldObject == null`},
		{name: "object_and_old_object_on_update", a: update, expr: `object.metadata.labels.color == "blue" && oldObject.metadata.labels.color == "red"`},
		{name: "object_null_on_delete", a: del, expr: `object == null && oldObject.metadata.labels.color == "red"`},
		{name: "false_expression_denies", a: create, expr: `object.metadata.labels.color == "blue"`, wantDenied: true,
			wantMsg: `failed expression: object.metadata.labels.color == "blue"`},
		{name: "missing_field_is_an_error", a: create, expr: `object.spec.replicas > 1`, wantDenied: true,
			wantMsg: "expression 'object.spec.replicas > 1' resulted in error: no such key: spec"},
		{name: "has_on_missing_field", a: create, expr: `!has(object.spec)`},
		{name: "json_numbers", a: numbers, expr: `type(object.spec.replicas) == int && object.spec.replicas == 3 && object.spec.replicas + 1 == 4 &&
			type(object.spec.ratio) == double && object.spec.ratio == 0.5 && type(object.spec.big) == double && object.spec.big == 1000.0 &&
			object.spec.ports.all(p, type(p.port) == int) && object.spec.ports.map(p, p.port) == [80, 443] &&
			object.spec.nested.list[0] == [1.0, 2.5] && type(object.spec.nested.list[0][0]) == int &&
			type(object.spec.float) == int && object.spec.float == 7 && type(object.spec.int) == int && object.spec.half == 1.5 &&
			object.spec == oldObject.spec && object != null`},
		// request.
		{name: "request_operation", a: update, expr: `request.operation == "UPDATE"`},
		{name: "request_kind", a: create, expr: `request.kind.group == "example.annex.dev" && request.kind.version == "v1" && request.kind.kind == "Widget"`},
		{name: "request_resource", a: create, expr: `request.resource.group == "example.annex.dev" && request.resource.version == "v1" && request.resource.resource == "widgets"`},
		{name: "request_request_kind_and_resource", a: create, expr: `request.requestKind.kind == "Widget" && request.requestResource.resource == "widgets"`},
		{name: "request_sub_resource", a: status, expr: `request.subResource == "status" && request.requestSubResource == "status"`},
		{name: "request_no_sub_resource", a: create, expr: `!has(request.subResource)`},
		{name: "request_name_and_namespace", a: create, expr: `request.name == "w" && request.namespace == "prod"`},
		{name: "request_cluster_scoped_namespace", a: cluster, expr: `request.namespace == ""`},
		{name: "request_user_info", a: create, expr: `request.userInfo.username == "alice" && request.userInfo.uid == "u-1" && "devs" in request.userInfo.groups && request.userInfo.extra.scopes == ["a", "b"]`},
		{name: "request_anonymous_user", a: anonymous, expr: `request.userInfo.username == "" && !has(request.userInfo.groups)`},
		{name: "request_dry_run", a: dry, expr: `request.dryRun == true`},
		{name: "request_not_dry_run", a: create, expr: `request.dryRun == false`},
		{name: "request_options", a: dry, expr: `request.options.kind == "CreateOptions" && request.options.dryRun == ["All"]`},
		// namespaceObject.
		{name: "namespace_object", a: create, expr: `namespaceObject.metadata.name == "prod" && namespaceObject.metadata.labels.env == "prod"`},
		{name: "namespace_object_null_for_cluster_scoped", a: cluster, expr: `namespaceObject == null`},
		// params.
		{name: "params_null_without_param_kind", a: create, expr: `params == null`},
		{name: "params_by_name_in_request_namespace", a: create, expr: `params.spec.max == 3`,
			paramKind: limits, ref: &admission.ParamRef{Name: "small", ParameterNotFoundAction: ptr("Deny")}},
		{name: "params_by_name_in_other_namespace", a: create, expr: `params.spec.max == 5`,
			paramKind: limits, ref: &admission.ParamRef{Name: "small", Namespace: "dev", ParameterNotFoundAction: ptr("Deny")}},
		{name: "params_by_selector_every_match_evaluated", a: create, expr: `params.spec.max < 10`,
			paramKind: limits, ref: &admission.ParamRef{Selector: &admission.LabelSelector{}, ParameterNotFoundAction: ptr("Deny")}, wantDenied: true,
			wantMsg: "failed expression: params.spec.max < 10"},
		{name: "params_by_selector_narrowed", a: create, expr: `params.spec.max == 30`,
			paramKind: limits, ref: &admission.ParamRef{Selector: &admission.LabelSelector{MatchLabels: map[string]string{"tier": "large"}}, ParameterNotFoundAction: ptr("Deny")}},
		{name: "params_not_found_allow_skips_the_policy", a: create, expr: `false`,
			paramKind: limits, ref: &admission.ParamRef{Name: "medium", ParameterNotFoundAction: ptr("Allow")}},
		{name: "params_not_found_deny", a: create, expr: `true`,
			paramKind: limits, ref: &admission.ParamRef{Name: "medium", ParameterNotFoundAction: ptr("Deny")}, wantDenied: true,
			wantMsg: "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		// variables.
		{name: "variable", a: create, expr: `variables.color == "red"`,
			variables: []admission.NamedExpression{{Name: "color", Expression: `object.metadata.labels.color`}}},
		{name: "variable_sees_earlier_variables", a: create, expr: `variables.both == "red/prod"`,
			variables: []admission.NamedExpression{
				{Name: "color", Expression: `object.metadata.labels.color`},
				{Name: "both", Expression: `variables.color + "/" + request.namespace`}}},
		{name: "variable_sees_params", a: create, expr: `variables.limit == 3`,
			variables: []admission.NamedExpression{{Name: "limit", Expression: `params.spec.max`}},
			paramKind: limits, ref: &admission.ParamRef{Name: "small", ParameterNotFoundAction: ptr("Deny")}},
		{name: "failing_variable_fails_its_reader", a: create, expr: `variables.bad == 1`,
			variables: []admission.NamedExpression{{Name: "bad", Expression: `object.spec.replicas`}}, wantDenied: true,
			wantMsg: "expression 'variables.bad == 1' resulted in error: "},
		{name: "failing_variable_unread_is_harmless", a: create, expr: `true`,
			variables: []admission.NamedExpression{{Name: "bad", Expression: `object.spec.replicas`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := celPolicy(t, tt.expr, tt.variables, tt.paramKind, tt.ref, params)
			err := v.Validate(context.Background(), tt.a)
			if !tt.wantDenied {
				if err != nil {
					t.Fatalf("%s: %v, want it to hold", tt.expr, err)
				}
				return
			}
			var st *meta.Status
			want := "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: " + tt.wantMsg
			if !errors.As(err, &st) || !strings.Contains(st.Message, want) {
				t.Fatalf("%s: %v, want a denial containing %q", tt.expr, err, want)
			}
		})
	}
}

// TestPolicyCELCompileErrors: expressions that cannot compile, or
// validations that are not bool, are configuration errors naming the field.
func TestPolicyCELCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		spec      admission.PolicySpec
		wantField string
	}{
		{name: "validation_syntax", spec: admission.PolicySpec{Validations: []admission.Validation{{Expression: "object.("}}},
			wantField: "spec.validations[0].expression"},
		{name: "validation_not_bool", spec: admission.PolicySpec{Validations: []admission.Validation{{Expression: `"yes"`}}},
			wantField: "spec.validations[0].expression"},
		{name: "unknown_variable", spec: admission.PolicySpec{Validations: []admission.Validation{{Expression: `self.x == 1`}}},
			wantField: "spec.validations[0].expression"},
		{name: "message_expression_not_string", spec: admission.PolicySpec{Validations: []admission.Validation{{Expression: "true", MessageExpression: "1"}}},
			wantField: "spec.validations[0].messageExpression"},
		{name: "match_condition_not_bool", spec: admission.PolicySpec{MatchConditions: []admission.NamedExpression{{Name: "c", Expression: `"x"`}}},
			wantField: "spec.matchConditions[0].expression"},
		{name: "variable_syntax", spec: admission.PolicySpec{Variables: []admission.NamedExpression{{Name: "v", Expression: "1 +"}}},
			wantField: "spec.variables[0].expression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := admission.NewValidatingPolicies([]admission.Policy{{Metadata: admission.ObjectMeta{Name: "p"}, Spec: tt.spec}}, nil, admission.PolicyOptions{})
			if !errors.Is(err, admission.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("NewValidatingPolicies: %v, want ErrInvalidConfig naming %s", err, tt.wantField)
			}
		})
	}
}

// TestPolicyMatchConditions: every condition must be true; a false one
// skips the policy even when another fails to evaluate; an evaluation
// error without a false condition is failurePolicy's to decide.
func TestPolicyMatchConditions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		conditions []string
		failure    string
		want       string // "" not applied, else the denial's message contains it
	}{
		{name: "all_true", conditions: []string{"true", `request.operation == "CREATE"`}, want: "denied request: failed expression: false"},
		{name: "one_false", conditions: []string{"true", `request.operation == "DELETE"`}, want: ""},
		{name: "false_wins_over_error", conditions: []string{"object.spec.x == 1", "false"}, want: ""},
		{name: "error_fail", conditions: []string{"object.spec.x == 1"}, want: `failed to evaluate match condition "c0"`},
		{name: "error_ignore", conditions: []string{"object.spec.x == 1"}, failure: "Ignore", want: ""},
		{name: "conditions_see_variables", conditions: []string{`variables.ns == "prod"`}, want: "denied request: failed expression: false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := []string{"*"}
			spec := admission.PolicySpec{
				MatchConstraints: &admission.MatchResources{ResourceRules: []admission.Rule{{Operations: all, APIGroups: all, APIVersions: all, Resources: all}}},
				Variables:        []admission.NamedExpression{{Name: "ns", Expression: "request.namespace"}},
				Validations:      []admission.Validation{{Expression: "false"}},
			}
			for i, c := range tt.conditions {
				spec.MatchConditions = append(spec.MatchConditions, admission.NamedExpression{Name: "c" + string(rune('0'+i)), Expression: c})
			}
			if tt.failure != "" {
				spec.FailurePolicy = ptr(tt.failure)
			}
			v, err := admission.NewValidatingPolicies([]admission.Policy{{Metadata: admission.ObjectMeta{Name: "p"}, Spec: spec}},
				[]admission.Binding{{Metadata: admission.ObjectMeta{Name: "b"}, Spec: admission.BindingSpec{PolicyName: "p", ValidationActions: []string{"Deny"}}}},
				admission.PolicyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = v.Validate(context.Background(), request("CREATE", "prod", "w", "", nil))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v, want the policy skipped", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: %v, want a denial containing %q", err, tt.want)
			}
		})
	}
}

// TestPolicyCELNamespaceReadOnlyWhenUsed: the namespace is looked up only
// for policies whose expressions read namespaceObject (a variable's
// included), and those still see it.
func TestPolicyCELNamespaceReadOnlyWhenUsed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		expr      string
		variables []admission.NamedExpression
		wantGets  bool
	}{
		{name: "object_only", expr: `object.metadata.name == "w" && request.namespace == "prod"`},
		{name: "namespace_object", expr: `namespaceObject.metadata.labels.env == "prod"`, wantGets: true},
		{name: "through_a_variable", expr: `variables.env == "prod"`, wantGets: true,
			variables: []admission.NamedExpression{{Name: "env", Expression: `namespaceObject.metadata.labels.env`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gets := 0
			all := []string{"*"}
			p := admission.Policy{Metadata: admission.ObjectMeta{Name: "p"}, Spec: admission.PolicySpec{
				MatchConstraints: &admission.MatchResources{ResourceRules: []admission.Rule{{
					Operations: all, APIGroups: all, APIVersions: all, Resources: []string{"*"}}}},
				Variables: tt.variables, Validations: []admission.Validation{{Expression: tt.expr}}}}
			b := admission.Binding{Metadata: admission.ObjectMeta{Name: "b"}, Spec: admission.BindingSpec{PolicyName: "p", ValidationActions: []string{"Deny"}}}
			ns := admission.NamespaceGetterFunc(func(ctx context.Context, name string) (map[string]any, error) {
				gets++
				return testNamespaces.GetNamespace(ctx, name)
			})
			v, err := admission.NewValidatingPolicies([]admission.Policy{p}, []admission.Binding{b}, admission.PolicyOptions{Namespaces: ns})
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Validate(context.Background(), request("CREATE", "prod", "w", "", nil)); err != nil {
				t.Fatalf("%s: %v", tt.expr, err)
			}
			if (gets > 0) != tt.wantGets {
				t.Fatalf("%d namespace lookups, want them: %v", gets, tt.wantGets)
			}
		})
	}
}
