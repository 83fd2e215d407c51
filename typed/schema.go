package typed

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/schema"
)

// SchemaOf derives the structural schema of the Go type T's JSON (see the
// package doc for the rules and markers). It fails on a type JSON cannot
// represent (a channel, a func, a map without string keys, a recursive
// type) and on a malformed marker.
func SchemaOf[T any]() (*schema.Props, error) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p, err := propsOf(t, map[reflect.Type]bool{}, true)
	if err != nil {
		return nil, fmt.Errorf("typed: schema of %s: %w", t, err)
	}
	return p, nil
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	quantityType = reflect.TypeFor[Quantity]()
	rawType      = reflect.TypeFor[json.RawMessage]()
)

// schemaTyper is what k8s.io types such as resource.Quantity implement to
// name their OpenAPI type.
type schemaTyper interface{ OpenAPISchemaType() []string }
type schemaFormatter interface{ OpenAPISchemaFormat() string }

func propsOf(t reflect.Type, seen map[reflect.Type]bool, root bool) (*schema.Props, error) {
	if st, ok := reflect.New(t).Elem().Interface().(schemaTyper); ok {
		p := &schema.Props{}
		if types := st.OpenAPISchemaType(); len(types) == 1 {
			p.Type = types[0]
		}
		if f, ok := reflect.New(t).Elem().Interface().(schemaFormatter); ok {
			p.Format = f.OpenAPISchemaFormat()
		}
		return p, nil
	}
	switch t {
	case quantityType:
		return quantitySchema(), nil
	case timeType:
		return &schema.Props{Type: "string", Format: "date-time"}, nil
	case rawType:
		return preserve(), nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return propsOf(t.Elem(), seen, root)
	case reflect.String:
		return &schema.Props{Type: "string"}, nil
	case reflect.Bool:
		return &schema.Props{Type: "boolean"}, nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return &schema.Props{Type: "integer", Format: "int32"}, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return &schema.Props{Type: "integer", Format: "int64"}, nil
	case reflect.Float32, reflect.Float64:
		return &schema.Props{Type: "number"}, nil
	case reflect.Interface:
		return preserve(), nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &schema.Props{Type: "string", Format: "byte"}, nil
		}
		items, err := propsOf(t.Elem(), seen, false)
		if err != nil {
			return nil, err
		}
		return &schema.Props{Type: "array", Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map %s: JSON object keys are strings", t)
		}
		v, err := propsOf(t.Elem(), seen, false)
		if err != nil {
			return nil, err
		}
		return &schema.Props{Type: "object", AdditionalProperties: &schema.PropsOrBool{Allows: true, Schema: v}}, nil
	case reflect.Struct:
		if seen[t] {
			return nil, fmt.Errorf("%s is recursive: a structural schema cannot describe it", t)
		}
		seen[t] = true
		defer delete(seen, t)
		p := &schema.Props{Type: "object", Properties: map[string]schema.Props{}}
		if err := addFields(p, t, seen, root); err != nil {
			return nil, err
		}
		return p, nil
	}
	return nil, fmt.Errorf("%s has no JSON form", t)
}

func preserve() *schema.Props {
	yes := true
	return &schema.Props{XPreserveUnknownFields: &yes}
}

// addFields adds the JSON fields of struct t to p, flattening embedded
// structs without a JSON name.
func addFields(p *schema.Props, t reflect.Type, seen map[reflect.Type]bool, root bool) error {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" || !f.IsExported() && !f.Anonymous {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && ft.Kind() == reflect.Struct && (name == "" || strings.Contains(","+opts+",", ",inline,")) {
			if err := addFields(p, ft, seen, root); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		var fp *schema.Props
		var err error
		switch {
		case root && name == "metadata":
			fp = &schema.Props{Type: "object"} // ObjectMeta: the server's own validation
		case root && (name == "kind" || name == "apiVersion"):
			fp = &schema.Props{Type: "string"}
		default:
			if fp, err = propsOf(f.Type, seen, false); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		required := !strings.Contains(","+opts+",", ",omitempty,") && f.Type.Kind() != reflect.Pointer
		if d := f.Tag.Get("doc"); d != "" {
			fp.Description = d
		}
		if m := f.Tag.Get("annex"); m != "" {
			if required, err = applyMarkers(fp, m, required); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		if required && !(root && (name == "metadata" || name == "kind" || name == "apiVersion")) {
			p.Required = append(p.Required, name)
		}
		p.Properties[name] = *fp
	}
	return nil
}

// applyMarkers applies an annex:"..." tag to p; it returns whether the
// field is required after them.
func applyMarkers(p *schema.Props, tag string, required bool) (bool, error) {
	for _, m := range strings.Split(tag, ",") {
		k, v, hasValue := strings.Cut(strings.TrimSpace(m), "=")
		num := func() (*float64, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("marker %s: %q is not a number", k, v)
			}
			return &f, nil
		}
		count := func() (*int64, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("marker %s: %q is not a count", k, v)
			}
			return &n, nil
		}
		var err error
		switch k {
		case "required":
			required = true
		case "optional":
			required = false
		case "nullable":
			p.Nullable = true
		case "preserveUnknownFields":
			yes := true
			p.XPreserveUnknownFields = &yes
		case "minimum":
			p.Minimum, err = num()
		case "maximum":
			p.Maximum, err = num()
		case "multipleOf":
			p.MultipleOf, err = num()
		case "minLength":
			p.MinLength, err = count()
		case "maxLength":
			p.MaxLength, err = count()
		case "minItems":
			p.MinItems, err = count()
		case "maxItems":
			p.MaxItems, err = count()
		case "pattern":
			p.Pattern = v
		case "format":
			p.Format = v
		case "enum":
			for _, e := range strings.Split(v, "|") {
				raw, jerr := enumValue(p.Type, e)
				if jerr != nil {
					return required, fmt.Errorf("marker enum: %w", jerr)
				}
				p.Enum = append(p.Enum, raw)
			}
		case "default":
			raw, jerr := enumValue(p.Type, v)
			if jerr != nil {
				return required, fmt.Errorf("marker default: %w", jerr)
			}
			p.Default = raw
			required = false // a defaulted field is never missing
		default:
			return required, fmt.Errorf("unknown marker %q", k)
		}
		if err != nil {
			return required, err
		}
		if !hasValue && k != "required" && k != "optional" && k != "nullable" && k != "preserveUnknownFields" {
			return required, fmt.Errorf("marker %s needs a value", k)
		}
	}
	return required, nil
}

// enumValue is the JSON of a marker value for a node of type typ: a string
// for a string node, the literal otherwise.
func enumValue(typ, v string) (json.RawMessage, error) {
	if typ == "string" {
		return json.Marshal(v)
	}
	if !json.Valid([]byte(v)) {
		return nil, fmt.Errorf("%q is not a JSON value", v)
	}
	return json.RawMessage(v), nil
}
