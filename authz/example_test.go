package authz_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
)

// Example shows the standard composition with one authorizer of your own, and
// the 403 the filter writes when nobody allows a request.
func Example() {
	readOnly := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.IsResourceRequest && (a.Verb == "get" || a.Verb == "list" || a.Verb == "watch") {
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})
	a, err := authz.New(authz.Config{Authorizers: []authz.NamedAuthorizer{{Name: "read-only", Authorizer: readOnly}}})
	if err != nil {
		log.Fatal(err)
	}
	authorize, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a})
	if err != nil {
		log.Fatal(err)
	}
	h := authorize(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))

	r := httptest.NewRequest("DELETE", "/api/v1/namespaces/ns/pods/p1", nil)
	ctx := filters.ContextWithUser(r.Context(), &filters.User{Name: "alice", Groups: []string{"system:authenticated"}})
	ctx = filters.ContextWithRequestInfo(ctx, &filters.RequestInfo{IsResourceRequest: true, Verb: "delete",
		APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p1"})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(ctx))
	fmt.Println(w.Code, w.Body.String())
	// Output:
	// 403 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"p1\" is forbidden: User \"alice\" cannot delete resource \"pods\" in API group \"\" in the namespace \"ns\"","reason":"Forbidden","details":{"name":"p1","kind":"pods"},"code":403}
}
