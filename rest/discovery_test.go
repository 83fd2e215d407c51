package rest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const v2Accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
	tests := []struct {
		name        string
		path        string
		accept      string
		code        int
		contentType string
		body        string
	}{
		{name: "group_list", path: "/apis", code: 200, contentType: "application/json",
			body: `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"platform.example.com","versions":[{"groupVersion":"platform.example.com/v1alpha1","version":"v1alpha1"}],"preferredVersion":{"groupVersion":"platform.example.com/v1alpha1","version":"v1alpha1"}}]}`},
		{name: "group", path: "/apis/platform.example.com", code: 200, contentType: "application/json",
			body: `{"kind":"APIGroup","apiVersion":"v1","name":"platform.example.com","versions":[{"groupVersion":"platform.example.com/v1alpha1","version":"v1alpha1"}],"preferredVersion":{"groupVersion":"platform.example.com/v1alpha1","version":"v1alpha1"}}`},
		{name: "resource_list", path: "/apis/platform.example.com/v1alpha1", code: 200, contentType: "application/json",
			body: `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"platform.example.com/v1alpha1","resources":[{"name":"environments","singularName":"environment","namespaced":true,"kind":"Environment","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["env"],"categories":["all"],"storageVersionHash":"` + meta.StorageVersionHash("platform.example.com", "v1alpha1", "Environment") + `"}]}`},
		{name: "aggregated_v2", path: "/apis", accept: v2Accept, code: 200,
			contentType: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
			body:        `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"platform.example.com","creationTimestamp":null},"versions":[{"version":"v1alpha1","resources":[{"resource":"environments","responseKind":{"group":"platform.example.com","version":"v1alpha1","kind":"Environment"},"scope":"Namespaced","singularResource":"environment","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["env"],"categories":["all"]}],"freshness":"Current"}]}]}`},
		{name: "aggregator_accept_without_json", path: "/apis", accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
			code: 200, contentType: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
		{name: "v2beta1_is_served", path: "/apis", accept: "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", code: 200, contentType: "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"},
		{name: "unknown_group", path: "/apis/other.example.com", code: 404},
		{name: "unknown_version", path: "/apis/platform.example.com/v1", code: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, "GET", tc.path, "", "Accept", tc.accept)
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d: %s", r.code, tc.code, r.body)
			}
			if tc.contentType != "" && r.header.Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type = %q, want %q", r.header.Get("Content-Type"), tc.contentType)
			}
			if tc.body != "" && strings.TrimSuffix(string(r.body), "\n") != tc.body {
				t.Errorf("body = %s\nwant   %s", r.body, tc.body)
			}
		})
	}
	t.Run("etag_304", func(t *testing.T) {
		r := e.do(t, "GET", "/apis", "", "Accept", v2Accept)
		etag := r.header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) || len(etag) != 130 || r.header.Get("Vary") != "Accept" {
			t.Fatalf("ETag %q Vary %q", etag, r.header.Get("Vary"))
		}
		r = e.do(t, "GET", "/apis", "", "Accept", v2Accept, "If-None-Match", etag)
		if r.code != http.StatusNotModified || len(r.body) != 0 {
			t.Errorf("conditional GET = %d %s", r.code, r.body)
		}
	})
}

func TestNewHandlerErrors(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	good := environmentResource(s)
	dup := good
	noStorage := good
	noStorage.Plural, noStorage.Kind, noStorage.ShortNames, noStorage.Storage = "widgets", "Widget", nil, nil
	bad := Resource{Group: "Bad_Group", Version: "1", Plural: "Things", Kind: "thing", Storage: s}
	_, err := NewHandler(Config{Resources: []Resource{good, dup, noStorage, bad}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []error{ErrDuplicateResource, ErrNoStorage, ErrInvalidResource} {
		if !errors.Is(err, want) {
			t.Errorf("error %v does not include %v", err, want)
		}
	}
	for _, frag := range []string{"group must be", "version must", "plural must", "kind must", "resource declared twice"} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error lacks %q:\n%v", frag, err)
		}
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("not a *ConfigError: %T", err)
	}
	if _, err := NewHandler(Config{Resources: []Resource{good}}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestStatusForError(t *testing.T) {
	t.Parallel()
	gr := meta.GroupResource{Group: "platform.example.com", Resource: "environments"}
	tests := []struct {
		name      string
		err       error
		ec        ErrorContext
		code      int32
		reason    meta.StatusReason
		message   string
		continue_ string
	}{
		{"not_found", &storage.Error{Err: storage.ErrNotFound}, ErrorContext{Name: "a"}, 404, "NotFound", `environments.platform.example.com "a" not found`, ""},
		{"already_exists", &storage.Error{Err: storage.ErrAlreadyExists}, ErrorContext{Name: "a"}, 409, "AlreadyExists", `environments.platform.example.com "a" already exists`, ""},
		{"conflict", &storage.Error{Err: storage.ErrConflict}, ErrorContext{Name: "a"}, 409, "Conflict", `Operation cannot be fulfilled on environments.platform.example.com "a": ` + meta.OptimisticLockErrorMsg, ""},
		{"too_large", &storage.Error{Err: storage.ErrTooLargeResourceVersion, ResourceVersion: 7}, ErrorContext{ResourceVersion: "9"}, 504, "Timeout", "Timeout: Too large resource version: 9, current: 7", ""},
		{"too_large_continue", &storage.Error{Err: storage.ErrTooLargeResourceVersion, ResourceVersion: 7, Requested: 99}, ErrorContext{Verb: "list", Continue: "t"}, 504, "Timeout", "Timeout: Too large resource version: 99, current: 7", ""},
		{"expired_watch", &storage.Error{Err: storage.ErrExpired}, ErrorContext{Verb: "watch"}, 410, "Expired", msgExpiredWatch, ""},
		{"expired_list", &storage.Error{Err: storage.ErrExpired}, ErrorContext{Verb: "list"}, 410, "Expired", msgExpiredList, ""},
		{"expired_continue", &storage.Error{Err: storage.ErrExpired}, ErrorContext{Verb: "list", Continue: "t"}, 410, "Expired", msgExpiredContinue, ""},
		{"inconsistent_continue", &storage.Error{Err: storage.ErrExpired, Continue: "fresh"}, ErrorContext{Verb: "list", Continue: "t"}, 410, "Expired", msgInconsistentContinue, "fresh"},
		{"invalid_continue", &storage.Error{Err: storage.ErrInvalidContinue, Msg: "continue key is not valid: x"}, ErrorContext{}, 400, "BadRequest", "invalid continue token: continue key is not valid: x", ""},
		{"status_passes_through", meta.NewForbidden(gr, "a", "no"), ErrorContext{}, 403, "Forbidden", `environments.platform.example.com "a" is forbidden: no`, ""},
		{"other", errors.New("disk on fire"), ErrorContext{}, 500, "InternalError", "Internal error occurred: disk on fire", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.ec.Resource = gr
			s := StatusForError(tc.err, tc.ec)
			if s.Code != tc.code || s.Reason != tc.reason || s.Message != tc.message || s.Metadata.Continue != tc.continue_ {
				t.Errorf("got %d %s %q %q", s.Code, s.Reason, s.Message, s.Metadata.Continue)
			}
		})
	}
	if s := StatusForError(&storage.Error{Err: storage.ErrTooLargeResourceVersion}, ErrorContext{}); s.Details == nil || s.Details.RetryAfterSeconds != 1 ||
		len(s.Details.Causes) != 1 || s.Details.Causes[0].Type != meta.CauseTypeResourceVersionTooLarge {
		t.Errorf("too large details = %+v", s.Details)
	}
}

func TestNegotiateJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		accept string
		stream bool
		want   bool
	}{
		{"", false, true},
		{"application/json", false, true},
		{"application/vnd.kubernetes.protobuf, */*", false, true},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", false, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", false, false},
		{"application/yaml", false, false},
		{"application/*;q=0.5", false, true},
		{"application/json;q=0", false, false},
		{"application/json;stream=watch", true, true},
		{"application/json;stream=watch", false, false},
	}
	for _, tc := range tests {
		if got := negotiateJSON(tc.accept, tc.stream); got != tc.want {
			t.Errorf("negotiateJSON(%q, %v) = %v, want %v", tc.accept, tc.stream, got, tc.want)
		}
	}
}

// A store that is not ready yet (a watch cache loading its initial list)
// is kube's 429 "storage is (re)initializing" with Retry-After 1, never a 500.
func TestStatusForNotReady(t *testing.T) {
	err := fmt.Errorf("watch cache is not ready: %w", storage.ErrNotReady)
	s := StatusForError(err, ErrorContext{Verb: "watch"})
	if s.Code != 429 || s.Reason != meta.StatusReasonTooManyRequests || s.Message != "storage is (re)initializing" ||
		s.Details == nil || s.Details.RetryAfterSeconds != 1 {
		t.Errorf("status = %+v (details %+v)", s, s.Details)
	}
}
