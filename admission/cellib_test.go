// This file tests, through the public API, that Kubernetes' CEL libraries
// (package cellib) reach every expression admission runs: a CRD's
// x-kubernetes-validations, ValidatingAdmissionPolicy validations and
// messageExpressions, and webhooks' matchConditions, with the authorizer
// variable checked by the server's Authorizer.

package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/cellib"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

// TestSchemaRulesUseKubeLibraries: rules as a 1.34 CRD would write them,
// with quantity, url and format, validate and deny through the schema
// validator.
func TestSchemaRulesUseKubeLibraries(t *testing.T) {
	t.Parallel()
	sv, err := admission.NewSchemaValidator(schema.MustParseYAML(`
type: object
properties:
  metadata: {type: object}
  spec:
    type: object
    x-kubernetes-validations:
    - rule: "quantity(self.memory).isLessThan(quantity('2Gi'))"
      message: memory must be less than 2Gi
      fieldPath: .memory
    - rule: "isURL(self.endpoint)"
      message: endpoint must be an absolute URL or path
      fieldPath: .endpoint
    - rule: "!format.dns1123Label().validate(self.name).hasValue()"
      messageExpression: "'name: ' + format.dns1123Label().validate(self.name).value().join('; ')"
    properties:
      memory: {type: string}
      endpoint: {type: string}
      name: {type: string}
`), meta.GroupKind{Group: "example.annex.dev", Kind: "Service"}, admission.SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := func(memory, endpoint, name string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"memory": memory, "endpoint": endpoint, "name": name}}
	}
	cases := []struct {
		name  string
		obj   map[string]any
		field string // "": valid
		msg   string
	}{
		{name: "valid", obj: spec("1536Mi", "https://hooks.example.com/v1", "web")},
		{name: "valid_decimal_memory", obj: spec("2G", "/hooks", "web")}, // 2G < 2Gi
		{name: "memory_too_large", obj: spec("2Gi", "https://hooks.example.com/v1", "web"),
			field: "spec.memory", msg: `Invalid value: "object": memory must be less than 2Gi`},
		{name: "endpoint_relative", obj: spec("1Gi", "../hooks", "web"),
			field: "spec.endpoint", msg: `Invalid value: "object": endpoint must be an absolute URL or path`},
		{name: "name_not_label", obj: spec("1Gi", "/hooks", "a.b"),
			field: "spec", msg: `Invalid value: "object": name: must not contain dots`},
		{name: "memory_not_quantity", obj: spec("lots", "/hooks", "web"),
			field: "spec.memory", msg: "quantities must match the regular expression"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := sv.Causes(context.Background(), tc.obj, nil)
			if tc.field == "" {
				if len(got) != 0 {
					t.Fatalf("causes = %#v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Field != tc.field || !strings.Contains(got[0].Message, tc.msg) {
				t.Fatalf("causes = %#v, want one for %s containing %q", got, tc.field, tc.msg)
			}
		})
	}
}

// TestPolicyUsesKubeLibraries: a ValidatingAdmissionPolicy's validation and
// messageExpression call the quantity, lists and ip libraries.
func TestPolicyUsesKubeLibraries(t *testing.T) {
	t.Parallel()
	v := policyWith(t, admission.Validation{
		Expression:        `quantity(object.spec.memory).compareTo(quantity('1Gi')) <= 0 && object.spec.ports.isSorted() && ip(object.spec.address).isGlobalUnicast()`,
		MessageExpression: `'memory ' + string(quantity(object.spec.memory).asApproximateFloat()) + ' and ports ' + string(object.spec.ports.max())`,
	}, admission.PolicyOptions{})
	widget := func(memory string, ports []any, address string) *admission.Attributes {
		a := request("CREATE", "prod", "w", "", nil)
		a.Object["spec"] = map[string]any{"memory": memory, "ports": ports, "address": address}
		return a
	}
	if err := v.Validate(context.Background(), widget("512Mi", []any{int64(80), int64(443)}, "203.0.113.7")); err != nil {
		t.Fatalf("valid widget: %v", err)
	}
	for _, tc := range []struct {
		name string
		a    *admission.Attributes
		msg  string
	}{
		{"memory", widget("2Gi", []any{int64(80)}, "203.0.113.7"), "memory 2.147483648e+09 and ports 80"},
		{"ports", widget("1Gi", []any{int64(443), int64(80)}, "203.0.113.7"), "memory 1.073741824e+09 and ports 443"},
		{"loopback", widget("1Gi", []any{int64(80)}, "127.0.0.1"), "memory 1.073741824e+09 and ports 80"},
		{"bad_address", widget("1Gi", []any{int64(80)}, "example.com"), `resulted in error: IP Address "example.com" parse error`},
	} {
		err := v.Validate(context.Background(), tc.a)
		var st *meta.Status
		if !errors.As(err, &st) || !strings.Contains(st.Message, tc.msg) {
			t.Errorf("%s: err = %v, want a denial containing %q", tc.name, err, tc.msg)
		}
	}
}

// approvers is the server's authorizer in these tests: alice may approve
// widgets in prod; the reason says who asked what.
type ctxKey struct{}

var approvers = cellib.AuthorizerFunc(func(ctx context.Context, a cellib.Attributes) (cellib.Decision, string, error) {
	if ctx.Value(ctxKey{}) != "request" {
		return cellib.DecisionDeny, "", errors.New("checked outside the request's context")
	}
	asked := a.User.Name + " " + a.Verb + " " + a.APIGroup + "/" + a.Resource + "/" + a.Subresource + " in " + a.Namespace
	if a.User.Name == "alice" && a.Verb == "update" && a.Resource == "widgets" && a.Subresource == "approve" && a.Namespace == "prod" {
		return cellib.DecisionAllow, asked, nil
	}
	return cellib.DecisionNoOpinion, asked, nil
})

// TestPolicyAuthorizerChecks: authorizer and authorizer.requestResource
// are checked through PolicyOptions.Authorizer with the request's user and
// context.
func TestPolicyAuthorizerChecks(t *testing.T) {
	t.Parallel()
	rule := admission.Validation{
		Expression:        `authorizer.group('example.annex.dev').resource('widgets').subresource('approve').namespace(object.metadata.namespace).check('update').allowed()`,
		MessageExpression: `'may not approve: ' + authorizer.requestResource.subresource('approve').check('update').reason()`,
	}
	v := policyWith(t, rule, admission.PolicyOptions{Authorizer: approvers})
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")
	alice := request("CREATE", "prod", "w", "", nil)
	if err := v.Validate(ctx, alice); err != nil {
		t.Fatalf("alice: %v", err)
	}
	bob := request("CREATE", "prod", "w", "", nil)
	bob.User = &filters.User{Name: "bob"}
	err := v.Validate(ctx, bob)
	want := "may not approve: bob update example.annex.dev/widgets/approve in prod"
	var st *meta.Status
	if !errors.As(err, &st) || !strings.Contains(st.Message, want) {
		t.Fatalf("bob: err = %v, want a denial containing %q", err, want)
	}
	// Without an Authorizer, reading the variable is an evaluation error.
	err = policyWith(t, rule, admission.PolicyOptions{}).Validate(ctx, alice)
	if !errors.As(err, &st) || !strings.Contains(st.Message, "resulted in error: no such attribute") {
		t.Fatalf("no authorizer: err = %v, want an evaluation error", err)
	}
}

// TestWebhookMatchConditionAuthorizer: a webhook is called only when its
// matchCondition's authorizer check allows, through WebhookOptions.Authorizer.
func TestWebhookMatchConditionAuthorizer(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	wh := h.hook("hook.example.dev", "/allow")
	wh.MatchConditions = []admission.NamedExpression{{Name: "approver",
		Expression: `authorizer.requestResource.subresource('approve').check('update').allowed()`}}
	hooks, err := admission.NewValidatingWebhooks([]admission.WebhookConfiguration{{Metadata: admission.ObjectMeta{Name: "cfg"},
		Webhooks: []admission.Webhook{wh}}}, admission.WebhookOptions{Namespaces: testNamespaces, Authorizer: approvers})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")
	bob := request("CREATE", "prod", "w", "", nil)
	bob.User = &filters.User{Name: "bob"}
	if err := hooks.Validate(ctx, bob); err != nil || h.count("/allow") != 0 {
		t.Fatalf("bob: err = %v, calls = %d; want the webhook skipped", err, h.count("/allow"))
	}
	if err := hooks.Validate(ctx, request("CREATE", "prod", "w", "", nil)); err != nil || h.count("/allow") != 1 {
		t.Fatalf("alice: err = %v, calls = %d; want the webhook called", err, h.count("/allow"))
	}
}

// policyWith is a ValidatingAdmissionPolicy of one validation for every
// write, bound with Deny.
func policyWith(t *testing.T, v admission.Validation, opts admission.PolicyOptions) *admission.ValidatingPolicies {
	t.Helper()
	all := []string{"*"}
	p := admission.Policy{Metadata: admission.ObjectMeta{Name: "p"}, Spec: admission.PolicySpec{
		MatchConstraints: &admission.MatchResources{ResourceRules: []admission.Rule{{
			Operations: all, APIGroups: all, APIVersions: all, Resources: []string{"*", "*/*"}}}},
		Validations: []admission.Validation{v},
	}}
	b := admission.Binding{Metadata: admission.ObjectMeta{Name: "b"}, Spec: admission.BindingSpec{
		PolicyName: "p", ValidationActions: []string{"Deny"}}}
	opts.Namespaces = testNamespaces
	vp, err := admission.NewValidatingPolicies([]admission.Policy{p}, []admission.Binding{b}, opts)
	if err != nil {
		t.Fatalf("NewValidatingPolicies: %v", err)
	}
	return vp
}
