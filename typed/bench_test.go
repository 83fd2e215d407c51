package typed_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/filters"
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
