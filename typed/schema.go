// This file derives a structural schema from a Go type: the mapping of Go
// kinds, the types that name their own schema, and the struct tags (annex
// markers, cel rules, doc) and methods (ValidationRules, SchemaDescription)
// that add to it.

package typed

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/annexapi/annex/schema"
)

// SchemaOf derives the structural schema of the Go type T's JSON (see the
// package doc for the rules and markers). It fails on a type JSON cannot
// represent (a channel, a func, a map without string keys, a recursive
// type) and on a malformed marker, naming the field and how to write it.
func SchemaOf[T any]() (*schema.Props, error) {
	return schemaOf(reflect.TypeFor[T]())
}

func schemaOf(t reflect.Type) (*schema.Props, error) {
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

// The methods a type may have to say its own schema. OpenAPISchemaType,
// OpenAPISchemaFormat and OpenAPIV3OneOfTypes are those k8s.io's types
// (metav1.Time, resource.Quantity, intstr.IntOrString) and meta's have.
type (
	schemaTyper     interface{ OpenAPISchemaType() []string }
	schemaFormatter interface{ OpenAPISchemaFormat() string }
	oneOfTyper      interface{ OpenAPIV3OneOfTypes() []string }
	// ruler and describer are typed's own: CEL rules and a description
	// for every node of the type.
	ruler interface {
		ValidationRules() []schema.ValidationRule
	}
	describer interface{ SchemaDescription() string }
)

// implemented returns t's value (or, for a pointer-receiver method, a
// pointer to it) as an I, when t or *t implements I.
func implemented[I any](t reflect.Type) (I, bool) {
	if i, ok := reflect.New(t).Elem().Interface().(I); ok {
		return i, true
	}
	i, ok := reflect.New(t).Interface().(I)
	return i, ok
}

func propsOf(t reflect.Type, seen map[reflect.Type]bool, root bool) (*schema.Props, error) {
	if t.Kind() == reflect.Pointer {
		return propsOf(t.Elem(), seen, root)
	}
	p, err := basePropsOf(t, seen, root)
	if err != nil {
		return nil, err
	}
	if d, ok := implemented[describer](t); ok {
		p.Description = d.SchemaDescription()
	}
	if r, ok := implemented[ruler](t); ok {
		p.XValidations = append(p.XValidations, r.ValidationRules()...)
	}
	return p, nil
}

// ownSchema is the schema a type names with k8s.io's methods: a string
// (with a format) for OpenAPISchemaType "string", int-or-string for a type
// whose OpenAPIV3OneOfTypes mix a string and a number, as CRD generators
// write intstr.IntOrString and resource.Quantity.
func ownSchema(t reflect.Type) (*schema.Props, bool) {
	if o, ok := implemented[oneOfTyper](t); ok {
		types := o.OpenAPIV3OneOfTypes()
		if slices.Contains(types, "string") && (slices.Contains(types, "integer") || slices.Contains(types, "number")) {
			return intOrString(), true
		}
	}
	st, ok := implemented[schemaTyper](t)
	if !ok {
		return nil, false
	}
	p := &schema.Props{}
	if types := st.OpenAPISchemaType(); len(types) == 1 {
		p.Type = types[0]
	}
	if f, ok := implemented[schemaFormatter](t); ok {
		p.Format = f.OpenAPISchemaFormat()
	}
	return p, true
}

func intOrString() *schema.Props {
	return &schema.Props{XIntOrString: true, AnyOf: []schema.Props{{Type: "integer"}, {Type: "string"}}}
}

func basePropsOf(t reflect.Type, seen map[reflect.Type]bool, root bool) (*schema.Props, error) {
	switch t {
	case quantityType:
		return quantitySchema(), nil
	case timeType:
		return &schema.Props{Type: "string", Format: "date-time"}, nil
	case rawType:
		return preserve(), nil
	}
	if p, ok := ownSchema(t); ok {
		return p, nil
	}
	switch t.Kind() {
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

// jsonField is one field of a struct as encoding/json sees it: its name,
// and whether omitempty is set.
type jsonField struct {
	name      string
	omitempty bool
	// inline is an embedded struct whose fields are its parent's.
	inline bool
}

// jsonFieldOf reads f's json tag; ok is false for a field encoding/json
// skips.
func jsonFieldOf(f reflect.StructField) (jf jsonField, ok bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" && opts == "" || !f.IsExported() && !f.Anonymous {
		return jf, false
	}
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if f.Anonymous && ft.Kind() == reflect.Struct && (name == "" || strings.Contains(","+opts+",", ",inline,")) {
		return jsonField{inline: true}, true
	}
	if !f.IsExported() {
		return jf, false
	}
	if name == "" {
		name = f.Name
	}
	return jsonField{name: name, omitempty: strings.Contains(","+opts+",", ",omitempty,")}, true
}

// addFields adds the JSON fields of struct t to p, flattening embedded
// structs without a JSON name.
func addFields(p *schema.Props, t reflect.Type, seen map[reflect.Type]bool, root bool) error {
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
			if err := addFields(p, ft, seen, root); err != nil {
				return err
			}
			continue
		}
		name := jf.name
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
		required := !jf.omitempty && f.Type.Kind() != reflect.Pointer
		if d := f.Tag.Get("doc"); d != "" {
			fp.Description = d
		}
		if m, ok := f.Tag.Lookup("annex"); ok {
			if required, err = applyMarkers(fp, m, required); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		if c, ok := f.Tag.Lookup("cel"); ok {
			rules, err := celRules(c)
			if err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
			fp.XValidations = append(fp.XValidations, rules...)
		}
		if required && !(root && (name == "metadata" || name == "kind" || name == "apiVersion")) {
			p.Required = append(p.Required, name)
		}
		p.Properties[name] = *fp
	}
	return nil
}
