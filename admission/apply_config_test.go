package admission

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/annexapi/annex/internal/managedfields"
	"github.com/annexapi/annex/schema"
)

// TestMutatingPolicyApplyConfigurationMergesBySchema checks that a
// MutatingAdmissionPolicy's ApplyConfiguration merges as server-side apply
// does when the attributes carry the resource's merge (rest sets it): an
// x-kubernetes-list-type map list is merged by key, an atomic one replaced;
// without it, maps merge and lists are replaced.
func TestMutatingPolicyApplyConfigurationMergesBySchema(t *testing.T) {
	t.Parallel()
	doc := `
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: add-port}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{ports: [Object.spec.ports{name: "metrics", port: 9090}], args: ["--v=2"]}}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-port}
spec: {policyName: add-port}
`
	mp, err := LoadMutatingPolicies([]byte(doc), PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fm, err := managedfields.New(managedfields.Config{APIVersion: "example.annex.dev/v1", Kind: "Environment", Schema: schema.MustParseYAML(`
type: object
properties:
  spec:
    type: object
    properties:
      owner: {type: string}
      args: {type: array, items: {type: string}}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items: {type: object, properties: {name: {type: string}, port: {type: integer}}}
`)})
	if err != nil {
		t.Fatal(err)
	}
	const obj = `{"metadata":{"name":"e"},"spec":{"owner":"al","args":["--v=1","--x"],"ports":[{"name":"http","port":80}]}}`
	for _, tc := range []struct {
		name  string
		merge func(obj, ac map[string]any) (map[string]any, error)
		want  string
	}{
		{"by_schema", fm.Merge, `{"args":["--v=2"],"owner":"al","ports":[{"name":"http","port":80},{"name":"metrics","port":9090}]}`},
		{"without_schema", nil, `{"args":["--v=2"],"owner":"al","ports":[{"name":"metrics","port":9090}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := envAttrs(Create, obj)
			a.MergeApply = tc.merge
			if err := mp.Mutate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(a.Object["spec"])
			if string(got) != tc.want {
				t.Fatalf("spec = %s, want %s", got, tc.want)
			}
		})
	}
}
