package schema_test

import (
	"strings"
	"testing"

	"github.com/annexapi/annex/schema"
)

// TestValidateStructural: the schemas the CRD API refuses are refused with
// its messages; a good one passes.
func TestValidateStructural(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       []string // "" means valid
	}{
		{"valid", `type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, default: 1}
      size: {x-kubernetes-int-or-string: true, default: "1Gi"}
      tags: {type: array, items: {type: string}}
      free: {type: object, x-kubernetes-preserve-unknown-fields: true}
      ratio: {type: number, default: 2}
`, nil},
		{"property_without_type", "type: object\nproperties:\n  spec:\n    properties:\n      a: {type: string}\n",
			[]string{"openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"}},
		{"items_without_type", "type: object\nproperties:\n  tags:\n    type: array\n    items: {}\n",
			[]string{"openAPIV3Schema.properties[tags].items.type: Required value: must not be empty for specified array items"}},
		{"array_without_items", "type: object\nproperties:\n  tags: {type: array}\n",
			[]string{"openAPIV3Schema.properties[tags].items: Required value: must be specified"}},
		{"root_not_object", "type: string\n", []string{`openAPIV3Schema.type: Invalid value: "string": must be object at the root`}},
		{"root_without_type", "properties:\n  a: {type: string}\n", []string{"openAPIV3Schema.type: Required value: must not be empty at the root"}},
		{"root_additional_properties", "type: object\nadditionalProperties: {type: string}\n",
			[]string{"openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root"}},
		{"string_default_on_integer", "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      replicas: {type: integer, default: \"three\"}\n",
			[]string{`openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{"bad_pattern", "type: object\nproperties:\n  a: {type: string, pattern: \"([\"}\n",
			[]string{"openAPIV3Schema.properties[a].pattern: Invalid value: \"([\": must be a valid regular expression, but isn't"}},
		{"kind_not_string", "type: object\nproperties:\n  kind: {type: integer}\n",
			[]string{`openAPIV3Schema.properties[kind].type: Invalid value: "integer": must be string`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := schema.ParseYAML([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			errs := schema.ValidateStructural(p)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %v, want %d errors %v", errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("error %d: %q\nwant prefix %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}
