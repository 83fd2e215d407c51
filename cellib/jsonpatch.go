// This file holds Kubernetes' JSON Patch library (kubernetes.jsonpatch),
// which MutatingAdmissionPolicy expressions have.

package cellib

import (
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// JSONPatch returns the JSON Patch library:
//
//	jsonpatch.escapeKey(<string>) string   '~' as "~0" and '/' as "~1", for a path segment
//
// Example:
//
//	"/metadata/labels/" + jsonpatch.escapeKey('k8s.io/my~label')   // "/metadata/labels/k8s.io~1my~0label"
func JSONPatch() cel.EnvOption {
	return cel.Lib(&library{name: "kubernetes.jsonpatch", options: []cel.EnvOption{
		cel.Function("jsonpatch.escapeKey", cel.Overload("string_jsonpatch_escapeKey_string", []*cel.Type{cel.StringType}, cel.StringType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, bad := stringArg(v)
				if bad != nil {
					return bad
				}
				return types.String(jsonPointerEscaper.Replace(s))
			}))),
		cel.CostModel(scan("string_jsonpatch_escapeKey_string", 0, 0, stringFactor, true)),
	}})
}

var jsonPointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
