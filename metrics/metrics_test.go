package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/annexapi/annex/filters"
)

func TestFilterRecordsKubeLabels(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := New(Config{Registerer: reg, Known: func(g, v, r string) bool {
		return g == "platform.example.com" && v == "v1alpha1" && r == "environments"
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Filter()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write([]byte("{}"))
	}))
	do := func(method, target string, info filters.RequestInfo) {
		r := httptest.NewRequest(method, target, nil)
		r = r.WithContext(filters.ContextWithRequestInfo(r.Context(), &info))
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	env := filters.RequestInfo{IsResourceRequest: true, APIGroup: "platform.example.com", APIVersion: "v1alpha1", Resource: "environments", Namespace: "dev"}
	list, create, watch := env, env, env
	list.Verb, create.Verb, watch.Verb = "list", "create", "watch"
	do(http.MethodGet, "/apis/platform.example.com/v1alpha1/namespaces/dev/environments", list)
	do(http.MethodPost, "/apis/platform.example.com/v1alpha1/namespaces/dev/environments?dryRun=All", create)
	do(http.MethodGet, "/apis/platform.example.com/v1alpha1/namespaces/dev/environments?watch=1", watch)
	unknown := filters.RequestInfo{IsResourceRequest: true, APIGroup: "evil", APIVersion: "v1", Resource: "x1234", Verb: "list"}
	do(http.MethodGet, "/apis/evil/v1/x1234", unknown)
	do(http.MethodGet, "/healthz", filters.RequestInfo{Path: "/healthz", Verb: "get"})

	want := `
# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="other",scope="cluster",subresource="",verb="LIST",version=""} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="platform.example.com",resource="environments",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="platform.example.com",resource="environments",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="platform.example.com",resource="environments",scope="resource",subresource="",verb="POST",version="v1alpha1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_request_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.durations); n != 5 {
		t.Fatalf("duration series = %d, want 5", n)
	}
	// The SLI leaves out long-running requests (the watch); response sizes
	// are of reads (GET and LIST) only.
	if n := testutil.CollectAndCount(m.sli); n != 4 {
		t.Errorf("SLI series = %d, want 4", n)
	}
	if n := testutil.CollectAndCount(m.sizes); n != 3 {
		t.Errorf("response size series = %d, want 3", n)
	}
	// A second request of a series counts in the same children.
	do(http.MethodGet, "/apis/platform.example.com/v1alpha1/namespaces/dev/environments", list)
	if got := testutil.ToFloat64(m.requests.WithLabelValues("LIST", "", "platform.example.com", "v1alpha1", "environments", "", "namespace", "apiserver", "200")); got != 2 {
		t.Errorf("LIST requests = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(m.durations); n != 5 {
		t.Errorf("duration series = %d after a repeat, want 5", n)
	}
	m.ObserveRejection("authentication")
	if got := testutil.ToFloat64(m.rejections.WithLabelValues("authentication")); got != 1 {
		t.Fatalf("rejections = %v", got)
	}
}

func TestNilRegistererRecordsNothing(t *testing.T) {
	t.Parallel()
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	called := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })
	m.Filter()(next).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	m.ObserveRejection("x")
	if !called {
		t.Fatal("next not called")
	}
}

func TestSecondRegistrationFails(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := New(Config{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Registerer: reg}); err == nil {
		t.Fatal("want an error registering twice on one registry")
	}
}
