package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

// FuzzSchemaValidation runs arbitrary objects (and, as the stored state,
// a second one) through defaulting, pruning and validation against a schema
// with every kind of rule (CEL with oldSelf, patterns, formats, list types,
// int-or-string, embedded resources): nothing panics, each cause names a
// field, Validate's error is a 422 Status exactly when there are causes,
// and the verdict does not change on a second run.
func FuzzSchemaValidation(f *testing.F) {
	for _, s := range [][2]string{
		{`{"spec":{"owner":"alice","replicas":3}}`, ``},
		{`{"spec":{"owner":"Alice","replicas":11,"tier":"qa","email":"x","cidr":"1.2.3.4/40"}}`, ``},
		{`{"spec":{"owner":"a","tier":"dev"}}`, `{"spec":{"owner":"a","tier":"prod"}}`},
		{`{"spec":{"owner":"a","tags":["x","x","y","z"],"ports":[{"name":"a","port":1},{"name":"a","port":2}]}}`, ``},
		{`{"spec":{"owner":"a","port":"http","template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":5}}}}`, ``},
		{`{"spec":{"owner":"a","replicas":1e400,"port":1.5}}`, ``},
		{`{"spec":null,"extra":{"x":[1,{"y":null}]}}`, `{"spec":[]}`},
		{`{"spec":{"owner":"a","tier":5,"tags":"x","ports":[null,{"name":null}]}}`, `{"spec":{"tier":{}}}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	sv, err := NewSchemaValidator(schema.MustParseYAML(envSchema), meta.GroupKind{Group: "example.annex.dev", Kind: "Environment"}, SchemaOptions{})
	if err != nil {
		f.Fatal(err)
	}
	p := schema.MustParseYAML(envSchema)
	decodeObj := func(b []byte) map[string]any {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil {
			return nil
		}
		return m
	}
	f.Fuzz(func(t *testing.T, objJSON, oldJSON []byte) {
		obj := decodeObj(objJSON)
		if obj == nil {
			return
		}
		old := decodeObj(oldJSON) // nil: a create
		schema.Default(p, obj)
		schema.Prune(p, obj)
		ctx := context.Background()
		causes := sv.Causes(ctx, obj, old)
		for _, c := range causes {
			if c.Field == "" && c.Message == "" {
				t.Fatalf("a cause with neither field nor message: %+v", causes)
			}
		}
		if again := sv.Causes(ctx, obj, old); !reflect.DeepEqual(again, causes) {
			t.Fatalf("second run: %+v, first %+v", again, causes)
		}
		err := sv.Validate(ctx, obj, old, "x")
		var st *meta.Status
		switch {
		case len(causes) == 0 && err != nil:
			t.Fatalf("no causes, error %v", err)
		case len(causes) > 0 && (!errors.As(err, &st) || st.Code != http.StatusUnprocessableEntity):
			t.Fatalf("%d causes, error %v", len(causes), err)
		}
	})
}

// TestSchemaNumberBeyondBig: a json.Number math/big cannot read where the
// schema wants an integer made the JSON Schema engine panic (found by
// FuzzSchemaValidation); it is a field error instead.
func TestSchemaNumberBeyondBig(t *testing.T) {
	sv, err := NewSchemaValidator(schema.MustParseYAML(envSchema), meta.GroupKind{Group: "example.annex.dev", Kind: "Environment"}, SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"spec": map[string]any{"owner": "a", "replicas": json.Number("1e77777400"), "port": json.Number("1.5")}}
	causes := sv.Causes(context.Background(), obj, nil)
	want := []meta.StatusCause{{Type: meta.CauseTypeFieldValueInvalid, Field: "spec.replicas",
		Message: "Invalid value: 1e77777400: must be a number within the range of a 64-bit float"}}
	if !reflect.DeepEqual(causes, want) {
		t.Fatalf("causes %+v, want %+v", causes, want)
	}
}
