package admission

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

const envSchema = `
type: object
properties:
  metadata: {type: object}
  spec:
    type: object
    required: [owner]
    x-kubernetes-validations:
    - rule: "!has(self.replicas) || self.replicas <= 5 || (has(self.tier) && self.tier == 'prod')"
      message: only prod may run more than 5 replicas
      fieldPath: .replicas
    - rule: "!has(oldSelf.tier) || self.tier == oldSelf.tier || oldSelf.tier != 'prod'"
      messageExpression: "'tier is immutable once prod, was ' + oldSelf.tier"
      reason: FieldValueForbidden
    properties:
      owner: {type: string, minLength: 1, pattern: '^[a-z]+$'}
      tier: {type: string, enum: [dev, staging, prod], default: dev}
      replicas: {type: integer, minimum: 1, maximum: 10}
      email: {type: string, format: email}
      port: {x-kubernetes-int-or-string: true}
      cidr: {type: string, format: cidr}
      tags:
        type: array
        maxItems: 3
        x-kubernetes-list-type: set
        items: {type: string}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          properties:
            name: {type: string}
            port: {type: integer}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
`

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSchemaValidator(t *testing.T) {
	t.Parallel()
	sv, err := NewSchemaValidator(schema.MustParseYAML(envSchema), meta.GroupKind{Group: "example.annex.dev", Kind: "Environment"}, SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		obj  string
		old  string
		want []meta.StatusCause // nil: valid
	}{
		{name: "valid", obj: `{"metadata":{"name":"a"},"spec":{"owner":"al","tier":"dev","replicas":3,"port":"http","tags":["a","b"]}}`},
		{name: "required", obj: `{"spec":{"tier":"dev"}}`,
			want: []meta.StatusCause{{Type: "FieldValueRequired", Field: "spec.owner", Message: "Required value"}, {Type: "FieldValueInvalid", Field: "<nil>", Message: `Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`}}},
		{name: "minimum", obj: `{"spec":{"owner":"al","replicas":0}}`,
			want: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.replicas", Message: "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"}}},
		{name: "maximum", obj: `{"spec":{"owner":"al","replicas":11,"tier":"prod"}}`,
			want: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.replicas", Message: "Invalid value: 11: spec.replicas in body should be less than or equal to 10"}}},
		{name: "enum", obj: `{"spec":{"owner":"al","tier":"qa"}}`,
			want: []meta.StatusCause{{Type: "FieldValueNotSupported", Field: "spec.tier", Message: `Unsupported value: "qa": supported values: "dev", "staging", "prod"`}, {Type: "FieldValueInvalid", Field: "<nil>", Message: `Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`}}},
		{name: "type", obj: `{"spec":{"owner":"al","replicas":"three"}}`,
			want: []meta.StatusCause{{Type: "FieldValueTypeInvalid", Field: "spec.replicas", Message: `Invalid value: "string": spec.replicas in body must be of type integer: "string"`},
				{Type: "FieldValueInvalid", Field: "<nil>", Message: `Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`}}},
		{name: "pattern", obj: `{"spec":{"owner":"Al"}}`,
			want: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.owner", Message: `Invalid value: "Al": spec.owner in body should match '^[a-z]+$'`}}},
		{name: "format", obj: `{"spec":{"owner":"al","email":"nope"}}`,
			want: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.email", Message: `Invalid value: "nope": spec.email in body must be of type email: "nope"`}}},
		{name: "kube_format_cidr", obj: `{"spec":{"owner":"al","cidr":"10.0.0.0"}}`,
			want: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.cidr", Message: `Invalid value: "10.0.0.0": spec.cidr in body must be of type cidr: "10.0.0.0"`}}},
		{name: "int_or_string", obj: `{"spec":{"owner":"al","port":true}}`,
			want: []meta.StatusCause{{Type: "FieldValueTypeInvalid", Field: "spec.port", Message: `Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`},
				{Type: "FieldValueInvalid", Field: "<nil>", Message: `Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`}}},
		{name: "max_items", obj: `{"spec":{"owner":"al","tags":["a","b","c","d"]}}`,
			want: []meta.StatusCause{{Type: "FieldValueTooMany", Field: "spec.tags", Message: "Too many: 4: must have at most 3 items"}, {Type: "FieldValueInvalid", Field: "<nil>", Message: `Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`}}},
		{name: "list_set_duplicate", obj: `{"spec":{"owner":"al","tags":["a","a"]}}`,
			want: []meta.StatusCause{{Type: "FieldValueDuplicate", Field: "spec.tags[1]", Message: `Duplicate value: "a"`}}},
		{name: "list_map_duplicate_key", obj: `{"spec":{"owner":"al","ports":[{"name":"a","port":1},{"name":"a","port":2}]}}`,
			want: []meta.StatusCause{{Type: "FieldValueDuplicate", Field: "spec.ports[1]", Message: `Duplicate value: map[string]interface {}{"name":"a"}`}}},
		{name: "embedded_resource", obj: `{"spec":{"owner":"al","template":{"metadata":{}}}}`,
			want: []meta.StatusCause{
				{Type: "FieldValueRequired", Field: "spec.template.apiVersion", Message: "Required value: must not be empty"},
				{Type: "FieldValueRequired", Field: "spec.template.kind", Message: "Required value: must not be empty"}}},
		{name: "cel_rule_with_field_path", obj: `{"spec":{"owner":"al","tier":"dev","replicas":7}}`,
			want: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.replicas", Message: `Invalid value: "object": only prod may run more than 5 replicas`}}},
		{name: "cel_transition_rule_skipped_on_create", obj: `{"spec":{"owner":"al","tier":"dev"}}`},
		{name: "cel_transition_rule_message_expression", obj: `{"spec":{"owner":"al","tier":"dev"}}`, old: `{"spec":{"owner":"al","tier":"prod"}}`,
			want: []meta.StatusCause{{Type: "FieldValueForbidden", Field: "spec", Message: "Forbidden: tier is immutable once prod, was prod"}}},
		{name: "cel_transition_rule_passes", obj: `{"spec":{"owner":"al","tier":"prod"}}`, old: `{"spec":{"owner":"al","tier":"dev"}}`},
		{name: "metadata_not_schema_validated", obj: `{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"owner":"al"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var old map[string]any
			if tc.old != "" {
				old = decode(t, tc.old)
			}
			got := sv.Causes(context.Background(), decode(t, tc.obj), old)
			if len(got) != len(tc.want) {
				t.Fatalf("causes = %#v, want %#v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("cause %d = %#v, want %#v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestSchemaValidatorStatus(t *testing.T) {
	t.Parallel()
	sv, err := NewSchemaValidator(schema.MustParseYAML(envSchema), meta.GroupKind{Group: "example.annex.dev", Kind: "Environment"}, SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = sv.Validate(context.Background(), decode(t, `{"spec":{"replicas":0}}`), nil, "dev")
	var st *meta.Status
	if !errors.As(err, &st) {
		t.Fatalf("err = %v, want *meta.Status", err)
	}
	want := `Environment.example.annex.dev "dev" is invalid: [spec.owner: Required value, spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1, <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`
	if st.Code != 422 || st.Reason != meta.StatusReasonInvalid || st.Message != want {
		t.Fatalf("status = %d %s %q\nwant %q", st.Code, st.Reason, st.Message, want)
	}
	if len(st.Details.Causes) != 3 || st.Details.Kind != "Environment" || st.Details.Group != "example.annex.dev" {
		t.Fatalf("details = %+v", st.Details)
	}
}

func TestSchemaCELCostBudget(t *testing.T) {
	t.Parallel()
	p := schema.MustParseYAML(`
type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c != 'x')))"
    properties:
      items: {type: array, items: {type: string}}
`)
	sv, err := NewSchemaValidator(p, meta.GroupKind{Kind: "Blob"}, SchemaOptions{RuntimeBudget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 30)
	for i := range items {
		items[i] = "abc"
	}
	got := sv.Causes(context.Background(), map[string]any{"spec": map[string]any{"items": items}}, nil)
	want := `Invalid value: "object": validation failed due to running out of cost budget, no further validation rules will be run`
	if len(got) != 1 || got[0].Message != want || got[0].Field != "spec" {
		t.Fatalf("causes = %#v", got)
	}
}

func TestSchemaCompileErrors(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"bad_rule":     "type: object\nx-kubernetes-validations: [{rule: 'self.'}]\n",
		"non_bool":     "type: object\nx-kubernetes-validations: [{rule: '1 + 1'}]\n",
		"bad_msg_expr": "type: object\nx-kubernetes-validations: [{rule: 'true', messageExpression: '1'}]\n",
		"bad_pattern":  "type: string\npattern: '(['\n",
	} {
		if _, err := NewSchemaValidator(schema.MustParseYAML(doc), meta.GroupKind{Kind: "X"}, SchemaOptions{}); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("%s: err = %v, want ErrInvalidSchema", name, err)
		}
	}
}
