// This file turns the write path's generic objects into T and back: decode
// (one JSON round trip), and the field errors of an object that does not
// decode, worded as the schema's validation words them (kube's), so that a
// client sees the same message whichever check found the problem.

package typed

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/rest"
)

// decode turns a decoded JSON object into a T (one JSON round trip).
func decode[T any](obj rest.Object) (*T, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return v, nil
}

// undecodable reports why obj does not decode into T (err is the decode's
// error): each field T cannot hold, as the schema's validation words it.
func undecodable[T any](obj rest.Object, err error) field.ErrorList {
	if errs := decodeErrors(reflect.TypeFor[T](), obj, ""); len(errs) > 0 {
		return errs
	}
	// A case the walk does not model: encoding/json's own words.
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return field.ErrorList{field.TypeInvalid(field.NewPath(te.Field), te.Value, "must be of type "+te.Type.String())}
	}
	return field.ErrorList{field.Invalid(nil, "{...}", err.Error())}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodeErrors are the reasons generic JSON v at path does not decode into
// a value of type t; none when it does.
func decodeErrors(t reflect.Type, v any, path string) field.ErrorList {
	for t.Kind() == reflect.Pointer {
		if v == nil {
			return nil // a nil pointer
		}
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) {
		return unmarshalerErrors(t, v, path)
	}
	if v == nil || t == rawType || t.Kind() == reflect.Interface {
		return nil // null leaves the value as it is; any JSON fits these
	}
	switch t.Kind() {
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return typeError(path, "boolean", v)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return typeError(path, "string", v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intErrors(path, v, -1<<(t.Bits()-1), 1<<(t.Bits()-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return uintErrors(path, v, t.Bits())
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return typeError(path, "number", v)
		}
		if f, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			limit := math.MaxFloat64
			if t.Bits() == 32 {
				limit = math.MaxFloat32
			}
			if f < 0 {
				return boundError(path, n, "greater than or equal to", -limit)
			}
			return boundError(path, n, "less than or equal to", limit)
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			s, ok := v.(string)
			if !ok {
				return typeError(path, "string", v)
			}
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: path, BadValue: s,
					Detail: fmt.Sprintf("%s in body must be of type byte: %q", body(path), s)}}
			}
			return nil
		}
		l, ok := v.([]any)
		if !ok {
			return typeError(path, "array", v)
		}
		var errs field.ErrorList
		for i, e := range l {
			errs = append(errs, decodeErrors(t.Elem(), e, path+"["+strconv.Itoa(i)+"]")...)
		}
		return errs
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return typeError(path, "object", v)
		}
		var errs field.ErrorList
		for _, k := range sortedKeys(m) {
			errs = append(errs, decodeErrors(t.Elem(), m[k], joinPath(path, k))...)
		}
		return errs
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return typeError(path, "object", v)
		}
		fields := structFields(t)
		var errs field.ErrorList
		for _, k := range sortedKeys(m) {
			ft, ok := fields[k]
			if !ok {
				for name, t := range fields { // encoding/json matches names without case too
					if strings.EqualFold(name, k) {
						ft, ok = t, true
						break
					}
				}
			}
			if ok {
				errs = append(errs, decodeErrors(ft, m[k], joinPath(path, k))...)
			}
		}
		return errs
	}
	return nil
}

// unmarshalerErrors checks a value of a type that decodes itself: first
// the JSON type its schema says, then its own decoding.
func unmarshalerErrors(t reflect.Type, v any, path string) field.ErrorList {
	p, err := basePropsOf(t, map[reflect.Type]bool{}, false)
	if err == nil && v != nil {
		switch {
		case p.XIntOrString:
			if _, isString := v.(string); !isString && jsonType(v) != "integer" {
				return typeError(path, "integer,string", v)
			}
		case p.Type != "" && p.Type != jsonType(v) && !(p.Type == "number" && jsonType(v) == "integer"):
			return typeError(path, p.Type, v)
		}
	}
	b, merr := json.Marshal(v)
	if merr != nil {
		return nil
	}
	if uerr := json.Unmarshal(b, reflect.New(t).Interface()); uerr != nil {
		// A number the type keeps in a Go integer too small for it
		// (IntOrString's int32): the bounds of that integer.
		var te *json.UnmarshalTypeError
		if n, isNumber := v.(json.Number); isNumber && errors.As(uerr, &te) && te.Type != nil {
			switch te.Type.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				if errs := intErrors(path, n, -1<<(te.Type.Bits()-1), 1<<(te.Type.Bits()-1)-1); len(errs) > 0 {
					return errs
				}
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				if errs := uintErrors(path, n, te.Type.Bits()); len(errs) > 0 {
					return errs
				}
			}
		}
		if s, ok := v.(string); ok && err == nil && p.Format != "" {
			return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: path, BadValue: s,
				Detail: fmt.Sprintf("%s in body must be of type %s: %q", body(path), p.Format, s)}}
		}
		return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: path, BadValue: badValue(v), Detail: uerr.Error()}}
	}
	return nil
}

// intErrors checks a signed integer of the range [lo, hi].
func intErrors(path string, v any, lo, hi int64) field.ErrorList {
	n, ok := v.(json.Number)
	if !ok || jsonType(v) != "integer" {
		return typeError(path, "integer", v)
	}
	i, _ := n.Int64()
	switch {
	case i < lo:
		return boundError(path, n, "greater than or equal to", lo)
	case i > hi:
		return boundError(path, n, "less than or equal to", hi)
	}
	return nil
}

// uintErrors checks an unsigned integer of bits bits. A number beyond
// int64 is "number" to the schema (a type error there, said the same way
// here) unless it is a whole number that fits.
func uintErrors(path string, v any, bits int) field.ErrorList {
	n, ok := v.(json.Number)
	if !ok {
		return typeError(path, "integer", v)
	}
	limit := uint64(math.MaxUint64) >> (64 - bits)
	if i, err := n.Int64(); err == nil {
		switch {
		case i < 0:
			return boundError(path, n, "greater than or equal to", int64(0))
		case uint64(i) > limit:
			return boundError(path, n, "less than or equal to", limit)
		}
		return nil
	}
	if u, err := strconv.ParseUint(string(n), 10, 64); err == nil && u <= limit {
		return nil
	}
	return typeError(path, "integer", v)
}

// typeError is the schema's type error: `Invalid value: "string":
// spec.paused in body must be of type boolean: "string"`.
func typeError(path, want string, v any) field.ErrorList {
	actual := jsonType(v)
	return field.ErrorList{{Type: field.ErrorTypeTypeInvalid, Field: path, BadValue: actual,
		Detail: fmt.Sprintf("%s in body must be of type %s: %q", body(path), want, actual)}}
}

// boundError is the schema's minimum or maximum error, for a number
// outside the Go type's range.
func boundError[N int64 | uint64 | float64](path string, v json.Number, op string, bound N) field.ErrorList {
	b := fmt.Sprint(bound)
	if f, ok := any(bound).(float64); ok {
		b = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: path, BadValue: v,
		Detail: fmt.Sprintf("%s in body should be %s %s", body(path), op, b)}}
}

func body(path string) string {
	if path == "" {
		return "<root>"
	}
	return path
}

func joinPath(base, child string) string {
	if base == "" {
		return child
	}
	return base + "." + child
}

// jsonType is the JSON type of a decoded value, as the schema's validation
// names it: an integer is a number that parses as an int64.
func jsonType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := t.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// badValue is v as a field error prints it: strings quoted, numbers plain.
func badValue(v any) any {
	switch v.(type) {
	case string, json.Number, bool, nil:
		return v
	}
	return jsonType(v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// structFields are the JSON members of struct t (embedded structs
// flattened) and their types.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			jf, ok := jsonFieldOf(f)
			if !ok {
				continue
			}
			if jf.inline {
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				add(ft)
				continue
			}
			if _, dup := out[jf.name]; !dup {
				out[jf.name] = f.Type
			}
		}
	}
	add(t)
	return out
}
