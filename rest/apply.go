// This file holds field management in the write path (kube's field
// manager): every create, update and patch records its manager's fields in
// metadata.managedFields, and server-side apply (PATCH with
// application/apply-patch+yaml) merges an applied configuration through
// package managedfields.

package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// managerName is kube's managerOrUserAgent: the fieldManager parameter, or
// else the User-Agent up to its first "/", printable characters only, at
// most 128 bytes.
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > meta.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// trackUpdate records the write of wr's manager from old (nil: a create)
// to obj in obj's managedFields; without field management, obj keeps
// none on a create and the stored ones on an update.
func (rh *resourceHandler) trackUpdate(wr *writeRequest, old, obj Object) {
	if wr.applied {
		return
	}
	if rh.fields == nil {
		md := metadata(obj)
		if old == nil {
			delete(md, "managedFields")
		} else if v, ok := metadata(old)["managedFields"]; ok {
			md["managedFields"] = v
		} else {
			delete(md, "managedFields")
		}
		return
	}
	// An error leaves obj with old's entries, as kube's UpdateNoErrors.
	_ = rh.fields.Update(old, obj, wr.manager, wr.sub)
}

// decodeApply is the decode step of a server-side apply: fieldManager is
// required, and the body, YAML or JSON, is one object.
func (rh *resourceHandler) decodeApply(body []byte, wr *writeRequest) (Object, *meta.Status) {
	if rh.fields == nil {
		return nil, meta.NewUnsupportedMediaType(rh.patchTypes())
	}
	if wr.params.fieldManager == "" {
		return nil, meta.NewInvalid(meta.GroupKind{Group: "meta.k8s.io", Kind: "PatchOptions"}, "",
			[]meta.StatusCause{fieldRequired("fieldManager", "is required for apply patch")})
	}
	patch, err := decodeYAMLObject(body)
	if err != nil {
		return nil, meta.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if st := checkNumbersStatus(patch); st != nil {
		return nil, st
	}
	return patch, nil
}

func checkNumbersStatus(obj Object) *meta.Status {
	if err := checkNumbers(obj); err != nil {
		return meta.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	return nil
}

// applyProduce returns the produce step of a server-side apply: the patch
// merged into each try's stored object (none: the apply creates it).
func (rh *resourceHandler) applyProduce(wr *writeRequest, patch Object) func(cur storage.Object) (Object, *meta.Status) {
	force := wr.params.force != nil && *wr.params.force
	return func(cur storage.Object) (Object, *meta.Status) {
		var live Object
		if cur.Data != nil {
			var st *meta.Status
			if live, st = rh.decodeObject(cur.Data); st != nil {
				return nil, meta.NewInternalError(fmt.Errorf("%s", st.Message))
			}
		} else if uid := str(metadata(patch), "uid"); uid != "" {
			return nil, meta.NewConflict(rh.gr, wr.name, fmt.Sprintf(
				"uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
		}
		p, _ := deepCopyJSON(patch).(Object)
		obj, err := rh.fields.Apply(live, p, wr.manager, wr.sub, force)
		if err != nil {
			return nil, StatusForError(err, wr.errorContext())
		}
		return obj, nil
	}
}

// decodeYAMLObject decodes a YAML (or JSON) document into an Object, with
// numbers as json.Number as decodeObject gives them.
func decodeYAMLObject(body []byte) (Object, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var obj Object
		if err := dec.Decode(&obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return Object{}, nil
	}
	v, err := yamlValue(doc.Content[0])
	if err != nil {
		return nil, err
	}
	obj, ok := v.(Object)
	if !ok {
		if v == nil {
			return Object{}, nil
		}
		return nil, fmt.Errorf("error unmarshaling JSON: json: cannot unmarshal %s into Go value of type map[string]interface {}", jsonKind(v))
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	}
	return "value"
}

// yamlValue converts a YAML node to the JSON value sigs.k8s.io/yaml gives
// (YAML 1.1 booleans aside: only true and false are booleans, as YAML 1.2).
func yamlValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlValue(n.Content[0])
	case yaml.AliasNode:
		return yamlValue(n.Alias)
	case yaml.MappingNode:
		out := make(Object, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn := n.Content[i]
			if kn.Kind == yaml.ScalarNode && kn.Tag == "!!merge" {
				return nil, fmt.Errorf("yaml: line %d: merge keys are not supported", kn.Line)
			}
			var k string
			if err := kn.Decode(&k); err != nil || kn.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("yaml: line %d: keys must be strings", kn.Line)
			}
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("yaml: line %d: key %q already set in map", kn.Line, k)
			}
			v, err := yamlValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := yamlValue(c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, err
			}
			return b, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				var f float64
				if err := n.Decode(&f); err != nil {
					return nil, err
				}
				return json.Number(fmt.Sprint(f)), nil
			}
			return json.Number(fmt.Sprint(i)), nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, err
			}
			b, err := json.Marshal(f)
			if err != nil {
				return nil, fmt.Errorf("yaml: line %d: %v", n.Line, err)
			}
			return json.Number(b), nil
		default:
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("yaml: line %d: unsupported node", n.Line)
}
