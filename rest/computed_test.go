package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

const metricsBase = "/apis/metrics.k8s.io/v1beta1"

// gauge is a computed object source: cluster-scoped nodes and namespaced
// pods with a fixed usage.
type gauge struct{ pods map[string][]string } // namespace → names

func nodeJSON(name, zone string) []byte {
	return fmt.Appendf(nil, `{"kind":"NodeMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"name":%q,"labels":{"zone":%q}},"timestamp":"2024-05-01T12:00:00Z","window":"15s","usage":{"cpu":"250m","memory":"12Mi"}}`, name, zone)
}

func podJSON(ns, name string) []byte {
	return fmt.Appendf(nil, `{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"name":%q,"namespace":%q,"labels":{"app":%q}},"timestamp":"2024-05-01T12:00:00Z","window":"15s","containers":[]}`, name, ns, name)
}

func metricsResources(calls *[]ListOptions) []Resource {
	nodes := map[string]string{"node-a": "east", "node-b": "west"}
	pods := map[string][]string{"team-a": {"web", "db"}, "team-b": {"web"}}
	return []Resource{
		{
			Group: "metrics.k8s.io", Version: "v1beta1", Plural: "nodes", Kind: "NodeMetrics",
			PrinterColumns: []PrinterColumn{{Name: "CPU", Type: "string", Format: "quantity", JSONPath: ".usage.cpu"}, {Name: "Window", Type: "string", JSONPath: ".window"}},
			Getter: GetterFunc(func(_ context.Context, ns, name string) ([]byte, error) {
				if zone, ok := nodes[name]; ok && ns == "" {
					return nodeJSON(name, zone), nil
				}
				return nil, fmt.Errorf("node %s: %w", name, storage.ErrNotFound)
			}),
			Lister: ListerFunc(func(_ context.Context, _ string, opts ListOptions) ([][]byte, error) {
				*calls = append(*calls, opts)
				return [][]byte{nodeJSON("node-a", "east"), nodeJSON("node-b", "west")}, nil
			}),
		},
		{
			Group: "metrics.k8s.io", Version: "v1beta1", Plural: "pods", Kind: "PodMetrics", Namespaced: true,
			// Ignores the namespace on purpose: the handler filters.
			Lister: ListerFunc(func(context.Context, string, ListOptions) ([][]byte, error) {
				var out [][]byte
				for _, ns := range []string{"team-a", "team-b"} {
					for _, n := range pods[ns] {
						out = append(out, podJSON(ns, n))
					}
				}
				return out, nil
			}),
		},
	}
}

func newComputedEnv(t *testing.T, calls *[]ListOptions) *testEnv {
	t.Helper()
	h, err := NewHandler(Config{Resources: metricsResources(calls)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h))
	t.Cleanup(srv.Close)
	return &testEnv{srv: srv}
}

func itemNames(t *testing.T, r response) []string {
	t.Helper()
	var l struct {
		Kind     string
		Metadata map[string]any
		Items    []struct {
			Metadata struct{ Name, Namespace string }
		}
	}
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("not a list: %v: %s", err, r.body)
	}
	var out []string
	for _, i := range l.Items {
		out = append(out, strings.TrimPrefix(i.Metadata.Namespace+"/"+i.Metadata.Name, "/"))
	}
	return out
}

func TestComputedReads(t *testing.T) {
	var calls []ListOptions
	e := newComputedEnv(t, &calls)
	cases := []struct {
		name, path string
		code       int
		want       []string // item names of a list
		body       string   // substring of the body
	}{
		{name: "get_node", path: metricsBase + "/nodes/node-a", code: 200, body: `"usage":{"cpu":"250m","memory":"12Mi"}`},
		{name: "get_missing_node", path: metricsBase + "/nodes/node-z", code: 404, body: `nodes.metrics.k8s.io \"node-z\" not found`},
		{name: "list_nodes", path: metricsBase + "/nodes", code: 200, want: []string{"node-a", "node-b"}, body: `{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[`},
		{name: "list_nodes_label_selector", path: metricsBase + "/nodes?labelSelector=zone%3Dwest", code: 200, want: []string{"node-b"}},
		{name: "list_nodes_field_selector", path: metricsBase + "/nodes?fieldSelector=metadata.name%3Dnode-a", code: 200, want: []string{"node-a"}},
		{name: "list_nodes_bad_selector", path: metricsBase + "/nodes?labelSelector=zone%3D%3D%3D", code: 400},
		{name: "list_pods_namespace", path: metricsBase + "/namespaces/team-a/pods", code: 200, want: []string{"team-a/web", "team-a/db"}},
		{name: "list_pods_all_namespaces", path: metricsBase + "/pods?labelSelector=app%3Dweb", code: 200, want: []string{"team-a/web", "team-b/web"}},
		{name: "get_pod_without_getter", path: metricsBase + "/namespaces/team-a/pods/web", code: 405},
		{name: "node_under_namespace", path: metricsBase + "/namespaces/team-a/nodes/node-a", code: 404},
		{name: "watch_nodes", path: metricsBase + "/nodes?watch=true", code: 405, body: `watch is not supported on resources of kind \"nodes.metrics.k8s.io\"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "GET", c.path, "")
			if r.code != c.code {
				t.Fatalf("code %d, want %d: %s", r.code, c.code, r.body)
			}
			if c.body != "" && !strings.Contains(string(r.body), c.body) {
				t.Errorf("body lacks %s:\n%s", c.body, r.body)
			}
			if c.want != nil {
				if got := itemNames(t, r); strings.Join(got, ",") != strings.Join(c.want, ",") {
					t.Errorf("items %v, want %v", got, c.want)
				}
			}
		})
	}
	// The Lister saw the parsed selectors as hints.
	found := false
	for _, o := range calls {
		if o.Labels.Matches(map[string]string{"zone": "west"}) && !o.Labels.Matches(map[string]string{"zone": "east"}) {
			found = true
		}
	}
	if !found {
		t.Errorf("the Lister never got the label selector zone=west: %+v", calls)
	}
}

func TestComputedWritesAreMethodNotAllowed(t *testing.T) {
	e := newComputedEnv(t, new([]ListOptions))
	body := string(nodeJSON("node-c", "east"))
	cases := []struct{ name, method, path, body string }{
		{"create", "POST", metricsBase + "/nodes", body},
		{"update", "PUT", metricsBase + "/nodes/node-a", body},
		{"patch", "PATCH", metricsBase + "/nodes/node-a", `{}`},
		{"delete", "DELETE", metricsBase + "/nodes/node-a", ""},
		{"deletecollection", "DELETE", metricsBase + "/nodes", ""},
		{"create_pod", "POST", metricsBase + "/namespaces/team-a/pods", string(podJSON("team-a", "x"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct := "application/json"
			if c.method == "PATCH" {
				ct = "application/merge-patch+json"
			}
			r := e.do(t, c.method, c.path, c.body, "Content-Type", ct)
			if r.code != http.StatusMethodNotAllowed {
				t.Fatalf("code %d, want 405: %s", r.code, r.body)
			}
			want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}`
			if got := strings.TrimSpace(string(r.body)); got != want {
				t.Errorf("body\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestComputedDiscoveryAndTable(t *testing.T) {
	e := newComputedEnv(t, new([]ListOptions))
	r := e.do(t, "GET", metricsBase, "")
	var rl meta.APIResourceList
	if err := json.Unmarshal(r.body, &rl); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, res := range rl.APIResources {
		got[res.Name] = strings.Join(res.Verbs, ",")
		if res.StorageVersionHash != "" {
			t.Errorf("%s has a storageVersionHash; computed resources have none", res.Name)
		}
	}
	if got["nodes"] != "get,list" || got["pods"] != "list" {
		t.Errorf("verbs %v; want nodes get,list and pods list", got)
	}

	r = e.do(t, "GET", metricsBase+"/nodes?labelSelector=zone%3Deast", "", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var tbl meta.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if len(tbl.ColumnDefinitions) != 3 || tbl.ColumnDefinitions[1].Name != "CPU" || tbl.ColumnDefinitions[1].Format != "quantity" {
		t.Errorf("columns %+v", tbl.ColumnDefinitions)
	}
	if len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells) != "[node-a 250m 15s]" {
		t.Errorf("rows %+v", tbl.Rows)
	}
}

func TestComputedConfigErrors(t *testing.T) {
	g := GetterFunc(func(context.Context, string, string) ([]byte, error) { return nil, nil })
	base := Resource{Group: "metrics.k8s.io", Version: "v1beta1", Plural: "nodes", Kind: "NodeMetrics"}
	cases := []struct {
		name   string
		mutate func(*Resource)
		want   error
	}{
		{"neither", func(*Resource) {}, ErrNoStorage},
		{"both", func(r *Resource) { r.Getter = g; r.Storage = openStore(t) }, ErrInvalidResource},
		{"status_subresource", func(r *Resource) { r.Getter = g; r.StatusSubresource = true }, ErrInvalidResource},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.mutate(&r)
			if _, err := NewHandler(Config{Resources: []Resource{r}}); !errors.Is(err, c.want) {
				t.Errorf("err %v, want %v", err, c.want)
			}
		})
	}
}

// TestComputedHelpers: a computed resource written with ObjectJSON and
// NotFound serves the envelope kube clients expect and kube's 404.
func TestComputedHelpers(t *testing.T) {
	t.Parallel()
	type usage struct {
		Window string            `json:"window"`
		Usage  map[string]string `json:"usage"`
	}
	var r Resource
	r = Resource{Group: "metrics.k8s.io", Version: "v1beta1", Plural: "pods", Kind: "PodMetrics", Namespaced: true,
		Getter: GetterFunc(func(_ context.Context, ns, name string) ([]byte, error) {
			if name != "web" {
				return nil, NotFound(ns, name)
			}
			return r.ObjectJSON(ns, name, map[string]string{"app": "web"}, usage{Window: "15s", Usage: map[string]string{"cpu": "5m"}})
		}),
		Lister: ListerFunc(func(context.Context, string, ListOptions) ([][]byte, error) { return nil, nil }),
	}
	h, err := NewHandler(Config{Resources: []Resource{r}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + metricsBase + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := get("/namespaces/team-a/pods/web")
	want := `{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"labels":{"app":"web"},"name":"web","namespace":"team-a"},"window":"15s","usage":{"cpu":"5m"}}`
	if code != 200 || strings.TrimSpace(body) != want {
		t.Errorf("GET: %d %s\nwant %s", code, body, want)
	}
	code, body = get("/namespaces/team-a/pods/db")
	if code != 404 || !strings.Contains(body, `"message":"pods.metrics.k8s.io \"db\" not found"`) {
		t.Errorf("GET missing: %d %s", code, body)
	}
	if _, err := r.ObjectJSON("ns", "x", nil, map[string]any{"metadata": 1}); err == nil {
		t.Error("fields holding metadata accepted")
	}
	if _, err := r.ObjectJSON("ns", "x", nil, []int{1}); err == nil {
		t.Error("fields that are not an object accepted")
	}
}
