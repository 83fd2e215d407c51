package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/rest"
)

// A computed resource: objects made on read, not stored. ObjectJSON fills
// the envelope (kind, apiVersion, metadata) around the object's own
// fields; NotFound is the 404 kube clients expect.
func ExampleResource_ObjectJSON() {
	type usage struct {
		Window string            `json:"window"`
		Usage  map[string]string `json:"usage"`
	}
	var nodes rest.Resource
	nodes = rest.Resource{Group: "metrics.example.com", Version: "v1", Plural: "nodes", Kind: "NodeMetrics",
		Getter: rest.GetterFunc(func(_ context.Context, _, name string) ([]byte, error) {
			if name != "node-a" {
				return nil, rest.NotFound("", name)
			}
			return nodes.ObjectJSON("", name, nil, usage{Window: "15s", Usage: map[string]string{"cpu": "250m"}})
		}),
		Lister: rest.ListerFunc(func(ctx context.Context, _ string, _ rest.ListOptions) ([][]byte, error) {
			a, err := nodes.ObjectJSON("", "node-a", nil, usage{Window: "15s", Usage: map[string]string{"cpu": "250m"}})
			return [][]byte{a}, err
		}),
	}
	h, err := rest.NewHandler(rest.Config{Resources: []rest.Resource{nodes}})
	if err != nil {
		fmt.Println(err)
		return
	}
	serve := filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h)
	for _, path := range []string{"/apis/metrics.example.com/v1/nodes/node-a", "/apis/metrics.example.com/v1/nodes/node-b"} {
		w := httptest.NewRecorder()
		serve.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Print(w.Code, " ", w.Body.String())
	}
	// Output:
	// 200 {"kind":"NodeMetrics","apiVersion":"metrics.example.com/v1","metadata":{"name":"node-a"},"window":"15s","usage":{"cpu":"250m"}}
	// 404 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes.metrics.example.com \"node-b\" not found","reason":"NotFound","details":{"name":"node-b","group":"metrics.example.com","kind":"nodes"},"code":404}
}
