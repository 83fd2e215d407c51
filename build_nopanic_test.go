package annex

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
)

// TestBuildNeverPanics: every broken resource declaration a newcomer writes
// (the ones issue #20 met as nil-pointer panics among them) makes Build
// return an error naming the problem, never panic, alone or combined.
func TestBuildNeverPanics(t *testing.T) {
	t.Parallel()
	get := rest.GetterFunc(func(context.Context, string, string) ([]byte, error) { return nil, nil })
	list := rest.ListerFunc(func(context.Context, string, rest.ListOptions) ([][]byte, error) { return nil, nil })
	breakers := map[string]func(*rest.Resource){
		"no_kind":           func(r *rest.Resource) { r.Kind = "" },
		"no_plural":         func(r *rest.Resource) { r.Plural = "" },
		"no_group_version":  func(r *rest.Resource) { r.Group, r.Version = "", "" },
		"bad_version":       func(r *rest.Resource) { r.Version = "V 1" },
		"upper_case_plural": func(r *rest.Resource) { r.Plural = "Widgets" },
		"column_without_type": func(r *rest.Resource) {
			r.PrinterColumns = []rest.PrinterColumn{{Name: "Owner", JSONPath: ".spec.owner"}}
		},
		"column_without_name": func(r *rest.Resource) {
			r.PrinterColumns = []rest.PrinterColumn{{Type: "string", JSONPath: ".spec.owner"}}
		},
		"column_bad_json_path": func(r *rest.Resource) {
			r.PrinterColumns = []rest.PrinterColumn{{Name: "X", Type: "string", JSONPath: "spec["}}
		},
		"status_on_computed":       func(r *rest.Resource) { r.Getter, r.Lister, r.StatusSubresource = get, list, true },
		"computed_getter_only":     func(r *rest.Resource) { r.Getter = get },
		"selectable_field_unknown": func(r *rest.Resource) { r.Strategy.SelectableFields = []string{"spec.nope["} },
		"schema_property_without_type": func(r *rest.Resource) {
			r.Schema = &schema.Props{Type: "object", Properties: map[string]schema.Props{"spec": {Properties: map[string]schema.Props{"a": {Type: "string"}}}}}
		},
		"schema_string_default_on_integer": func(r *rest.Resource) {
			r.Schema = &schema.Props{Type: "object", Properties: map[string]schema.Props{"replicas": {Type: "integer", Default: []byte(`"three"`)}}}
		},
	}
	for name, breakIt := range breakers {
		t.Run(name, func(t *testing.T) {
			r := widgets()
			breakIt(&r)
			for _, resources := range [][]rest.Resource{{r}, {r, r}, {widgets(), r}} {
				err := buildNoPanic(t, resources)
				if name == "computed_getter_only" {
					continue // may be legal; what matters is no panic
				}
				if err == nil {
					t.Errorf("%d resources: Build accepted the broken declaration", len(resources))
				}
			}
		})
	}
}

func buildNoPanic(t *testing.T, resources []rest.Resource) (err error) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
			t.Errorf("Build panicked: %v", v)
		}
	}()
	b := Builder{Resources: resources, DataDir: t.TempDir(), Serving: Serving{Listener: mustListen(t)}, Observability: Observability{Logger: zap.NewNop()}}
	srv, err := b.Build()
	if err == nil {
		srv.closeAll()
	}
	return err
}
