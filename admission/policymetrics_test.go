package admission_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/annexapi/annex/admission"
)

// TestPolicyMetrics: a denial, a warning and an evaluation error ignored
// under failurePolicy Ignore are counted in kube's
// apiserver_validating_admission_policy_check_total and timed in its
// check_duration_seconds, with kube's labels (enforcement_action deny,
// warn, and allow for the ignored error).
func TestPolicyMetrics(t *testing.T) {
	t.Parallel()
	all := []string{"*"}
	match := &admission.MatchResources{ResourceRules: []admission.Rule{{Operations: all, APIGroups: all, APIVersions: all, Resources: []string{"*"}}}}
	ignore := "Ignore"
	policies := []admission.Policy{
		{Metadata: admission.ObjectMeta{Name: "no-red"}, Spec: admission.PolicySpec{MatchConstraints: match,
			Validations: []admission.Validation{{Expression: "object.spec.color != 'red'", Message: "not red"}}}},
		{Metadata: admission.ObjectMeta{Name: "broken"}, Spec: admission.PolicySpec{MatchConstraints: match, FailurePolicy: &ignore,
			Validations: []admission.Validation{{Expression: "object.spec.missing == 1"}}}},
	}
	bindings := []admission.Binding{
		{Metadata: admission.ObjectMeta{Name: "no-red-deny"}, Spec: admission.BindingSpec{PolicyName: "no-red", ValidationActions: []string{"Deny"}}},
		{Metadata: admission.ObjectMeta{Name: "no-red-warn"}, Spec: admission.BindingSpec{PolicyName: "no-red", ValidationActions: []string{"Warn"}}},
		{Metadata: admission.ObjectMeta{Name: "broken-deny"}, Spec: admission.BindingSpec{PolicyName: "broken", ValidationActions: []string{"Deny"}}},
	}
	v, err := admission.NewValidatingPolicies(policies, bindings, admission.PolicyOptions{Namespaces: testNamespaces})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	chain, err := admission.New(admission.Config{Validators: []admission.Validator{v}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.Validate(context.Background(), request("CREATE", "prod", "w", "", map[string]any{"color": "red"})); err == nil {
		t.Fatal("a red object was admitted")
	}
	want := `
# HELP apiserver_validating_admission_policy_check_total Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.
# TYPE apiserver_validating_admission_policy_check_total counter
apiserver_validating_admission_policy_check_total{enforcement_action="allow",error_type="invalid_error",policy="broken",policy_binding="broken-deny"} 1
apiserver_validating_admission_policy_check_total{enforcement_action="deny",error_type="invalid_error",policy="no-red",policy_binding="no-red-deny"} 1
apiserver_validating_admission_policy_check_total{enforcement_action="warn",error_type="invalid_error",policy="no-red",policy_binding="no-red-warn"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_validating_admission_policy_check_total"); err != nil {
		t.Error(err)
	}
	for _, labels := range []string{
		`enforcement_action="allow",error_type="invalid_error",policy="broken",policy_binding="broken-deny"`,
		`enforcement_action="deny",error_type="invalid_error",policy="no-red",policy_binding="no-red-deny"`,
		`enforcement_action="warn",error_type="invalid_error",policy="no-red",policy_binding="no-red-warn"`,
	} {
		if n := histogramCount(t, reg, "apiserver_validating_admission_policy_check_duration_seconds", labels); n != 1 {
			t.Errorf("check_duration_seconds{%s} has %d observations, want 1", labels, n)
		}
	}
}

// histogramCount is the sample count of the histogram name whose labels,
// written as in the text format sorted by name, are labels.
func histogramCount(t *testing.T, reg *prometheus.Registry, name, labels string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var parts []string
			for _, l := range m.GetLabel() {
				parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if strings.Join(parts, ",") == labels {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}
