package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/annexapi/annex/storage"
)

func TestGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.create(t, "ns1", "a", nil, "alice")
	stored, err := e.store.Get(context.Background(), storage.ObjectKey("platform.example.com", "environments", "ns1", "a"), storage.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		headers []string
		code    int
		reason  string
		message string
	}{
		{name: "stored_bytes", path: "/namespaces/ns1/environments/a", code: 200},
		{name: "protobuf_first_accept", path: "/namespaces/ns1/environments/a", headers: []string{"Accept", "application/vnd.kubernetes.protobuf, */*"}, code: 200},
		{name: "not_found", path: "/namespaces/ns1/environments/b", code: 404, reason: "NotFound",
			message: `environments.platform.example.com "b" not found`},
		{name: "too_large_resource_version", path: "/namespaces/ns1/environments/a?resourceVersion=999999", code: 504, reason: "Timeout",
			message: "Timeout: Too large resource version: 999999, current: 2"},
		{name: "invalid_resource_version", path: "/namespaces/ns1/environments/a?resourceVersion=abc", code: 400, reason: "BadRequest",
			message: `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`},
		{name: "not_acceptable", path: "/namespaces/ns1/environments/a", headers: []string{"Accept", "text/html"}, code: 406, reason: "NotAcceptable",
			message: "only the following media types are accepted: application/json, application/yaml"},
		{name: "unknown_transform", path: "/namespaces/ns1/environments/a", headers: []string{"Accept", "application/json;as=Widget;g=meta.k8s.io;v=v1"}, code: 406, reason: "NotAcceptable"},
		{name: "partial_list_for_one_object", path: "/namespaces/ns1/environments/a", headers: []string{"Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}, code: 406, reason: "NotAcceptable",
			message: "you requested PartialObjectMetadataList, but the requested object is not a list (*unstructured.Unstructured)"},
		{name: "bad_include_object", path: "/namespaces/ns1/environments/a?includeObject=All", code: 400, reason: "BadRequest", message: `unrecognized includeObject value: "All"`},
		{name: "unknown_resource", path: "/namespaces/ns1/widgets/a", code: 404, reason: "NotFound",
			message: "the server could not find the requested resource"},
		{name: "namespaced_without_namespace", path: "/environments/a", code: 404, reason: "NotFound"},
		{name: "patch_without_patch_type", path: "/namespaces/ns1/environments/a", code: 415, reason: "UnsupportedMediaType",
			message: "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			if tc.name == "patch_without_patch_type" {
				method = "PATCH"
			}
			r := e.do(t, method, envBase+tc.path, "", tc.headers...)
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			if r.code == 200 {
				if want := append(append([]byte{}, stored.Data...), '\n'); !bytes.Equal(r.body, want) {
					t.Errorf("body = %s\nwant   %s", r.body, want)
				}
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				return
			}
			s := r.status(t)
			if string(s.Reason) != tc.reason || (tc.message != "" && s.Message != tc.message) {
				t.Errorf("status = %q %q, want %q %q", s.Reason, s.Message, tc.reason, tc.message)
			}
		})
	}
}

// listBody is the part of a list response the tests look at.
type listBody struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		ResourceVersion    string `json:"resourceVersion"`
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	} `json:"items"`
}

func decodeList(t *testing.T, r response) listBody {
	t.Helper()
	var l listBody
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("list: %v: %s", err, r.body)
	}
	return l
}

func names(l listBody) []string {
	out := []string{}
	for _, it := range l.Items {
		out = append(out, it.Metadata.Namespace+"/"+it.Metadata.Name)
	}
	return out
}

func TestListEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.create(t, "ns2", "x", nil, "alice")
	if r := e.do(t, "DELETE", envBase+"/namespaces/ns2/environments/x", ""); r.code != 200 {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	r := e.do(t, "GET", envBase+"/namespaces/ns1/environments", "")
	if r.code != 200 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	// The exact bytes: items [] (never null), kind <Kind>List, the list RV.
	want := `{"kind":"EnvironmentList","apiVersion":"platform.example.com/v1alpha1","metadata":{"resourceVersion":"3"},"items":[]}` + "\n"
	if string(r.body) != want {
		t.Errorf("body = %s\nwant   %s", r.body, want)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.create(t, "ns1", "a", map[string]string{"tier": "dev"}, "alice")
	e.create(t, "ns1", "b", map[string]string{"tier": "prod"}, "bob")
	e.create(t, "ns1", "c", map[string]string{"tier": "dev"}, "alice")
	e.create(t, "ns2", "d", nil, "dave")
	q := url.QueryEscape
	tests := []struct {
		name    string
		path    string
		code    int
		names   []string
		message string
	}{
		{name: "namespace", path: "/namespaces/ns1/environments", code: 200, names: []string{"ns1/a", "ns1/b", "ns1/c"}},
		{name: "all_namespaces", path: "/environments", code: 200, names: []string{"ns1/a", "ns1/b", "ns1/c", "ns2/d"}},
		{name: "label_selector", path: "/environments?labelSelector=" + q("tier in (dev)"), code: 200, names: []string{"ns1/a", "ns1/c"}},
		{name: "field_selector_name", path: "/environments?fieldSelector=" + q("metadata.name=b"), code: 200, names: []string{"ns1/b"}},
		{name: "field_selector_namespace", path: "/environments?fieldSelector=" + q("metadata.namespace!=ns1"), code: 200, names: []string{"ns2/d"}},
		{name: "field_selector_strategy_field", path: "/environments?fieldSelector=" + q("spec.owner=alice"), code: 200, names: []string{"ns1/a", "ns1/c"}},
		{name: "unknown_field", path: "/environments?fieldSelector=" + q("spec.tier=dev"), code: 400,
			message: `"spec.tier" is not a known field selector: only "metadata.name", "metadata.namespace", "spec.owner"`},
		{name: "bad_label_selector", path: "/environments?labelSelector=" + q("a in"), code: 400},
		{name: "match_without_rv", path: "/environments?resourceVersionMatch=Exact", code: 422,
			message: `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`},
		{name: "exact_zero", path: "/environments?resourceVersion=0&resourceVersionMatch=Exact", code: 422,
			message: `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{name: "unknown_match", path: "/environments?resourceVersion=1&resourceVersionMatch=Newest", code: 422,
			message: `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`},
		{name: "continue_with_rv", path: "/environments?continue=abc&resourceVersion=3", code: 400,
			message: "specifying resource version is not allowed when using continue"},
		{name: "send_initial_events_on_list", path: "/environments?sendInitialEvents=true", code: 422,
			message: `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`},
		{name: "invalid_continue", path: "/environments?continue=not-a-token", code: 400},
		{name: "too_large_rv", path: "/environments?resourceVersion=999999", code: 504,
			message: "Timeout: Too large resource version: 999999, current: 5"},
		{name: "bad_limit", path: "/environments?limit=x", code: 400, message: `strconv.ParseInt: parsing "x": invalid syntax`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, "GET", envBase+tc.path, "")
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			if r.code != 200 {
				if s := r.status(t); tc.message != "" && s.Message != tc.message {
					t.Errorf("message = %q\nwant      %q", s.Message, tc.message)
				}
				return
			}
			l := decodeList(t, r)
			if l.Kind != "EnvironmentList" || l.APIVersion != "platform.example.com/v1alpha1" || l.Metadata.ResourceVersion != "5" {
				t.Errorf("list head = %+v", l)
			}
			if got := names(l); !equalStrings(got, tc.names) {
				t.Errorf("items = %v, want %v", got, tc.names)
			}
		})
	}
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		e.create(t, "ns1", n, nil, "alice")
	}
	var got []string
	path := envBase + "/namespaces/ns1/environments?limit=2"
	var firstRV string
	for page := 0; ; page++ {
		r := e.do(t, "GET", path, "")
		if r.code != 200 {
			t.Fatalf("page %d: %d %s", page, r.code, r.body)
		}
		l := decodeList(t, r)
		got = append(got, names(l)...)
		if page == 0 {
			firstRV = l.Metadata.ResourceVersion
			if l.Metadata.RemainingItemCount == nil || *l.Metadata.RemainingItemCount != 3 {
				t.Errorf("remainingItemCount = %v, want 3", l.Metadata.RemainingItemCount)
			}
			// A write between pages must not show up: pages are a snapshot.
			e.create(t, "ns1", "bb", nil, "alice")
		} else if l.Metadata.ResourceVersion != firstRV {
			t.Errorf("page %d resourceVersion = %s, want %s", page, l.Metadata.ResourceVersion, firstRV)
		}
		if l.Metadata.Continue == "" {
			break
		}
		path = envBase + "/namespaces/ns1/environments?limit=2&continue=" + url.QueryEscape(l.Metadata.Continue)
	}
	if want := []string{"ns1/a", "ns1/b", "ns1/c", "ns1/d", "ns1/e"}; !equalStrings(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
}

func TestListExpiredContinue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, n := range []string{"a", "b", "c"} {
		e.create(t, "ns1", n, nil, "alice")
	}
	r := e.do(t, "GET", envBase+"/namespaces/ns1/environments?limit=1", "")
	l := decodeList(t, r)
	e.create(t, "ns1", "d", nil, "alice")
	e.create(t, "ns1", "e", nil, "alice")
	if err := e.store.Compact(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	r = e.do(t, "GET", envBase+"/namespaces/ns1/environments?limit=1&continue="+url.QueryEscape(l.Metadata.Continue), "")
	if r.code != http.StatusGone {
		t.Fatalf("code = %d: %s", r.code, r.body)
	}
	s := r.status(t)
	if s.Reason != "Expired" || s.Message != msgInconsistentContinue || s.Metadata.Continue == "" {
		t.Errorf("status = %+v", s)
	}
	// The fresh token continues from the same key at the latest revision.
	r = e.do(t, "GET", envBase+"/namespaces/ns1/environments?limit=10&continue="+url.QueryEscape(s.Metadata.Continue), "")
	if r.code != 200 {
		t.Fatalf("inconsistent continue: %d %s", r.code, r.body)
	}
	if got := names(decodeList(t, r)); !equalStrings(got, []string{"ns1/b", "ns1/c", "ns1/d", "ns1/e"}) {
		t.Errorf("continued items = %v", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
