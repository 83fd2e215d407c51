// This file holds the structural decoding steps k8s applies to a custom
// resource before validation: Prune (drop the fields the schema does not
// name) and Default (fill absent fields from the schema's defaults).

package schema

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"

	"github.com/annexapi/annex/internal/jsondec"
)

// Prune removes from obj every field p does not specify, with the semantics
// of CRD structural pruning, and returns the paths it removed, sorted, in the
// form k8s reports unknown fields ("spec.foo", "spec.items[0].bar"):
//
//   - at the root and in x-kubernetes-embedded-resource objects, apiVersion,
//     kind and metadata are always kept (metadata is not pruned here);
//   - below x-kubernetes-preserve-unknown-fields: true, unknown fields are
//     kept while named ones are still pruned inside;
//   - additionalProperties with a schema prunes every value with it, and
//     additionalProperties: true keeps every key;
//   - a node with no properties and no additionalProperties that is an
//     object (or has no type) drops every field unless it preserves unknown
//     fields; int-or-string and other scalars are left alone.
//
// A nil p prunes nothing.
func Prune(p *Props, obj map[string]any) (pruned []string) {
	if p == nil {
		return nil
	}
	var steps [8]pathStep
	w := pruning{path: steps[:0]}
	w.object(p, obj, true)
	sort.Strings(w.out)
	return w.out
}

// pruning is one Prune walk: where it is (a field of an object, or with
// field "" an item of an array), made into a string only for a field it
// removes, and the paths removed.
type pruning struct {
	path []pathStep
	out  []string
}

type pathStep struct {
	field string
	index int
}

// removed records the removal of field k of the current node.
func (w *pruning) removed(k string) {
	var b []byte
	for _, s := range w.path {
		if s.field == "" {
			b = append(strconv.AppendInt(append(b, '['), int64(s.index), 10), ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, s.field...)
	}
	if len(b) > 0 {
		b = append(b, '.')
	}
	w.out = append(w.out, string(append(b, k...)))
}

func (w *pruning) object(p *Props, obj map[string]any, root bool) {
	preserve := p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields
	embedded := root || p.XEmbeddedResource
	for k, v := range obj {
		if embedded && (k == "apiVersion" || k == "kind" || k == "metadata") {
			continue
		}
		// The child's schema goes down as a value: a pointer to this copy
		// would move it to the heap for the recursion.
		child, named := p.Properties[k]
		switch {
		case named:
		case p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
			child = *p.AdditionalProperties.Schema
		case p.AdditionalProperties != nil && p.AdditionalProperties.Allows, preserve:
			continue
		default:
			delete(obj, k)
			w.removed(k)
			continue
		}
		w.path = append(w.path, pathStep{field: k})
		w.value(child, v)
		w.path = w.path[:len(w.path)-1]
	}
}

func (w *pruning) value(p Props, v any) {
	switch t := v.(type) {
	case map[string]any:
		if p.XIntOrString {
			return
		}
		if p.Type == "object" || p.Type == "" && (len(p.Properties) > 0 || p.AdditionalProperties != nil || p.XEmbeddedResource) {
			w.object(&p, t, false)
		}
	case []any:
		if p.Items == nil {
			return
		}
		for i, e := range t {
			w.path = append(w.path, pathStep{index: i})
			w.value(*p.Items, e)
			w.path = w.path[:len(w.path)-1]
		}
	}
}

// PruneNulls removes from obj the nulls of fields whose schema is not
// nullable and has no default (kube's PruneNonNullableNullsWithoutDefaults,
// run after Prune and before Default: a null with a default is defaulted
// instead). apiVersion, kind and metadata at the root are left alone. A nil
// p removes nothing.
func PruneNulls(p *Props, obj map[string]any) {
	if p == nil {
		return
	}
	for k, v := range obj {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		pruneNulls(fieldSchema(p, k), k, obj, v)
	}
}

// fieldSchema is the schema of field k of an object of schema p, or nil.
func fieldSchema(p *Props, k string) *Props {
	if p == nil {
		return nil
	}
	if c, ok := p.Properties[k]; ok {
		return &c
	}
	if p.AdditionalProperties != nil {
		return p.AdditionalProperties.Schema
	}
	return nil
}

// pruneNulls handles value v of field k of parent (nil for an item).
func pruneNulls(p *Props, k string, parent map[string]any, v any) {
	switch t := v.(type) {
	case nil:
		if parent != nil && p != nil && !p.Nullable && len(p.Default) == 0 {
			delete(parent, k)
		}
	case map[string]any:
		for ck, cv := range t {
			pruneNulls(fieldSchema(p, ck), ck, t, cv)
		}
	case []any:
		var items *Props
		if p != nil {
			items = p.Items
		}
		for _, e := range t {
			pruneNulls(items, "", nil, e)
		}
	}
}

// Default fills in obj, in place, every absent field whose schema has a
// default (and a null one that is not nullable), at every level the object
// has, as CRD defaulting does after pruning. Defaults are decoded with
// json.Number for numbers, as the REST layer decodes bodies. A nil p does
// nothing.
func Default(p *Props, obj map[string]any) {
	if p == nil {
		return
	}
	defaultObject(p, obj)
}

func defaultObject(p *Props, obj map[string]any) {
	for k, child := range p.Properties {
		v, present := obj[k]
		if len(child.Default) > 0 && (!present || v == nil && !child.Nullable) {
			if d, ok := decodeDefault(child.Default); ok {
				obj[k] = d
				v = d
			}
		}
		defaultValue(child, v)
	}
	if p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil {
		for k, v := range obj {
			if _, named := p.Properties[k]; !named {
				defaultValue(*p.AdditionalProperties.Schema, v)
			}
		}
	}
}

// defaultValue takes p as a value: a pointer to the caller's copy would
// move that copy to the heap for the recursion.
func defaultValue(p Props, v any) {
	switch t := v.(type) {
	case map[string]any:
		defaultObject(&p, t)
	case []any:
		if p.Items == nil {
			return
		}
		for i, e := range t {
			if e == nil && len(p.Items.Default) > 0 && !p.Items.Nullable {
				if d, ok := decodeDefault(p.Items.Default); ok {
					t[i] = d
					e = d
				}
			}
			defaultValue(*p.Items, e)
		}
	}
}

// decodeDefault decodes a default afresh, so that no two objects share it.
func decodeDefault(raw json.RawMessage) (any, bool) {
	if v, ok := jsondec.Value(raw); ok {
		return v, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}
