package filters

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// The cases follow k8s.io/apiserver's requestinfo_test.go and the rules of
// apiserver-anatomy §3.4.
func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		method string
		url    string
		want   RequestInfo
	}{
		{"core_list_namespaces", "GET", "/api/v1/namespaces",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces", Parts: []string{"namespaces"}}},
		{"core_get_namespace", "GET", "/api/v1/namespaces/other",
			RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Name: "other", Parts: []string{"namespaces", "other"}}},
		{"core_list_namespaced", "GET", "/api/v1/namespaces/other/pods",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Parts: []string{"pods"}}},
		{"core_get_namespaced", "GET", "/api/v1/namespaces/other/pods/foo",
			RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Parts: []string{"pods", "foo"}}},
		{"head_is_get", "HEAD", "/api/v1/namespaces/other/pods/foo",
			RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Parts: []string{"pods", "foo"}}},
		{"core_list_all_namespaces", "GET", "/api/v1/pods",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"head_list", "HEAD", "/api/v1/pods",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"proxy_path_verb", "GET", "/api/v1/proxy/namespaces/other/pods/foo",
			RequestInfo{IsResourceRequest: true, Verb: "proxy", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Parts: []string{"pods", "foo"}}},
		{"proxy_path_verb_has_no_subresource", "GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
			RequestInfo{IsResourceRequest: true, Verb: "proxy", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Parts: []string{"pods", "foo", "subpath", "not", "a", "subresource"}}},
		{"watch_path_verb", "GET", "/api/v1/watch/pods",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_path_verb_namespaced", "GET", "/api/v1/watch/namespaces/other/pods",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_path_verb_named_keeps_no_selectors", "GET", "/apis/group/version/watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "name", Parts: []string{"resource", "name"}}},
		{"watch_path_verb_list_keeps_no_selectors", "GET", "/apis/group/version/watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}}},
		{"watch_true", "GET", "/api/v1/pods?watch=true",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_false", "GET", "/api/v1/pods?watch=false",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_1", "GET", "/api/v1/namespaces/other/pods?watch=1",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_0", "GET", "/api/v1/namespaces/other/pods?watch=0",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_FALSE_any_case", "GET", "/api/v1/pods?watch=FALSE",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_empty_value_is_watch", "GET", "/api/v1/pods?watch=",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_other_value_is_watch", "GET", "/api/v1/pods?watch=yes",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_first_value_counts", "GET", "/api/v1/pods?watch=false&watch=true",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"watch_with_bad_limit_still_watch", "GET", "/api/v1/pods?watch=true&limit=x&fieldSelector=metadata.name=a",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}, FieldSelector: "metadata.name=a"}},
		{"subresource", "GET", "/api/v1/namespaces/other/pods/foo/status",
			RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Subresource: "status", Name: "foo", Parts: []string{"pods", "foo", "status"}}},
		{"subresource_extra_parts_ignored", "GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath",
			RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Subresource: "proxy", Name: "foo", Parts: []string{"pods", "foo", "proxy", "subpath"}}},
		{"namespace_finalize", "PUT", "/api/v1/namespaces/other/finalize",
			RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Subresource: "finalize", Name: "other", Parts: []string{"namespaces", "other", "finalize"}}},
		{"namespace_status", "PUT", "/api/v1/namespaces/other/status",
			RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Subresource: "status", Name: "other", Parts: []string{"namespaces", "other", "status"}}},
		{"cluster_scoped_named_status", "PUT", "/apis/example.com/v1/widgets/w1/status",
			RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "apis", APIGroup: "example.com", APIVersion: "v1", Resource: "widgets", Subresource: "status", Name: "w1", Parts: []string{"widgets", "w1", "status"}}},
		{"patch", "PATCH", "/api/v1/namespaces/other/pods/foo",
			RequestInfo{IsResourceRequest: true, Verb: "patch", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Parts: []string{"pods", "foo"}}},
		{"delete", "DELETE", "/api/v1/namespaces/other/pods/foo",
			RequestInfo{IsResourceRequest: true, Verb: "delete", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Parts: []string{"pods", "foo"}}},
		{"create", "POST", "/api/v1/namespaces/other/pods",
			RequestInfo{IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Parts: []string{"pods"}}},
		{"unknown_method_has_empty_verb", "OPTIONS", "/api/v1/pods",
			RequestInfo{IsResourceRequest: true, Verb: "", APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"deletecollection_cluster", "DELETE", "/api/v1/nodes",
			RequestInfo{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "api", APIVersion: "v1", Resource: "nodes", Parts: []string{"nodes"}}},
		{"deletecollection_namespaces", "DELETE", "/api/v1/namespaces",
			RequestInfo{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces", Parts: []string{"namespaces"}}},
		{"deletecollection_group_with_selectors", "DELETE", "/apis/extensions/v1/namespaces/other/pods?fieldSelector=foo=bar&labelSelector=baz=qux",
			RequestInfo{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "apis", APIGroup: "extensions", APIVersion: "v1", Namespace: "other", Resource: "pods", Parts: []string{"pods"}, FieldSelector: "foo=bar", LabelSelector: "baz=qux"}},
		{"group_create", "POST", "/apis/extensions/v1beta3/namespaces/other/pods",
			RequestInfo{IsResourceRequest: true, Verb: "create", APIPrefix: "apis", APIGroup: "extensions", APIVersion: "v1beta3", Namespace: "other", Resource: "pods", Parts: []string{"pods"}}},
		{"field_selector_name", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "name1", Parts: []string{"resource"}, FieldSelector: "metadata.name=name1"}},
		{"field_selector_name_double_equals", "GET", "/apis/group/version/resource?fieldSelector=metadata.name==name1",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "name1", Parts: []string{"resource"}, FieldSelector: "metadata.name==name1"}},
		{"field_selector_name_not_equal_is_not_a_name", "GET", "/apis/group/version/resource?fieldSelector=metadata.name!=name1",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name!=name1"}},
		{"field_selector_name_with_watch", "GET", "/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "name1", Parts: []string{"resource"}, FieldSelector: "metadata.name=name1"}},
		{"field_selector_first_sorted_term_wins", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=b,metadata.name=a",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "a", Parts: []string{"resource"}, FieldSelector: "metadata.name=b,metadata.name=a"}},
		{"field_selector_escaped_value", "GET", `/apis/group/version/resource?fieldSelector=metadata.name=a\,b`,
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "a,b", Parts: []string{"resource"}, FieldSelector: `metadata.name=a\,b`}},
		{"field_selector_name_not_a_path_segment", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=..",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name=.."}},
		{"field_selector_name_with_percent", "GET", "/apis/group/version/resource?fieldSelector=metadata.name%3Da%2525b",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name=a%25b"}},
		{"field_selector_invalid_term_drops_name", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name=name1,foo"}},
		{"field_selector_invalid_with_watch", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true",
			RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name=name1,foo"}},
		{"field_selector_invalid_with_watch_false", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name=name1,foo"}},
		{"bad_label_selector_drops_name", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=a&labelSelector=-bad-",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name=a", LabelSelector: "-bad-"}},
		{"bad_limit_drops_name", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=a&limit=ten",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "metadata.name=a"}},
		{"good_options_keep_name", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=a&labelSelector=app+in+(x,y),!old&limit=10&timeoutSeconds=5",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "a", Parts: []string{"resource"}, FieldSelector: "metadata.name=a", LabelSelector: "app in (x,y),!old"}},
		{"random_selectors", "GET", "/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Parts: []string{"resource"}, FieldSelector: "foo=bar", LabelSelector: "baz=qux"}},
		{"repeated_selectors_first_counts", "GET", "/apis/group/version/resource?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar&labelSelector=foo=bar&labelSelector=foo=baz",
			RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "foo", Parts: []string{"resource"}, FieldSelector: "metadata.name=foo", LabelSelector: "foo=bar"}},
		{"selectors_ignored_for_get", "GET", "/apis/group/version/resource/name?fieldSelector=foo=bar&labelSelector=foo=bar",
			RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "apis", APIGroup: "group", APIVersion: "version", Resource: "resource", Name: "name", Parts: []string{"resource", "name"}}},

		// Non-resource requests.
		{"root", "GET", "/",
			RequestInfo{Path: "/", Verb: "get"}},
		{"healthz", "GET", "/healthz",
			RequestInfo{Path: "/healthz", Verb: "get"}},
		{"api_discovery", "GET", "/api",
			RequestInfo{Path: "/api", Verb: "get"}},
		{"core_version_discovery", "GET", "/api/v1",
			RequestInfo{Path: "/api/v1", Verb: "get"}},
		{"apis_discovery", "GET", "/apis",
			RequestInfo{Path: "/apis", Verb: "get"}},
		{"group_discovery", "GET", "/apis/group",
			RequestInfo{Path: "/apis/group", Verb: "get"}},
		// Kubernetes records the prefix before it finds too few segments.
		{"group_version_discovery", "GET", "/apis/group/version/",
			RequestInfo{Path: "/apis/group/version/", Verb: "get", APIPrefix: "apis"}},
		{"bad_prefix", "POST", "/badprefix/version/resource",
			RequestInfo{Path: "/badprefix/version/resource", Verb: "post"}},
		{"pprof", "GET", "/debug/pprof/profile",
			RequestInfo{Path: "/debug/pprof/profile", Verb: "get"}},
		{"openapi", "GET", "/openapi/v3/apis/group/version",
			RequestInfo{Path: "/openapi/v3/apis/group/version", Verb: "get"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tt.method, tt.url, nil)
			got, err := RequestInfoResolver{}.Resolve(r)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			want := tt.want
			if want.Path == "" {
				want.Path = r.URL.Path
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("Resolve(%s %s)\n got %+v\nwant %+v", tt.method, tt.url, *got, want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"/api/v1/watch", "/apis/g/v/proxy", "/api/v1/watch/"} {
		r := httptest.NewRequest("GET", url, nil)
		info, err := RequestInfoResolver{}.Resolve(r)
		if !errors.Is(err, ErrUnresolvablePath) {
			t.Errorf("Resolve(%s) error = %v, want ErrUnresolvablePath", url, err)
		}
		if info == nil || !info.IsResourceRequest || info.APIVersion == "" {
			t.Errorf("Resolve(%s) info = %+v, want what was known", url, info)
		}
	}
}

func TestResolveCustomPrefixes(t *testing.T) {
	t.Parallel()
	res := RequestInfoResolver{APIPrefixes: []string{"custom", "api"}, GrouplessAPIPrefixes: []string{"api"}}
	got, err := res.Resolve(httptest.NewRequest("GET", "/custom/g/v1/things/x", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.APIPrefix != "custom" || got.APIGroup != "g" || got.Resource != "things" || got.Name != "x" {
		t.Errorf("got %+v", got)
	}
	got, _ = res.Resolve(httptest.NewRequest("GET", "/apis/g/v1/things/x", nil))
	if got.IsResourceRequest {
		t.Errorf("/apis is not a prefix here, got %+v", got)
	}
}

func TestWithRequestInfoResolver(t *testing.T) {
	t.Parallel()
	var got *RequestInfo
	h := WithRequestInfoResolver(RequestInfoResolver{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = RequestInfoFrom(r.Context())
	}))

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/apis/g/v/namespaces/ns/things?watch=1", nil))
	if w.Code != 200 || got == nil || got.Verb != "watch" || got.Namespace != "ns" {
		t.Fatalf("code %d, info %+v", w.Code, got)
	}

	got = nil
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/watch?x=<b>", nil))
	if got != nil {
		t.Fatal("handler ran after a resolver error")
	}
	// Kubernetes answers 500 text/plain here; a bad path is the client's.
	wantBody := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}` + "\n"
	if w.Code != 404 || w.Body.String() != wantBody || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("got %d %q %q, want 404 %q", w.Code, w.Header().Get("Content-Type"), w.Body.String(), wantBody)
	}
}

func TestLabelSelectorValidity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		sel   string
		valid bool
	}{
		{"empty", "", true},
		{"spaces_only", "   ", true},
		{"exists", "app", true},
		{"not_exists", "!app", true},
		{"equals", "app=web", true},
		{"double_equals", "app==web", true},
		{"not_equals", "app!=web", true},
		{"empty_value", "app=", true},
		{"in", "env in (prod, dev)", true},
		{"notin", "env notin (prod)", true},
		{"in_empty_parens", "env in ()", true},
		{"in_commas", "env in (,a,,)", true},
		{"gt", "replicas>3", true},
		{"lt_negative_is_bad_value", "replicas<-3", false},
		{"gt_not_integer", "replicas>x", false},
		{"gt_empty", "replicas>", false},
		{"prefixed_key", "example.com/app=web", true},
		{"uppercase_prefix", "Example.com/app=web", false},
		{"two_slashes", "a/b/c=web", false},
		{"key_in_keyword", "in", true},
		{"several", "a=b,c!=d,!e,f in (g)", true},
		{"trailing_comma", "a=b,", false},
		{"leading_comma", ",a", false},
		{"bad_key", "-app=web", false},
		{"bad_value", "app=-web", false},
		{"long_value", "app=" + strings.Repeat("a", 64), false},
		{"value_63", "app=" + strings.Repeat("a", 63), true},
		{"not_exists_with_op", "!app=web", false},
		{"missing_paren", "env in prod", false},
		{"unclosed_paren", "env in (prod", false},
		{"double_op", "a==b=c", false},
		{"space_in_value", "a=b c", false},
		{"nul_ends_token", "a\x00b", false},
		{"nul_at_end", "a\x00", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := validLabelSelector(tt.sel); got != tt.valid {
				t.Errorf("validLabelSelector(%q) = %v, want %v", tt.sel, got, tt.valid)
			}
		})
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"/api/v1/pods", "/api/v1/namespaces/ns/pods/p/status", "/apis/g/v/watch/things",
		"/apis/g/v/things?fieldSelector=metadata.name%3Dx&labelSelector=a+in+(b)",
		"/api/v1/watch", "/", "//", "/api//v1//pods", "/apis/g/v/things?labelSelector=!%28%29",
		"/api/v1/namespaces?watch=%00", "/apis/g/v/proxy/namespaces",
	} {
		f.Add("GET", s)
		f.Add("DELETE", s)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest("GET", "http://h", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Method = method
		if err := setTarget(r, target); err != nil {
			return
		}
		info, err := RequestInfoResolver{}.Resolve(r)
		if info == nil {
			t.Fatalf("nil info (err %v)", err)
		}
		if err == nil && info.IsResourceRequest && info.Resource == "" && len(info.Parts) > 0 && info.Parts[0] != "" {
			t.Fatalf("resource request without resource: %+v", info)
		}
	})
}

func setTarget(r *http.Request, target string) error {
	u, err := r.URL.Parse(target)
	if err != nil {
		return err
	}
	r.URL = u
	return nil
}
