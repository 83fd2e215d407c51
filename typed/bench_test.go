package typed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/typed"
)

// BenchmarkTypedReads compares GET and LIST (100 objects) of a typed
// resource with the same resource declared untyped, in one run, through
// the same handler and store: reads serve stored bytes either way.
//
//	go test -run '^$' -bench TypedReads -benchtime 20000x ./typed
func BenchmarkTypedReads(b *testing.B) {
	store, err := bbolt.Open(filepath.Join(b.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	typedRes, err := typed.Stored[Widget]{Group: "shop.example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true,
		Storage: store, ValidateUpdate: func(context.Context, *Widget, *Widget) field.ErrorList { return nil }}.Resource()
	if err != nil {
		b.Fatal(err)
	}
	plain := rest.Resource{Group: "shop.example.com", Version: "v1", Plural: "gadgets", Kind: "Gadget", Namespaced: true, Storage: store}
	h, err := rest.NewHandler(rest.Config{Resources: []rest.Resource{typedRes, plain}})
	if err != nil {
		b.Fatal(err)
	}
	serve := filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h)
	ctx := context.Background()
	for _, plural := range []string{"widgets", "gadgets"} {
		for i := range 100 {
			name := fmt.Sprintf("o%03d", i)
			obj := fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"ns"},"spec":{"color":"red","replicas":1}}`, name)
			if _, err := store.Create(ctx, storage.ObjectKey("shop.example.com", plural, "ns", name), []byte(obj)); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, op := range []struct{ name, path string }{{"get", "/o050"}, {"list", ""}} {
		for _, plural := range []string{"widgets", "gadgets"} {
			b.Run(op.name+"/"+map[string]string{"widgets": "typed", "gadgets": "untyped"}[plural], func(b *testing.B) {
				r := httptest.NewRequest(http.MethodGet, "/apis/shop.example.com/v1/namespaces/ns/"+plural+op.path, nil)
				b.ReportAllocs()
				for b.Loop() {
					w := httptest.NewRecorder()
					serve.ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
				}
			})
		}
	}
}

// BenchmarkTypedHooks measures what the typed hooks' wrappers cost on one
// object, called as the write path calls them: PrepareForCreate (decode
// into T, the hook, the hook's changes written back) and ValidateCreate
// (decode into T, the hook).
//
//	go test -run '^$' -bench TypedHooks -count 5 ./typed
func BenchmarkTypedHooks(b *testing.B) {
	// A type of its own, so that runs before and after a change of the
	// example's Widget compare.
	type spec struct {
		Color    string  `json:"color"`
		Replicas int32   `json:"replicas,omitempty"`
		Memory   string  `json:"memory,omitempty"`
		Finish   *string `json:"finish,omitempty"`
	}
	type status struct {
		Made int32 `json:"made,omitempty"`
	}
	type widget struct {
		meta.TypeMeta   `json:",inline"`
		meta.ObjectMeta `json:"metadata,omitempty"`
		Spec            spec   `json:"spec"`
		Status          status `json:"status,omitempty"`
	}
	res, err := typed.Stored[widget]{Group: "shop.example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true,
		PrepareForCreate: func(_ context.Context, w *widget) {
			if w.Spec.Replicas == 0 {
				w.Spec.Replicas = 1
			}
			w.Status = status{}
		},
		ValidateCreate: func(context.Context, *widget) field.ErrorList { return nil },
	}.Resource()
	if err != nil {
		b.Fatal(err)
	}
	const body = `{"apiVersion":"shop.example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"ns","uid":"0b7c6f7e-1c1e-4d4e-9a39-5b3c1f0f4a11",` +
		`"creationTimestamp":"2024-05-01T12:00:00Z","generation":1,"labels":{"app":"shop","tier":"dev"}},"spec":{"color":"red","memory":"1Gi"},"status":{"made":3}}`
	newObj := func() rest.Object {
		var obj rest.Object
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			b.Fatal(err)
		}
		return obj
	}
	ctx := context.Background()
	b.Run("prepare_create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			obj := newObj()
			b.StartTimer()
			res.Strategy.PrepareForCreate(ctx, obj)
		}
	})
	b.Run("validate_create", func(b *testing.B) {
		obj := newObj()
		b.ReportAllocs()
		for b.Loop() {
			if errs := res.Strategy.ValidateCreate(ctx, obj); len(errs) != 0 {
				b.Fatal(errs)
			}
		}
	})
}
