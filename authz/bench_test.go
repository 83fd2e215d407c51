package authz_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
)

// BenchmarkWithAuthorization measures the filter with the default
// composition, for an allowed and for a forbidden request.
func BenchmarkWithAuthorization(b *testing.B) {
	a, err := authz.New(authz.Config{})
	if err != nil {
		b.Fatal(err)
	}
	f, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a})
	if err != nil {
		b.Fatal(err)
	}
	h := f(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	info := &filters.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "g", APIVersion: "v1", Namespace: "ns", Resource: "things"}
	for _, bc := range []struct {
		name string
		user *filters.User
	}{
		{"allowed", &filters.User{Name: "root", Groups: []string{"system:masters"}}},
		{"forbidden", &filters.User{Name: "alice", Groups: []string{"system:authenticated"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/apis/g/v1/namespaces/ns/things", nil)
			r = r.WithContext(filters.WithRequestInfo(filters.WithUser(r.Context(), bc.user), info))
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}
