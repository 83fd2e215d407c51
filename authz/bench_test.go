package authz_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
			r = r.WithContext(filters.ContextWithRequestInfo(filters.ContextWithUser(r.Context(), bc.user), info))
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}

// BenchmarkRBAC_Authorize measures an allow found after 200 non-matching
// ClusterRoleBindings, and a NoOpinion that scans them all.
func BenchmarkRBAC_Authorize(b *testing.B) {
	var doc strings.Builder
	doc.WriteString("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: [{apiGroups: [g], resources: [things], verbs: [get, list]}]\n")
	for i := range 200 {
		fmt.Fprintf(&doc, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b%d}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\nsubjects: [{kind: User, name: u%d}]\n", i, i)
	}
	r, err := authz.ParseRBAC([]byte(doc.String()))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		user string
		want authz.Decision
	}{{"allow_last", "u199", authz.DecisionAllow}, {"no_opinion", "nobody", authz.DecisionNoOpinion}} {
		b.Run(bc.name, func(b *testing.B) {
			a := authz.Attributes{User: &filters.User{Name: bc.user}, Verb: "get", IsResourceRequest: true, APIGroup: "g", Resource: "things", Name: "x"}
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := r.Authorize(context.Background(), a); d != bc.want {
					b.Fatal(d)
				}
			}
		})
	}
}
