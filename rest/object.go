// This file holds the generic-JSON helpers of the write path: decoding a
// request body once, reading and editing metadata, extracting selectable
// fields, and comparing, copying and converting decoded values without
// encoding them again.

package rest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/internal/jsondec"
	"github.com/annexapi/annex/meta"
)

// readBody reads a write request's body after checking its Content-Type:
// JSON as it is, YAML converted to JSON once (numbers and key order kept).
func readBody(r *http.Request) ([]byte, *meta.Status) {
	mt, ok := bodyType(r.Header.Get("Content-Type"))
	if !ok {
		return nil, errUnsupportedBody()
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, StatusForError(err, ErrorContext{})
	}
	if mt == mediaYAML {
		obj, err := decodeYAMLObject(body)
		if err != nil {
			return nil, meta.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
		}
		if body, err = json.Marshal(obj); err != nil {
			return nil, meta.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
		}
	}
	return body, nil
}

// decodeObject decodes body into an Object; numbers stay json.Number so that
// integers survive unchanged. A body that is not one JSON object fails with
// 400, worded as k8s's decoder for an unrecognized object.
func (rh *resourceHandler) decodeObject(body []byte) (Object, *meta.Status) {
	obj, _, st := rh.decodeObjectDup(body)
	return obj, st
}

// decodeObjectDup is decodeObject that also returns the paths of the keys
// the body has twice (the last one is kept), for fieldValidation.
func (rh *resourceHandler) decodeObjectDup(body []byte) (Object, []string, *meta.Status) {
	rh.h.jsonPass(1)
	full := body
	body, managed := spliceManagedFields(body)
	// One well-formed object, the usual body, is decoded in one pass;
	// anything else goes through encoding/json for its errors.
	obj, dup, fast := jsondec.ObjectDup(body)
	var err error
	if !fast && !json.Valid(body) {
		// k8s's decoder first reads the apiVersion and kind, with
		// encoding/json's words for a syntax error.
		var typeMeta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if jerr := json.Unmarshal(body, &typeMeta); jerr != nil {
			err = fmt.Errorf("couldn't get version/kind; json parse error: %v", jerr)
		}
	}
	if !fast && err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		err = dec.Decode(&obj)
		if err == nil && dec.More() {
			err = fmt.Errorf("unexpected data after the object")
		}
		if err == nil && obj == nil {
			err = fmt.Errorf("the object is null")
		}
	}
	if err == nil {
		if md, ok := obj["metadata"]; ok && md != nil {
			if _, ok := md.(map[string]any); !ok {
				err = fmt.Errorf("metadata must be an object")
			}
		}
	}
	if err == nil {
		err = checkNumbers(obj)
	}
	if err != nil {
		return nil, nil, meta.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)",
			rh.Kind, err, summarizeData(full, 30)))
	}
	var dups []string
	if dup || !fast {
		dups = jsondec.DuplicateFields(body)
	}
	if managed != nil {
		metadata(obj)["managedFields"] = managed
	}
	return obj, dups, nil
}

// checkNumbers refuses a number no client can decode: one beyond float64's
// range such as 1e400, which k8s's decoder refuses too (stored as is, it
// would break every later list and watch of the resource).
func checkNumbers(v any) error {
	switch v := v.(type) {
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return nil
		}
		if _, err := v.Float64(); err != nil {
			return fmt.Errorf("json: cannot unmarshal number %s into Go value of type float64", v)
		}
	case map[string]any:
		for _, e := range v {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// summarizeData abbreviates a body for an error message as k8s does.
func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return hex.EncodeToString(data[:maxLength]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}

// metadata returns obj's metadata map, creating it when absent.
func metadata(obj Object) Object {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	return md
}

// str returns m[k] when it is a string.
func str(m Object, k string) string {
	s, _ := m[k].(string)
	return s
}

// generation returns metadata.generation as an int64 (0 when absent).
func generation(md Object) int64 {
	switch g := md["generation"].(type) {
	case json.Number:
		n, _ := g.Int64()
		return n
	case float64:
		return int64(g)
	case int64:
		return g
	}
	return 0
}

// addSelectableFields adds to set the value of each field path in data.
func addSelectableFields(set map[string]string, data []byte, fields []string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil {
		return
	}
	for _, f := range fields {
		set[f] = fieldValue(obj, f)
	}
}

// fieldValue is the selector value of a dotted path in obj: a string as is,
// a number or bool in its JSON spelling, anything else or missing "".
func fieldValue(obj map[string]any, path string) string {
	cur, _ := lookup(obj, strings.Split(path, "."))
	switch v := cur.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// lookup walks a path of field names in generic JSON; false when a step
// is missing or not an object.
func lookup(obj map[string]any, path []string) (any, bool) {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// deepCopyJSON copies generic JSON: maps and slices are copied, anything
// else (strings, json.Number, bools, nil, or a value a hook put there) is
// shared.
func deepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, e := range t {
			c[k] = deepCopyJSON(e)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = deepCopyJSON(e)
		}
		return c
	}
	return v
}

// jsonEqual reports whether a and b encode to the same JSON, without
// encoding the values JSON decoding produces (maps, slices, strings,
// json.Number, bools, nil). Numbers are equal when spelled the same, as
// their encodings would be. A value of any other type (put there by a hook)
// is compared by encoding both sides, counted as two JSON passes.
func (rh *resourceHandler) jsonEqual(a, b any) bool { return jsonEqualCounted(a, b, rh.h.jsonPass) }

// jsonEqualCounted is jsonEqual, calling pass with the JSON passes an
// encoding comparison costs.
func jsonEqualCounted(a, b any, pass func(n int64)) bool {
	if !plainJSON(a) || !plainJSON(b) {
		pass(2)
		ea, errA := json.Marshal(a)
		eb, errB := json.Marshal(b)
		return errA == nil && errB == nil && bytes.Equal(ea, eb)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqualCounted(v, w, pass) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqualCounted(x[i], y[i], pass) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return a == nil && b == nil
}

// plainJSON reports whether v is of a type JSON decoding produces.
func plainJSON(v any) bool {
	switch v.(type) {
	case nil, map[string]any, []any, string, json.Number, bool:
		return true
	}
	return false
}

// objectMetaOf converts decoded metadata to meta.ObjectMeta without JSON,
// giving what encoding and decoding it would give; managedFields kept as
// bytes (json.RawMessage, see spliceManagedFields) are left out. It reports false when
// that is not certain (a member of an unexpected type, a member name that
// differs from a field's only in case, which encoding/json would match,
// managedFields), and the caller then takes the JSON round trip.
func objectMetaOf(md map[string]any) (*meta.ObjectMeta, bool) {
	om := &meta.ObjectMeta{}
	ok := true
	for k, v := range md {
		switch k {
		case "name":
			om.Name, ok = jsonString(v)
		case "generateName":
			om.GenerateName, ok = jsonString(v)
		case "namespace":
			om.Namespace, ok = jsonString(v)
		case "selfLink":
			om.SelfLink, ok = jsonString(v)
		case "uid":
			om.UID, ok = jsonString(v)
		case "resourceVersion":
			om.ResourceVersion, ok = jsonString(v)
		case "generation":
			if v != nil {
				om.Generation, ok = jsonInt64(v)
			}
		case "creationTimestamp":
			var t *meta.Time
			if t, ok = jsonTime(v); ok && t != nil {
				om.CreationTimestamp = *t
			}
		case "deletionTimestamp":
			om.DeletionTimestamp, ok = jsonTime(v)
		case "deletionGracePeriodSeconds":
			if v != nil {
				var n int64
				n, ok = jsonInt64(v)
				om.DeletionGracePeriodSeconds = &n
			}
		case "labels":
			om.Labels, ok = jsonStringMap(v)
		case "annotations":
			om.Annotations, ok = jsonStringMap(v)
		case "finalizers":
			om.Finalizers, ok = jsonStrings(v)
		case "ownerReferences":
			om.OwnerReferences, ok = jsonOwnerReferences(v)
		case "managedFields":
			if _, raw := v.(json.RawMessage); !raw {
				om.ManagedFields, ok = jsonManagedFields(v)
			}
		default:
			ok = !foldsToField(k, "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
				"generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
				"annotations", "ownerReferences", "finalizers", "managedFields")
		}
		if !ok {
			return nil, false
		}
	}
	return om, true
}

// foldsToField reports whether encoding/json would decode member k into one
// of the struct fields named fields: k differs from one only in case.
func foldsToField(k string, fields ...string) bool {
	for _, f := range fields {
		if strings.EqualFold(k, f) {
			return true
		}
	}
	return false
}

func jsonString(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

func jsonInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

// jsonTime is meta.Time's decoding of v: nil for null, else RFC 3339 in UTC.
func jsonTime(v any) (*meta.Time, bool) {
	if v == nil {
		return nil, true
	}
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, false
	}
	return &meta.Time{Time: t.UTC()}, true
}

func jsonStringMap(v any) (map[string]string, bool) {
	switch m := v.(type) {
	case nil:
		return nil, true
	case map[string]string:
		return maps.Clone(m), true
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, e := range m {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[k] = s
		}
		return out, true
	}
	return nil, false
}

func jsonStrings(v any) ([]string, bool) {
	switch l := v.(type) {
	case nil:
		return nil, true
	case []string:
		return slices.Clone(l), true
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func jsonOwnerReferences(v any) ([]meta.OwnerReference, bool) {
	if v == nil {
		return nil, true
	}
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]meta.OwnerReference, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		r := &out[i]
		for k, f := range m {
			switch k {
			case "apiVersion":
				r.APIVersion, ok = jsonString(f)
			case "kind":
				r.Kind, ok = jsonString(f)
			case "name":
				r.Name, ok = jsonString(f)
			case "uid":
				r.UID, ok = jsonString(f)
			case "controller":
				r.Controller, ok = jsonBoolPtr(f)
			case "blockOwnerDeletion":
				r.BlockOwnerDeletion, ok = jsonBoolPtr(f)
			default:
				ok = !foldsToField(k, "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
			}
			if !ok {
				return nil, false
			}
		}
	}
	return out, true
}

// jsonManagedFields converts managedFields entries for validation, which
// reads every member but fieldsV1 (left out: any JSON object decodes).
func jsonManagedFields(v any) ([]meta.ManagedFieldsEntry, bool) {
	if v == nil {
		return nil, true
	}
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]meta.ManagedFieldsEntry, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		en := &out[i]
		for k, f := range m {
			switch k {
			case "manager":
				en.Manager, ok = jsonString(f)
			case "operation":
				en.Operation, ok = jsonString(f)
			case "apiVersion":
				en.APIVersion, ok = jsonString(f)
			case "fieldsType":
				en.FieldsType, ok = jsonString(f)
			case "subresource":
				en.Subresource, ok = jsonString(f)
			case "time":
				en.Time, ok = jsonTime(f)
			case "fieldsV1":
				_, ok = f.(map[string]any)
				ok = ok || f == nil
			default:
				ok = !foldsToField(k, "manager", "operation", "apiVersion", "fieldsType", "subresource", "time", "fieldsV1")
			}
			if !ok {
				return nil, false
			}
		}
	}
	return out, true
}

func jsonBoolPtr(v any) (*bool, bool) {
	if v == nil {
		return nil, true
	}
	b, ok := v.(bool)
	return &b, ok
}

// MetadataOnly reports whether an update changed nothing of the object but
// its metadata (labels, annotations, finalizers, owner references, ...):
// what a ValidateUpdate hook checks to let such an edit through on an object
// that no longer passes rules meant for its spec.
func MetadataOnly(obj, old Object) bool {
	skip := func(k string) bool { return k == "metadata" || k == "apiVersion" || k == "kind" }
	for k, v := range obj {
		if skip(k) {
			continue
		}
		if ov, ok := old[k]; !ok || !jsonEqualCounted(v, ov, func(int64) {}) {
			return false
		}
	}
	for k := range old {
		if _, ok := obj[k]; !ok && !skip(k) {
			return false
		}
	}
	return true
}
