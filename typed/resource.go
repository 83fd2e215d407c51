package typed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// Stored declares a stored resource whose objects are T values: the schema
// is derived from T (SchemaOf), and the hooks take *T. The zero value of a
// hook does nothing; the other fields mean what rest.Resource's do.
type Stored[T any] struct {
	Group, Version, Plural, Kind string
	Singular                     string
	Namespaced                   bool
	ShortNames, Categories       []string
	PrinterColumns               []rest.PrinterColumn
	StatusSubresource            bool
	SelectableFields             []string
	// Storage is the store; nil means the Builder's.
	Storage storage.Interface

	// PrepareForCreate and PrepareForUpdate normalise an object before
	// validation; ValidateCreate, ValidateUpdate (main resource) and
	// ValidateStatusUpdate (<plural>/status) report field errors, kube's
	// 422 for any (rest.Strategy has the details).
	PrepareForCreate     func(ctx context.Context, obj *T)
	PrepareForUpdate     func(ctx context.Context, obj, old *T)
	ValidateCreate       func(ctx context.Context, obj *T) field.ErrorList
	ValidateUpdate       func(ctx context.Context, obj, old *T) field.ErrorList
	ValidateStatusUpdate func(ctx context.Context, obj, old *T) field.ErrorList
}

// Resource is the rest.Resource of s: its schema derived from T and its
// hooks wrapped to decode the objects into T (only when a hook is set).
func (s Stored[T]) Resource() (rest.Resource, error) {
	props, err := SchemaOf[T]()
	if err != nil {
		return rest.Resource{}, err
	}
	r := rest.Resource{Group: s.Group, Version: s.Version, Plural: s.Plural, Singular: s.Singular, Kind: s.Kind,
		Namespaced: s.Namespaced, ShortNames: s.ShortNames, Categories: s.Categories, PrinterColumns: s.PrinterColumns,
		StatusSubresource: s.StatusSubresource, Storage: s.Storage, Schema: props}
	r.Strategy.SelectableFields = s.SelectableFields
	if f := s.PrepareForCreate; f != nil {
		r.Strategy.PrepareForCreate = func(ctx context.Context, obj rest.Object) {
			v, err := decode[T](obj)
			if err != nil {
				return // validation reports what does not decode
			}
			f(ctx, v)
			_ = encodeInto(obj, v)
		}
	}
	if f := s.PrepareForUpdate; f != nil {
		r.Strategy.PrepareForUpdate = func(ctx context.Context, obj, old rest.Object) {
			v, err1 := decode[T](obj)
			o, err2 := decode[T](old)
			if err1 != nil || err2 != nil {
				return
			}
			f(ctx, v, o)
			_ = encodeInto(obj, v)
		}
	}
	if f := s.ValidateCreate; f != nil {
		r.Strategy.ValidateCreate = func(ctx context.Context, obj rest.Object) field.ErrorList {
			v, err := decode[T](obj)
			if err != nil {
				return decodeError(err)
			}
			return f(ctx, v)
		}
	}
	r.Strategy.ValidateUpdate = wrapUpdate(s.ValidateUpdate)
	r.Strategy.ValidateStatusUpdate = wrapUpdate(s.ValidateStatusUpdate)
	return r, nil
}

func wrapUpdate[T any](f func(ctx context.Context, obj, old *T) field.ErrorList) func(ctx context.Context, obj, old rest.Object) field.ErrorList {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, obj, old rest.Object) field.ErrorList {
		v, err := decode[T](obj)
		if err != nil {
			return decodeError(err)
		}
		o, err := decode[T](old)
		if err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
		return f(ctx, v, o)
	}
}

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

// encodeInto replaces obj's content with v's JSON form.
func encodeInto(obj rest.Object, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	clear(obj)
	for k, x := range m {
		obj[k] = x
	}
	return nil
}

// decodeError reports an object T cannot hold (a number too large for its
// field, say) as kube reports a type error.
func decodeError(err error) field.ErrorList {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return field.ErrorList{field.TypeInvalid(field.NewPath(te.Field), te.Value, "must be of type "+te.Type.String())}
	}
	return field.ErrorList{field.InternalError(nil, err)}
}

// Computed declares a resource computed on read whose objects are T values:
// Get returns one (nil for none: 404 NotFound), List those of a namespace
// ("" for all, or a cluster-scoped resource). Each value's kind and
// apiVersion are filled in; its metadata (name, namespace) is the value's
// own.
type Computed[T any] struct {
	Group, Version, Plural, Kind string
	Namespaced                   bool
	ShortNames, Categories       []string
	PrinterColumns               []rest.PrinterColumn

	Get  func(ctx context.Context, namespace, name string) (*T, error)
	List func(ctx context.Context, namespace string, opts rest.ListOptions) ([]T, error)
}

// Resource is the rest.Resource of c, its schema derived from T.
func (c Computed[T]) Resource() (rest.Resource, error) {
	props, err := SchemaOf[T]()
	if err != nil {
		return rest.Resource{}, err
	}
	if c.Get == nil || c.List == nil {
		return rest.Resource{}, fmt.Errorf("typed: computed %s needs Get and List", c.Plural)
	}
	r := rest.Resource{Group: c.Group, Version: c.Version, Plural: c.Plural, Kind: c.Kind, Namespaced: c.Namespaced,
		ShortNames: c.ShortNames, Categories: c.Categories, PrinterColumns: c.PrinterColumns, Schema: props}
	apiVersion := c.Group + "/" + c.Version
	envelope := func(v *T) ([]byte, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("typed: %s values must encode as JSON objects: %w", c.Kind, err)
		}
		m["kind"], _ = json.Marshal(c.Kind)
		m["apiVersion"], _ = json.Marshal(apiVersion)
		return json.Marshal(m)
	}
	r.Getter = rest.GetterFunc(func(ctx context.Context, namespace, name string) ([]byte, error) {
		v, err := c.Get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, rest.NotFound(namespace, name)
		}
		return envelope(v)
	})
	r.Lister = rest.ListerFunc(func(ctx context.Context, namespace string, opts rest.ListOptions) ([][]byte, error) {
		vs, err := c.List(ctx, namespace, opts)
		if err != nil {
			return nil, err
		}
		out := make([][]byte, len(vs))
		for i := range vs {
			if out[i], err = envelope(&vs[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	return r, nil
}
