package annex_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/rest"
)

// A server of one stored resource, on the embedded store in a data
// directory, with a self-signed certificate and an admin kubeconfig written
// there: Build, then Run until the context ends.
func ExampleBuilder() {
	dir, _ := os.MkdirTemp("", "annex-example")
	defer os.RemoveAll(dir)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	b := annex.Builder{
		Name:    "shop",
		DataDir: dir,
		Resources: []rest.Resource{{
			Group: "shop.example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true,
			PrinterColumns: []rest.PrinterColumn{{Name: "Color", Type: "string", JSONPath: ".spec.color"}},
		}},
		Serving:       annex.Serving{Listener: ln},
		Observability: annex.Observability{Logger: zap.NewNop()},
	}
	srv, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	for { // ready once the watch cache has listed the store
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if w.Code == http.StatusOK {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("kubeconfig:", filepath.Base(srv.KubeconfigPath()))
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// kubeconfig: kubeconfig
	// Run: <nil>
}

// A stage of your own, placed after authentication (it may read the user):
// here it tags every response with the user's name.
func ExampleInsertedStage() {
	dir, _ := os.MkdirTemp("", "annex-example")
	defer os.RemoveAll(dir)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	tag := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, ok := filters.UserFrom(r.Context()); ok {
				w.Header().Set("X-Served-For", u.Name)
			}
			next.ServeHTTP(w, r)
		})
	}
	b := annex.Builder{
		DataDir:   dir,
		Resources: []rest.Resource{{Group: "shop.example.com", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}},
		Stages: []annex.InsertedStage{{After: annex.StageAuthentication,
			Stage: annex.Stage{Name: "served-for", Needs: []annex.Provision{annex.ProvidesUser}, Filter: tag}}},
		Serving:       annex.Serving{Listener: ln},
		Observability: annex.Observability{Logger: zap.NewNop()},
	}
	srv, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/livez", nil)) // anonymous
	fmt.Println(w.Code, w.Header().Get("X-Served-For"))
	// Output: 200 system:anonymous
}
