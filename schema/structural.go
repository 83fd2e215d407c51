// This file holds ValidateStructural: the structural-schema rules the CRD
// API enforces, so that a schema kube-apiserver would refuse in a
// CustomResourceDefinition is refused by Build too.

package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/annexapi/annex/field"
)

// level is where a node sits: the root, an array's items, an object's field.
type level int

const (
	rootLevel level = iota
	itemLevel
	fieldLevel
)

// ValidateStructural checks p as apiextensions.k8s.io/v1 checks a CRD's
// openAPIV3Schema, with its messages: every node has a type (unless
// x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields says
// otherwise), the root is an object without additionalProperties, an array
// has items, kind and apiVersion are strings, patterns compile, and each
// default has its node's type. Paths start at openAPIV3Schema.
func ValidateStructural(p *Props) field.ErrorList {
	return validateNode(p, rootLevel, field.NewPath("openAPIV3Schema"), "")
}

func validateNode(p *Props, lvl level, path *field.Path, bodyPath string) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if p.Type == "array" && p.Items == nil {
		errs = append(errs, field.Required(path.Child("items"), "must be specified"))
	}
	if p.Items != nil {
		errs = append(errs, validateNode(p.Items, itemLevel, path.Child("items"), bodyPath+"[]")...)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Properties)) {
		v := p.Properties[k]
		errs = append(errs, validateNode(&v, fieldLevel, path.Child("properties").Key(k), joinBody(bodyPath, k))...)
	}
	if ap := p.AdditionalProperties; ap != nil {
		if lvl == rootLevel {
			errs = append(errs, field.Forbidden(path.Child("additionalProperties"), "must not be used at the root"))
		}
		errs = append(errs, validateNode(ap.Schema, fieldLevel, path.Child("additionalProperties"), bodyPath+"[]")...)
	}
	preserve := p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields
	switch {
	case p.XEmbeddedResource && p.Type == "":
		errs = append(errs, field.Required(path.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
	case p.XEmbeddedResource && p.Type != "object":
		errs = append(errs, field.Invalid(path.Child("type"), p.Type, "must be object if x-kubernetes-embedded-resource is true"))
	case p.Type == "" && !p.XIntOrString && !preserve:
		msg := map[level]string{rootLevel: "must not be empty at the root", itemLevel: "must not be empty for specified array items",
			fieldLevel: "must not be empty for specified object fields"}[lvl]
		errs = append(errs, field.Required(path.Child("type"), msg))
	}
	if lvl == rootLevel && p.Type != "" && p.Type != "object" {
		errs = append(errs, field.Invalid(path.Child("type"), p.Type, "must be object at the root"))
	}
	if p.XIntOrString && preserve {
		errs = append(errs, field.Invalid(path.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	if lvl == rootLevel || p.XEmbeddedResource {
		for _, k := range []string{"kind", "apiVersion"} {
			if v, ok := p.Properties[k]; ok && v.Type != "string" {
				errs = append(errs, field.Invalid(path.Child("properties").Key(k).Child("type"), v.Type, "must be string"))
			}
		}
	}
	if p.Pattern != "" {
		if _, err := regexp.Compile(p.Pattern); err != nil {
			errs = append(errs, field.Invalid(path.Child("pattern"), p.Pattern, fmt.Sprintf("must be a valid regular expression, but isn't: %v", err)))
		}
	}
	if len(p.Default) > 0 && p.Type != "" {
		if got := jsonType(p.Default); got != "" && !typeAccepts(p.Type, p.XIntOrString, got) {
			errs = append(errs, field.Invalid(path.Child("default"), got,
				fmt.Sprintf("%s in body must be of type %s: %q", strings.TrimPrefix(bodyPath, "."), p.Type, got)))
		}
	}
	return errs
}

// joinBody is the body path of field k under path, as kube's messages
// write it: spec.replicas.
func joinBody(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonType is the JSON type of a value: object, array, string, number,
// integer (a number without fraction), boolean or null.
func jsonType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "number"
	}
	return "integer"
}

// typeAccepts says whether a node of type typ takes a value of JSON type got.
func typeAccepts(typ string, intOrString bool, got string) bool {
	switch {
	case got == typ, typ == "number" && got == "integer", intOrString && (got == "integer" || got == "string"):
		return true
	}
	return false
}
