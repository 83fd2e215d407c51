package authz_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
)

// FuzzRuleAllows checks the RBAC rule matcher against properties that must
// hold for any request: no panic; a rule made of the request's own values
// allows it; "*" everywhere allows every resource request; a rule naming
// other resource names, another verb, or only resources (for a
// non-resource request) never allows; adding entries never takes an allow
// away.
func FuzzRuleAllows(f *testing.F) {
	f.Add("get", "example.com", "things", "status", "n1", "/metrics", true, "other")
	f.Add("list", "", "pods", "", "", "/api", true, "*")
	f.Add("get", "", "", "", "", "/debug/pprof/heap", false, "/debug/*")
	f.Add("impersonate", "authentication.k8s.io", "userextras", "scopes", "s", "", true, "*/scopes")
	f.Fuzz(func(t *testing.T, verb, group, resource, sub, name, path string, isResource bool, extra string) {
		a := authz.Attributes{User: &filters.User{Name: "u"}, Verb: verb, IsResourceRequest: isResource, Path: path,
			APIGroup: group, Resource: resource, Subresource: sub, Name: name}
		combined := resource
		if sub != "" {
			combined += "/" + sub
		}
		own := authz.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{combined}, NonResourceURLs: []string{path}}
		if name != "" {
			own.ResourceNames = []string{name}
		}
		if !authz.RuleAllows(own, a) {
			t.Fatalf("own rule %+v does not allow %+v", own, a)
		}
		grown := authz.PolicyRule{Verbs: append([]string{extra}, own.Verbs...), APIGroups: append(own.APIGroups, extra),
			Resources: append([]string{extra}, own.Resources...), ResourceNames: own.ResourceNames, NonResourceURLs: append(own.NonResourceURLs, extra)}
		if len(own.ResourceNames) > 0 {
			grown.ResourceNames = append([]string{extra}, own.ResourceNames...)
		}
		if !authz.RuleAllows(grown, a) {
			t.Fatalf("grown rule %+v lost the allow of %+v", grown, a)
		}
		star := authz.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
		if isResource && !authz.RuleAllows(star, a) {
			t.Fatalf("* rule does not allow %+v", a)
		}
		if !isResource && authz.RuleAllows(star, a) {
			t.Fatalf("resource-only rule allows non-resource %+v", a)
		}
		if extra != name && extra != "" {
			other := own
			other.ResourceNames = []string{extra}
			if isResource && authz.RuleAllows(other, a) {
				t.Fatalf("rule for name %q allows name %q", extra, name)
			}
		}
		if extra != verb && extra != "*" {
			other := own
			other.Verbs = []string{extra}
			if authz.RuleAllows(other, a) {
				t.Fatalf("rule for verb %q allows verb %q", extra, verb)
			}
		}
	})
}

// FuzzParseRBAC: arbitrary bytes never panic the loader, and whatever it
// accepts authorizes without panicking.
func FuzzParseRBAC(f *testing.F) {
	f.Add([]byte(policyYAML))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: x}}]"))
	f.Add([]byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		r, err := authz.ParseRBAC(doc)
		if err != nil {
			return
		}
		_, _, _ = r.Authorize(t.Context(), thing(user("u", "g"), "get", "ns", "n"))
	})
}

// FuzzImpersonationHeaders: arbitrary impersonation headers never panic the
// filter, never reach the handler, and an allow-all authorizer makes the
// handler see exactly the requested user name.
func FuzzImpersonationHeaders(f *testing.F) {
	f.Add("Impersonate-User", "bob", "Impersonate-Extra-A%2fB", "v")
	f.Add("impersonate-group", "system:masters", "Impersonate-Uid", "")
	f.Add("Impersonate-User", "system:serviceaccount:ns:sa", "Impersonate-Extra-%zz", "x")
	f.Add("Impersonate-User", "bob", "User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd")
	f.Add("accept", "application/json", "impersonate-user", "bob")
	allowAll := authz.AuthorizerFunc(func(_ context.Context, _ authz.Attributes) (authz.Decision, string, error) {
		return authz.DecisionAllow, "", nil
	})
	imp, err := authz.WithImpersonation(authz.ImpersonationConfig{Authorizer: allowAll})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		var seen *filters.User
		var leaked bool
		h := imp(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			seen, _ = filters.UserFrom(r.Context())
			for k := range r.Header {
				if len(k) >= 12 && http.CanonicalHeaderKey(k[:12]) == "Impersonate-" {
					leaked = true
				}
			}
		}))
		r := httptest.NewRequest("GET", "/", nil)
		r.Header[k1] = append(r.Header[k1], v1)
		r.Header[k2] = append(r.Header[k2], v2)
		want := ""
		for k, vs := range r.Header {
			if http.CanonicalHeaderKey(k) == "Impersonate-User" && len(vs) > 0 && want == "" {
				want = vs[0]
			}
		}
		before := r.Header.Clone()
		r = r.WithContext(filters.ContextWithUser(r.Context(), &filters.User{Name: "alice"}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if leaked {
			t.Fatalf("impersonation header reached the handler: %v", before)
		}
		// Headers outside Impersonate-* never change the outcome.
		only := httptest.NewRequest("GET", "/", nil)
		for k, vs := range before {
			if len(k) >= 12 && http.CanonicalHeaderKey(k[:12]) == "Impersonate-" {
				only.Header[k] = vs
			}
		}
		only = only.WithContext(filters.ContextWithUser(only.Context(), &filters.User{Name: "alice"}))
		rec2 := httptest.NewRecorder()
		h.ServeHTTP(rec2, only)
		if rec2.Code != rec.Code {
			t.Fatalf("%v answered %d, its Impersonate-* headers alone %d", before, rec.Code, rec2.Code)
		}
		if rec.Code == 200 && seen != nil && seen.Name != "alice" {
			if want == "" || !slices.Contains([]string{v1, v2}, seen.Name) {
				t.Fatalf("handler saw %q from %v", seen.Name, before)
			}
		}
	})
}
