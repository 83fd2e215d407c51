package flowcontrol

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/annexapi/annex/filters"
)

// withIdentity is the test's stand-in for authentication: X-Test-User and
// X-Test-Groups (comma-separated) become the user, and the request info is
// resolved.
func withIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if name := r.Header.Get("X-Test-User"); name != "" {
			u := &filters.User{Name: name}
			if g := r.Header.Get("X-Test-Groups"); g != "" {
				u.Groups = strings.Split(g, ",")
			}
			ctx = filters.ContextWithUser(ctx, u)
		}
		info, _ := filters.RequestInfoResolver{}.Resolve(r)
		next.ServeHTTP(w, r.WithContext(filters.ContextWithRequestInfo(ctx, info)))
	})
}

// serve puts c's filter, behind withIdentity and a request deadline, in
// front of h on a test server.
func serve(t *testing.T, c *Controller, h http.Handler) *httptest.Server {
	t.Helper()
	deadline := filters.WithRequestDeadline(filters.RequestDeadlineConfig{})
	srv := httptest.NewServer(withIdentity(deadline(c.Filter(h))))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url, user string, groups ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test-User", user)
	if len(groups) > 0 {
		req.Header.Set("X-Test-Groups", strings.Join(groups, ","))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// oneSeat is a configuration with a level "tiny" of one seat (the server
// has 1 + 0 seats, the level has all the shares) whose queuing is given,
// and a schema sending user "alice" and "bob" there by user.
func oneSeat(t *testing.T, limitResponse string) Config {
	t.Helper()
	objs, err := Parse([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tiny}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1000
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
` + limitResponse + `
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tiny}
spec:
  priorityLevelConfiguration: {name: tiny}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - {kind: User, user: {name: alice}}
    - {kind: User, user: {name: bob}}
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	return Config{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: -1, Objects: objs}
}
