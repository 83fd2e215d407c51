package typed

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// IntOrString holds an integer or a string (a port, 8080 or "http"; a
// surge, 1 or "25%"), as k8s.io's intstr.IntOrString: it marshals as the
// one it holds and unmarshals either. Its schema is kube's int-or-string
// (x-kubernetes-int-or-string: an integer or a string).
type IntOrString struct {
	// IsString says which it holds: StrVal when true, else IntVal.
	IsString bool
	IntVal   int32
	StrVal   string
}

// FromInt32 is the IntOrString holding i.
func FromInt32(i int32) IntOrString { return IntOrString{IntVal: i} }

// FromString is the IntOrString holding s.
func FromString(s string) IntOrString { return IntOrString{IsString: true, StrVal: s} }

// String is the string held, or the integer in decimal.
func (v IntOrString) String() string {
	if v.IsString {
		return v.StrVal
	}
	return strconv.Itoa(int(v.IntVal))
}

// MarshalJSON implements json.Marshaler.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.IsString {
		return json.Marshal(v.StrVal)
	}
	return json.Marshal(v.IntVal)
}

// UnmarshalJSON implements json.Unmarshaler: a string, an integer that
// fits an int32, or null (no change).
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		v.IsString, v.IntVal = true, 0
		return json.Unmarshal(b, &v.StrVal)
	}
	if string(b) == "null" {
		return nil
	}
	v.IsString, v.StrVal = false, ""
	return json.Unmarshal(b, &v.IntVal)
}

// OpenAPISchemaType, OpenAPISchemaFormat and OpenAPIV3OneOfTypes are
// k8s.io's IntOrString's, which SchemaOf reads as int-or-string.
func (IntOrString) OpenAPISchemaType() []string { return []string{"string"} }

// OpenAPISchemaFormat: see OpenAPISchemaType.
func (IntOrString) OpenAPISchemaFormat() string { return "int-or-string" }

// OpenAPIV3OneOfTypes: see OpenAPISchemaType.
func (IntOrString) OpenAPIV3OneOfTypes() []string { return []string{"integer", "string"} }
