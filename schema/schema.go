// This file holds Props, the JSONSchemaProps of apiextensions.k8s.io/v1, and
// its parsing.

package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Props is one schema node, with the JSON names of JSONSchemaProps.
type Props struct {
	ID          string `json:"id,omitempty"`
	Ref         string `json:"$ref,omitempty"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
	Format      string `json:"format,omitempty"`
	Title       string `json:"title,omitempty"`
	// Default is the value defaulting fills in, as JSON.
	Default          json.RawMessage `json:"default,omitempty"`
	Maximum          *float64        `json:"maximum,omitempty"`
	ExclusiveMaximum bool            `json:"exclusiveMaximum,omitempty"`
	Minimum          *float64        `json:"minimum,omitempty"`
	ExclusiveMinimum bool            `json:"exclusiveMinimum,omitempty"`
	MaxLength        *int64          `json:"maxLength,omitempty"`
	MinLength        *int64          `json:"minLength,omitempty"`
	Pattern          string          `json:"pattern,omitempty"`
	MaxItems         *int64          `json:"maxItems,omitempty"`
	MinItems         *int64          `json:"minItems,omitempty"`
	UniqueItems      bool            `json:"uniqueItems,omitempty"`
	MultipleOf       *float64        `json:"multipleOf,omitempty"`
	// Enum values, as JSON.
	Enum          []json.RawMessage `json:"enum,omitempty"`
	MaxProperties *int64            `json:"maxProperties,omitempty"`
	MinProperties *int64            `json:"minProperties,omitempty"`
	Required      []string          `json:"required,omitempty"`
	// Items is the schema of array items (the single-schema form; a CRD
	// schema never uses the tuple form).
	Items                *Props           `json:"items,omitempty"`
	AllOf                []Props          `json:"allOf,omitempty"`
	OneOf                []Props          `json:"oneOf,omitempty"`
	AnyOf                []Props          `json:"anyOf,omitempty"`
	Not                  *Props           `json:"not,omitempty"`
	Properties           map[string]Props `json:"properties,omitempty"`
	AdditionalProperties *PropsOrBool     `json:"additionalProperties,omitempty"`
	Nullable             bool             `json:"nullable,omitempty"`

	// XPreserveUnknownFields keeps fields the schema does not name (no
	// pruning below this node).
	XPreserveUnknownFields *bool `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
	// XEmbeddedResource marks an embedded object with apiVersion, kind and
	// metadata.
	XEmbeddedResource bool `json:"x-kubernetes-embedded-resource,omitempty"`
	// XIntOrString accepts an integer or a string.
	XIntOrString bool `json:"x-kubernetes-int-or-string,omitempty"`
	// XListMapKeys, XListType ("atomic", "set", "map") and XMapType
	// ("granular", "atomic") describe merge semantics.
	XListMapKeys []string `json:"x-kubernetes-list-map-keys,omitempty"`
	XListType    *string  `json:"x-kubernetes-list-type,omitempty"`
	XMapType     *string  `json:"x-kubernetes-map-type,omitempty"`
	// XValidations are CEL rules evaluated against this node.
	XValidations []ValidationRule `json:"x-kubernetes-validations,omitempty"`
}

// PropsOrBool is additionalProperties: a schema, or a bool.
type PropsOrBool struct {
	Allows bool
	Schema *Props
}

// MarshalJSON writes the schema, or the bool when there is no schema.
func (p PropsOrBool) MarshalJSON() ([]byte, error) {
	if p.Schema != nil {
		return json.Marshal(p.Schema)
	}
	return json.Marshal(p.Allows)
}

// UnmarshalJSON reads a schema (which allows) or a bool.
func (p *PropsOrBool) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		p.Allows, p.Schema = true, &Props{}
		return json.Unmarshal(b, p.Schema)
	}
	p.Schema = nil
	return json.Unmarshal(b, &p.Allows)
}

// ValidationRule is one x-kubernetes-validations entry.
type ValidationRule struct {
	Rule              string `json:"rule"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
	// Reason is FieldValueInvalid (default), FieldValueForbidden,
	// FieldValueRequired or FieldValueDuplicate.
	Reason          string `json:"reason,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
	OptionalOldSelf *bool  `json:"optionalOldSelf,omitempty"`
}

// ErrInvalidSchema is returned when a schema does not parse.
var ErrInvalidSchema = errors.New("invalid schema")

// ParseJSON parses a schema from JSON; unknown fields are an error, so a
// misspelt keyword does not silently weaken validation.
func ParseJSON(data []byte) (*Props, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Props
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &p, nil
}

// ParseYAML parses a schema from YAML (or JSON, a subset of YAML), with the
// same strictness as ParseJSON.
func ParseYAML(data []byte) (*Props, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	j, err := json.Marshal(jsonCompatible(v))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return ParseJSON(j)
}

// jsonCompatible turns the map[string]any / map[any]any trees YAML produces
// into ones encoding/json accepts.
func jsonCompatible(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonCompatible(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonCompatible(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonCompatible(e)
		}
		return t
	}
	return v
}

// MustParseYAML is ParseYAML for schemas written in the program; it panics
// on a parse error, which is a programming error there.
func MustParseYAML(data string) *Props {
	p, err := ParseYAML([]byte(data))
	if err != nil {
		panic(err)
	}
	return p
}
