// This file holds the typed resources: Stored (objects kept in storage,
// hooks over *T) and Computed (objects computed on read); versions.go
// holds a stored resource served at several versions.

package typed

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

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
	// Deprecated and DeprecationWarning mark a deprecated version of a
	// resource served at several (Versions).
	Deprecated         bool
	DeprecationWarning string
	// Storage is the store; nil means the Builder's.
	Storage storage.Interface

	// PrepareForCreate and PrepareForUpdate normalise an object before
	// validation; only what they change is written back to the object (see
	// the package doc). ValidateCreate, ValidateUpdate (main resource) and
	// ValidateStatusUpdate (<plural>/status) report field errors, kube's
	// 422 for any (rest.Strategy has the details). When any hook is set,
	// an object that does not decode into T is refused with a 422 worded
	// as the schema's validation words it, and no hook sees it.
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
		StatusSubresource: s.StatusSubresource, Storage: s.Storage, Schema: props,
		Deprecated: s.Deprecated, DeprecationWarning: s.DeprecationWarning}
	r.Strategy = s.strategy()
	return r, nil
}

// strategy wraps the typed hooks. With any of them set, every validation
// (create, update, status) checks that the object decodes into T.
func (s Stored[T]) strategy() rest.Strategy {
	st := rest.Strategy{SelectableFields: s.SelectableFields}
	if s.PrepareForCreate == nil && s.PrepareForUpdate == nil && s.ValidateCreate == nil &&
		s.ValidateUpdate == nil && s.ValidateStatusUpdate == nil {
		return st
	}
	if f := s.PrepareForCreate; f != nil {
		st.PrepareForCreate = func(ctx context.Context, obj rest.Object) {
			v, err := decode[T](obj)
			if err != nil {
				return // skipped: ValidateCreate refuses the object
			}
			before := mustEncode(v, "PrepareForCreate")
			f(ctx, v)
			mustApply(obj, before, mustEncode(v, "PrepareForCreate"))
		}
	}
	if f := s.PrepareForUpdate; f != nil {
		st.PrepareForUpdate = func(ctx context.Context, obj, old rest.Object) {
			v, err1 := decode[T](obj)
			o, err2 := decode[T](old)
			if err1 != nil || err2 != nil {
				return // skipped: ValidateUpdate refuses the object
			}
			before := mustEncode(v, "PrepareForUpdate")
			f(ctx, v, o)
			mustApply(obj, before, mustEncode(v, "PrepareForUpdate"))
		}
	}
	validate := s.ValidateCreate
	st.ValidateCreate = func(ctx context.Context, obj rest.Object) field.ErrorList {
		v, err := decode[T](obj)
		if err != nil {
			return undecodable[T](obj, err)
		}
		if validate == nil {
			return nil
		}
		return validate(ctx, v)
	}
	// A PrepareForUpdate hook skipped for a stored object that does not
	// decode is reported by ValidateUpdate, as one for the new object is.
	st.ValidateUpdate = wrapUpdate(s.ValidateUpdate, s.PrepareForUpdate != nil)
	st.ValidateStatusUpdate = wrapUpdate(s.ValidateStatusUpdate, false)
	return st
}

// wrapUpdate wraps an update validation; the stored object is decoded for
// f, and checked when checkOld is set.
func wrapUpdate[T any](f func(ctx context.Context, obj, old *T) field.ErrorList, checkOld bool) func(ctx context.Context, obj, old rest.Object) field.ErrorList {
	return func(ctx context.Context, obj, old rest.Object) field.ErrorList {
		v, err := decode[T](obj)
		if err != nil {
			return undecodable[T](obj, err)
		}
		if f == nil && !checkOld {
			return nil
		}
		o, err := decode[T](old)
		if err != nil {
			return field.ErrorList{field.InternalError(nil, fmt.Errorf("the stored object does not decode into %s: %w", reflect.TypeFor[T](), err))}
		}
		if f == nil {
			return nil
		}
		return f(ctx, v, o)
	}
}

// mustEncode encodes a hook's T. A T that decoded and does not encode (a
// MarshalJSON that fails, a NaN the hook set) is a bug of the program's:
// the wrapper panics, which the server answers with a 500, rather than
// store the object without the hook's changes.
func mustEncode(v any, hook string) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Errorf("typed: %s: encode %T: %w", hook, v, err))
	}
	return b
}

// mustApply writes the hook's changes back; see mustEncode for why a
// failure panics.
func mustApply(obj rest.Object, before, after []byte) {
	if err := applyChanges(obj, before, after); err != nil {
		panic(err)
	}
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
	// Changes, when set, makes the resource watchable (rest.Resource's
	// Events): until ctx ends it calls put with each object when it appears
	// or changes, and remove when one goes away. It runs only while someone
	// watches, each time after the objects List returns for every namespace
	// have been put: putting them again is no change, and an object put
	// with other values is one.
	Changes func(ctx context.Context, put func(*T) error, remove func(namespace, name string) error) error
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
	if c.Changes != nil {
		r.Events = rest.EventSourceFunc(func(ctx context.Context, sink rest.EventSink) error {
			put := func(v *T) error {
				b, err := envelope(v)
				if err != nil {
					return err
				}
				return sink.Put(b)
			}
			// The state first, from List: Changes says only what changes.
			vs, err := c.List(ctx, "", rest.ListOptions{})
			if err != nil {
				return err
			}
			for i := range vs {
				if err := put(&vs[i]); err != nil {
					return err
				}
			}
			sink.Synced()
			return c.Changes(ctx, put, sink.Remove)
		})
	}
	return r, nil
}
