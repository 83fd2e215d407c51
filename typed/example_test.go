package typed_test

import (
	"context"
	"fmt"
	"net"
	"os"

	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/typed"
)

// The newcomer's server (a stored resource with a schema, columns, status
// and a status-aware validation hook, and a computed resource), on the
// typed layer.

// Widget is a stored resource.
type Widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            WidgetSpec   `json:"spec"`
	Status          WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Color    string         `json:"color" annex:"enum=red|green|blue" doc:"Color of the widget."`
	Replicas int32          `json:"replicas,omitempty" annex:"minimum=0,maximum=10,default=1" doc:"How many to make."`
	Memory   typed.Quantity `json:"memory,omitempty" doc:"Memory per widget."`
	Finish   *string        `json:"finish,omitempty" annex:"nullable" doc:"Surface finish; null for none."`
	Options  WidgetOptions  `json:"options,omitempty" annex:"preserveUnknownFields" doc:"Options; a vendor's own are kept as given."`
}

type WidgetOptions struct {
	Glaze string `json:"glaze,omitempty"`
}

type WidgetStatus struct {
	Made int32 `json:"made,omitempty"`
}

// Inventory is computed on read.
type Inventory struct {
	meta.ObjectMeta `json:"metadata,omitempty"`
	Widgets         int `json:"widgets"`
}

func widgetServer(dir string, ln net.Listener) (*annex.Server, error) {
	widgets, err := typed.Stored[Widget]{
		Group: "shop.example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true, StatusSubresource: true,
		PrinterColumns: []rest.PrinterColumn{{Name: "Color", Type: "string", JSONPath: ".spec.color"}, {Name: "Made", Type: "integer", JSONPath: ".status.made"}},
		// Labels a new widget with its color (kubectl get widgets -l color=red).
		PrepareForCreate: func(_ context.Context, w *Widget) {
			if w.Labels == nil {
				w.Labels = map[string]string{}
			}
			w.Labels["color"] = w.Spec.Color
		},
		ValidateUpdate: func(_ context.Context, w, old *Widget) field.ErrorList {
			if w.Spec.Color != old.Spec.Color && old.Status.Made > 0 {
				return field.ErrorList{field.Forbidden(field.NewPath("spec", "color"), "may not change once widgets are made")}
			}
			return nil
		},
	}.Resource()
	if err != nil {
		return nil, err
	}
	inventories, err := typed.Computed[Inventory]{
		Group: "shop.example.com", Version: "v1", Plural: "inventories", Kind: "Inventory", Namespaced: true,
		Get: func(_ context.Context, ns, name string) (*Inventory, error) {
			if name != "main" {
				return nil, nil // 404
			}
			return &Inventory{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: ns}, Widgets: 42}, nil
		},
		List: func(_ context.Context, ns string, _ rest.ListOptions) ([]Inventory, error) {
			return []Inventory{{ObjectMeta: meta.ObjectMeta{Name: "main", Namespace: ns}, Widgets: 42}}, nil
		},
	}.Resource()
	if err != nil {
		return nil, err
	}
	b := annex.Builder{Name: "shop", DataDir: dir, Resources: []rest.Resource{widgets, inventories}, Serving: annex.Serving{Listener: ln}, Observability: annex.Observability{Logger: zap.NewNop()}}
	return b.Build()
}

func ExampleStored() {
	dir, _ := os.MkdirTemp("", "annex-typed")
	defer os.RemoveAll(dir)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv, err := widgetServer(dir, ln)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real program runs until a signal; here, stop at once
	fmt.Println("Run:", srv.Run(ctx))
	// Output: Run: <nil>
}
