package admission

import (
	"context"
	"slices"
	"testing"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

// ratchetSchema has a rule on each kind of node: an object, a field, an
// atomic list's items, a set's items, a map list's items, and a transition
// rule (which reads oldSelf, and so is never ratcheted).
const ratchetSchema = `
type: object
properties:
  metadata: {type: object}
  spec:
    type: object
    x-kubernetes-validations:
    - {rule: "!has(self.replicas) || !has(self.maxReplicas) || self.replicas <= self.maxReplicas", message: replicas above maxReplicas}
    properties:
      replicas: {type: integer}
      maxReplicas: {type: integer}
      name:
        type: string
        x-kubernetes-validations: [{rule: "self.startsWith('ok-')", message: must start with ok-}]
      frozen:
        type: string
        x-kubernetes-validations: [{rule: "self != oldSelf || self == 'fixed'", message: may only stay as it is when fixed}]
      atomic:
        type: array
        items: {type: string, x-kubernetes-validations: [{rule: "self.size() < 4", message: too long}]}
      set:
        type: array
        x-kubernetes-list-type: set
        items: {type: string, x-kubernetes-validations: [{rule: "self.size() < 4", message: too long}]}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          x-kubernetes-validations: [{rule: "self.port < 1000", message: privileged port}]
          properties: {name: {type: string}, port: {type: integer}}
`

// TestRuleRatcheting is CRD validation ratcheting for x-kubernetes-validations
// (GA in kube 1.33): on update, a rule that does not read oldSelf and fails
// on a value the update left as it was (its own value, or that of its
// nearest ancestor that correlates with the old object) gives a warning, not
// an error.
func TestRuleRatcheting(t *testing.T) {
	t.Parallel()
	sv, err := NewSchemaValidator(schema.MustParseYAML(ratchetSchema), meta.GroupKind{Group: "example.annex.dev", Kind: "Thing"}, SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		nameErr   = `spec.name: Invalid value: "string": must start with ok-`
		specErr   = `spec: Invalid value: "object": replicas above maxReplicas`
		frozenErr = `spec.frozen: Invalid value: "string": may only stay as it is when fixed`
	)
	cases := []struct {
		name     string
		old, obj string
		errs     []string // field: message of each error
		warnings []string
	}{
		{name: "create_enforces", obj: `{"spec":{"name":"bad"}}`, errs: []string{nameErr}},
		{name: "unchanged_field_ratchets", old: `{"spec":{"name":"bad","replicas":1}}`, obj: `{"spec":{"name":"bad","replicas":2}}`,
			warnings: []string{nameErr}},
		{name: "changed_field_enforced", old: `{"spec":{"name":"bad"}}`, obj: `{"spec":{"name":"worse"}}`, errs: []string{nameErr}},
		{name: "fixed_field_passes", old: `{"spec":{"name":"bad"}}`, obj: `{"spec":{"name":"ok-now"}}`},
		{name: "new_field_enforced", old: `{"spec":{"replicas":1}}`, obj: `{"spec":{"replicas":1,"name":"bad"}}`, errs: []string{nameErr}},
		{name: "object_rule_on_changed_object_enforced", old: `{"spec":{"replicas":5,"maxReplicas":3}}`, obj: `{"spec":{"replicas":5,"maxReplicas":3,"name":"ok-a"}}`,
			errs: []string{specErr}},
		{name: "object_rule_on_unchanged_object_ratchets", old: `{"metadata":{"labels":{"a":"1"}},"spec":{"replicas":5,"maxReplicas":3}}`,
			obj: `{"metadata":{"labels":{"a":"2"}},"spec":{"replicas":5,"maxReplicas":3}}`, warnings: []string{specErr}},
		{name: "transition_rule_never_ratcheted", old: `{"spec":{"frozen":"x"}}`, obj: `{"spec":{"frozen":"x"}}`, errs: []string{frozenErr}},
		{name: "atomic_list_unchanged_ratchets", old: `{"spec":{"atomic":["long"],"replicas":1}}`, obj: `{"spec":{"atomic":["long"],"replicas":2}}`,
			warnings: []string{`spec.atomic[0]: Invalid value: "string": too long`}},
		{name: "atomic_list_changed_enforces_kept_item", old: `{"spec":{"atomic":["long"]}}`, obj: `{"spec":{"atomic":["long","ok"]}}`,
			errs: []string{`spec.atomic[0]: Invalid value: "string": too long`}},
		{name: "set_item_kept_ratchets", old: `{"spec":{"set":["long"]}}`, obj: `{"spec":{"set":["ok","long"]}}`,
			warnings: []string{`spec.set[1]: Invalid value: "string": too long`}},
		{name: "set_item_new_enforced", old: `{"spec":{"set":["ok"]}}`, obj: `{"spec":{"set":["ok","long"]}}`,
			errs: []string{`spec.set[1]: Invalid value: "string": too long`}},
		{name: "map_list_entry_kept_ratchets", old: `{"spec":{"ports":[{"name":"a","port":2000}]}}`, obj: `{"spec":{"ports":[{"name":"b","port":80},{"name":"a","port":2000}]}}`,
			warnings: []string{`spec.ports[1]: Invalid value: "object": privileged port`}},
		{name: "map_list_entry_changed_enforced", old: `{"spec":{"ports":[{"name":"a","port":2000}]}}`, obj: `{"spec":{"ports":[{"name":"a","port":3000}]}}`,
			errs: []string{`spec.ports[0]: Invalid value: "object": privileged port`}},
		{name: "map_list_entry_new_enforced", old: `{"spec":{"ports":[]}}`, obj: `{"spec":{"ports":[{"name":"a","port":2000}]}}`,
			errs: []string{`spec.ports[0]: Invalid value: "object": privileged port`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var warnings []string
			ctx := filters.ContextWithWarningRecorder(context.Background(), filters.WarningRecorderFunc(func(s string) { warnings = append(warnings, s) }))
			var old map[string]any
			if c.old != "" {
				old = decode(t, c.old)
			}
			var errs []string
			for _, cause := range sv.Causes(ctx, decode(t, c.obj), old) {
				errs = append(errs, cause.Field+": "+cause.Message)
			}
			if !slices.Equal(errs, c.errs) {
				t.Errorf("errors:\n got %q\nwant %q", errs, c.errs)
			}
			if !slices.Equal(warnings, c.warnings) {
				t.Errorf("warnings:\n got %q\nwant %q", warnings, c.warnings)
			}
		})
	}
}
