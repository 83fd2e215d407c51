package admission

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

type recorder struct {
	mu          sync.Mutex
	warnings    []string
	annotations map[string]string
}

func newRecorderCtx() (context.Context, *recorder) {
	r := &recorder{annotations: map[string]string{}}
	ctx := filters.ContextWithWarningRecorder(context.Background(), filters.WarningRecorderFunc(func(s string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.warnings = append(r.warnings, s)
	}))
	ctx = filters.ContextWithAuditAnnotationRecorder(ctx, filters.AuditAnnotationRecorderFunc(func(k, v string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.annotations[k] = v
	}))
	return ctx, r
}

func envAttrs(op string, obj string) *Attributes {
	return &Attributes{Operation: op, Group: "example.annex.dev", Version: "v1", Resource: "environments", Kind: "Environment",
		Namespace: "default", Object: decodeT(obj), User: &filters.User{Name: "alice", Groups: []string{"devs"}}}
}

func decodeT(s string) map[string]any {
	if s == "" {
		return nil
	}
	return decode(&testing.T{}, s)
}

func exampleChain(t testing.TB) *Chain {
	t.Helper()
	read := func(n string) []byte {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	s, err := schema.ParseYAML(read("environment-schema.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vap, err := LoadValidatingPolicies(read("environment-policies.yaml"), PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := LoadMutatingPolicies(read("environment-mutating.yaml"), PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{
		Resources:  []Resource{{Group: "example.annex.dev", Version: "v1", Resource: "environments", Kind: "Environment", Schema: s}},
		Mutators:   []Mutator{mp},
		Validators: []Validator{vap},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnvironmentsExample(t *testing.T) {
	t.Parallel()
	c := exampleChain(t)
	cases := []struct {
		name      string
		obj       string
		wantCode  int32
		wantMsg   string
		wantLabel string
	}{
		{name: "valid_dev_gets_default_label", obj: `{"metadata":{"name":"dev1"},"spec":{"owner":"al","tier":"dev","replicas":1}}`, wantLabel: "annex"},
		{name: "existing_label_kept", obj: `{"metadata":{"name":"dev2","labels":{"managed-by":"me"}},"spec":{"owner":"al","tier":"dev","replicas":1}}`, wantLabel: "me"},
		{name: "schema_error", obj: `{"metadata":{"name":"bad"},"spec":{"tier":"qa","replicas":0}}`, wantCode: 422,
			wantMsg: `Environment.example.annex.dev "bad" is invalid: [spec.owner: Required value, spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1, spec.tier: Unsupported value: "qa": supported values: "dev", "staging", "prod", <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`},
		{name: "cel_rule", obj: `{"metadata":{"name":"p"},"spec":{"owner":"al","tier":"prod","replicas":1}}`, wantCode: 422,
			wantMsg: `Environment.example.annex.dev "p" is invalid: spec.replicas: Invalid value: "object": prod environments need at least 2 replicas`},
		{name: "policy_denies_prod_without_owner", obj: `{"metadata":{"name":"p"},"spec":{"owner":"al","tier":"prod","replicas":2}}`, wantCode: 403,
			wantMsg: `environments.example.annex.dev "p" is forbidden: ValidatingAdmissionPolicy 'prod-needs-owner-label' with binding 'prod-needs-owner-label' denied request: prod environment p needs an owner label`},
		{name: "policy_allows_prod_with_owner", obj: `{"metadata":{"name":"p","labels":{"owner":"al"}},"spec":{"owner":"al","tier":"prod","replicas":2}}`, wantLabel: "annex"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := envAttrs(Create, tc.obj)
			err := c.Mutate(context.Background(), a)
			if err == nil {
				if causes := c.CheckSchema(context.Background(), a, nil); len(causes) > 0 {
					err = meta.NewInvalid(meta.GroupKind{Group: a.Group, Kind: a.Kind}, a.ObjectName(), causes)
				}
			}
			if err == nil {
				err = c.Validate(context.Background(), a)
			}
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if got := labelsOf(a.Object)["managed-by"]; got != tc.wantLabel {
					t.Fatalf("managed-by = %q, want %q (object %v)", got, tc.wantLabel, a.Object)
				}
				return
			}
			var st *meta.Status
			if !errors.As(err, &st) {
				t.Fatalf("err = %v, want a Status", err)
			}
			if st.Code != tc.wantCode || st.Message != tc.wantMsg {
				t.Fatalf("got %d %q\nwant %d %q", st.Code, st.Message, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestValidatingPolicyActions(t *testing.T) {
	t.Parallel()
	doc := `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  paramKind: {apiVersion: example.annex.dev/v1, kind: Limits}
  matchConstraints:
    resourceRules: [{apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}]
  matchConditions:
  - name: not-system
    expression: "!request.userInfo.username.startsWith('system:')"
  variables:
  - name: replicas
    expression: "object.spec.replicas"
  validations:
  - expression: "variables.replicas <= params.max"
    message: too many replicas
  - expression: "object.spec.owner == 'x'"
  auditAnnotations:
  - key: replicas
    valueExpression: "string(variables.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: warn}
spec:
  policyName: max-replicas
  paramRef: {name: small, parameterNotFoundAction: Deny}
  validationActions: [Warn, Audit]
---
apiVersion: example.annex.dev/v1
kind: Limits
metadata: {name: small, namespace: default}
max: 2
`
	vp, err := LoadValidatingPolicies([]byte(doc), PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, rec := newRecorderCtx()
	a := envAttrs(Create, `{"metadata":{"name":"e"},"spec":{"owner":"al","replicas":3}}`)
	if err := vp.Validate(ctx, a); err != nil {
		t.Fatalf("Warn+Audit must not deny: %v", err)
	}
	want := []string{
		"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn': too many replicas",
		"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn': failed expression: object.spec.owner == 'x'",
	}
	if strings.Join(rec.warnings, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings = %q", rec.warnings)
	}
	if got := rec.annotations["max-replicas/replicas"]; got != "3" {
		t.Fatalf("audit annotation = %q (all %v)", got, rec.annotations)
	}
	if got := rec.annotations["validation.policy.admission.k8s.io/validation_failure"]; !strings.Contains(got, `"binding":"warn"`) {
		t.Fatalf("validation_failure annotation = %q", got)
	}
	// matchConditions false: nothing happens.
	ctx, rec = newRecorderCtx()
	a.User = &filters.User{Name: "system:admin"}
	if err := vp.Validate(ctx, a); err != nil || len(rec.warnings) != 0 {
		t.Fatalf("excluded by matchCondition: err=%v warnings=%v", err, rec.warnings)
	}
	// Missing param with Deny.
	a = envAttrs(Create, `{"metadata":{"name":"e"},"spec":{"owner":"al","replicas":3}}`)
	a.Namespace = "other"
	err = vp.Validate(context.Background(), a)
	var st *meta.Status
	if !errors.As(err, &st) || !strings.Contains(st.Message, "no params found for policy binding with `Deny` parameterNotFoundAction") || st.Code != 422 {
		t.Fatalf("err = %v", err)
	}
}

func TestValidatingPolicyBudgetAndFailurePolicy(t *testing.T) {
	t.Parallel()
	mk := func(fp string) *ValidatingPolicies {
		p := Policy{Metadata: ObjectMeta{Name: "slow"}, Spec: PolicySpec{FailurePolicy: &fp,
			MatchConstraints: &MatchResources{ResourceRules: []Rule{{Operations: []string{"*"}, APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}},
			Validations:      []Validation{{Expression: "object.spec.items.all(a, object.spec.items.all(b, object.spec.items.all(c, a + b + c != 'x')))"}}}}
		b := Binding{Metadata: ObjectMeta{Name: "b"}, Spec: BindingSpec{PolicyName: "slow", ValidationActions: []string{"Deny"}}}
		vp, err := NewValidatingPolicies([]Policy{p}, []Binding{b}, PolicyOptions{Budget: 5000})
		if err != nil {
			t.Fatal(err)
		}
		return vp
	}
	items := make([]any, 40)
	for i := range items {
		items[i] = "abc"
	}
	a := &Attributes{Operation: Create, Resource: "things", Name: "t", Object: map[string]any{"spec": map[string]any{"items": items}}}
	err := mk("Fail").Validate(context.Background(), a)
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'slow' with binding 'b' denied request: validation failed due to running out of cost budget") {
		t.Fatalf("Fail: err = %v", err)
	}
	if err := mk("Ignore").Validate(context.Background(), a); err != nil {
		t.Fatalf("Ignore: err = %v", err)
	}
}

func TestMutatingPolicyJSONPatch(t *testing.T) {
	t.Parallel()
	doc := `
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: add-annotation}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "add", path: "/spec/replicas", value: 3},
         JSONPatch{op: "add", path: "/metadata/annotations", value: {"by": request.userInfo.username}}]
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-annotation}
spec: {policyName: add-annotation}
`
	mp, err := LoadMutatingPolicies([]byte(doc), PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := envAttrs(Create, `{"metadata":{"name":"e"},"spec":{"owner":"al"}}`)
	if err := mp.Mutate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	spec := a.Object["spec"].(map[string]any)
	md := a.Object["metadata"].(map[string]any)
	if spec["replicas"] == nil || spec["replicas"].(interface{ String() string }).String() != "3" || md["annotations"].(map[string]any)["by"] != "alice" {
		t.Fatalf("object = %v", a.Object)
	}
	// Update is not matched.
	b := envAttrs(Update, `{"metadata":{"name":"e"},"spec":{"owner":"al"}}`)
	if err := mp.Mutate(context.Background(), b); err != nil || b.Object["spec"].(map[string]any)["replicas"] != nil {
		t.Fatalf("update mutated: %v %v", err, b.Object)
	}
}

func TestPolicyConfigErrors(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"bad_expression": "kind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec: {validations: [{expression: 'object.'}]}\n",
		"unknown_field":  "kind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec: {validationz: []}\n",
		"unknown_policy": "kind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: nope, validationActions: [Deny]}\n",
		"deny_and_warn":  "kind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec: {}\n---\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, validationActions: [Deny, Warn]}\n",
		"no_actions":     "kind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec: {}\n---\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p}\n",
	} {
		if _, err := LoadValidatingPolicies([]byte(doc), PolicyOptions{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
}
