package authz_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
)

// impersonationPolicy grants, per requester:
//
//	imp-users:    impersonate users (any)                         cluster-wide
//	imp-bob:      impersonate users named bob                     cluster-wide
//	imp-full:     impersonate users, groups, uids, userextras/scopes
//	imp-sa-team:  impersonate serviceaccounts in namespace team   (RoleBinding)
//	imp-sa-user:  impersonate users named system:serviceaccount:team:deployer (the wrong resource for an SA)
//	ns-imp:       impersonate users and groups, but only through a RoleBinding in team
//	bob, system:serviceaccount:team:deployer: list things in team
const impersonationPolicy = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: imp-users}
rules: [{apiGroups: [""], resources: [users], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: imp-bob}
rules: [{apiGroups: [""], resources: [users], resourceNames: [bob], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: imp-full}
rules:
- {apiGroups: [""], resources: [users, groups], verbs: [impersonate]}
- {apiGroups: [authentication.k8s.io], resources: [uids, userextras/scopes], verbs: [impersonate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: imp-sa}
rules: [{apiGroups: [""], resources: [serviceaccounts], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: imp-sa-as-user}
rules: [{apiGroups: [""], resources: [users], resourceNames: ["system:serviceaccount:team:deployer"], verbs: [impersonate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: thing-lister}
rules: [{apiGroups: [example.com], resources: [things], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: imp-users}
subjects: [{kind: User, name: imp-users}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b2}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: imp-bob}
subjects: [{kind: User, name: imp-bob}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b3}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: imp-full}
subjects: [{kind: User, name: imp-full}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b4, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: imp-sa}
subjects: [{kind: User, name: imp-sa-team}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b5}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: imp-sa-as-user}
subjects: [{kind: User, name: imp-sa-user}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b6, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: imp-full}
subjects: [{kind: User, name: ns-imp}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b7, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: thing-lister}
subjects: [{kind: User, name: bob}, {kind: ServiceAccount, name: deployer}]
`

type impResult struct {
	User         *filters.User `json:"user"`
	Impersonator *filters.User `json:"impersonator"`
	Leaked       []string      `json:"leaked"`
}

// impersonationChain is impersonation then authorization (RBAC behind the
// usual built-ins), as the stage order has them.
func impersonationChain(t *testing.T) (http.Handler, *[][2]*filters.User) {
	t.Helper()
	rbac, err := authz.ParseRBAC([]byte(impersonationPolicy))
	if err != nil {
		t.Fatal(err)
	}
	a, err := authz.New(authz.Config{Authorizers: []authz.NamedAuthorizer{{Name: authz.NameRBAC, Authorizer: rbac}}})
	if err != nil {
		t.Fatal(err)
	}
	var audited [][2]*filters.User
	imp, err := authz.WithImpersonation(authz.ImpersonationConfig{Authorizer: a, OnImpersonation: func(_ *http.Request, o, i *filters.User) {
		audited = append(audited, [2]*filters.User{o, i})
	}})
	if err != nil {
		t.Fatal(err)
	}
	az, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a})
	if err != nil {
		t.Fatal(err)
	}
	h := imp(az(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res impResult
		res.User, _ = filters.UserFrom(r.Context())
		res.Impersonator, _ = filters.ImpersonatorFrom(r.Context())
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
				res.Leaked = append(res.Leaked, k)
			}
		}
		_ = json.NewEncoder(w).Encode(res)
	})))
	return h, &audited
}

func TestWithImpersonation(t *testing.T) {
	t.Parallel()
	listTeam := &filters.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "example.com", APIVersion: "v1", Namespace: "team", Resource: "things", Path: "/apis/example.com/v1/namespaces/team/things"}
	tests := []struct {
		name     string
		as       string
		hdr      http.Header
		wantCode int
		wantUser *filters.User
		wantBody string // substring of a refusal
	}{
		{name: "no_headers_passes_as_requester", as: "bob", wantCode: 200, wantUser: &filters.User{Name: "bob"}},
		{name: "requester_without_rights_to_list", as: "imp-users", wantCode: 403},
		{name: "impersonate_user_allowed", as: "imp-users", hdr: http.Header{"Impersonate-User": {"bob"}}, wantCode: 200,
			wantUser: &filters.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "impersonate_named_user_allowed", as: "imp-bob", hdr: http.Header{"Impersonate-User": {"bob"}}, wantCode: 200,
			wantUser: &filters.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "impersonate_other_name_denied", as: "imp-bob", hdr: http.Header{"Impersonate-User": {"alice"}}, wantCode: 403,
			wantBody: `users \"alice\" is forbidden: User \"imp-bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`},
		{name: "users_right_does_not_grant_group_system_masters", as: "imp-users", hdr: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}, wantCode: 403,
			wantBody: `groups \"system:masters\" is forbidden: User \"imp-users\" cannot impersonate resource \"groups\"`},
		{name: "users_right_does_not_grant_uid", as: "imp-users", hdr: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"u-1"}}, wantCode: 403,
			wantBody: `cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\"`},
		{name: "users_right_does_not_grant_extra", as: "imp-users", hdr: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"s"}}, wantCode: 403,
			wantBody: `cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\"`},
		{name: "full_rights", as: "imp-full", hdr: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"devs", "ops"}, "Impersonate-Uid": {"u-1"}, "Impersonate-Extra-Scopes": {"s1", "s2"}},
			wantCode: 200, wantUser: &filters.User{Name: "bob", UID: "u-1", Groups: []string{"devs", "ops", "system:authenticated"}, Extra: map[string][]string{"scopes": {"s1", "s2"}}}},
		{name: "each_extra_key_authorized", as: "imp-full", hdr: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"s"}, "Impersonate-Extra-Acme.com%2fTenant": {"t"}}, wantCode: 403,
			wantBody: `cannot impersonate resource \"userextras/acme.com/tenant\"`},
		{name: "groups_without_user_is_400", as: "imp-full", hdr: http.Header{"Impersonate-Group": {"devs"}}, wantCode: 400, wantBody: "without impersonating a user"},
		{name: "uid_without_user_is_400", as: "imp-full", hdr: http.Header{"Impersonate-Uid": {"u"}}, wantCode: 400, wantBody: "without impersonating a user"},
		{name: "unknown_impersonate_header_is_400", as: "imp-full", hdr: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Grop": {"system:masters"}}, wantCode: 400, wantBody: "unknown impersonation header"},
		// Real clients send Impersonate-* beside their ordinary headers.
		{name: "client_headers_beside_impersonate_user", as: "imp-users", hdr: http.Header{"Impersonate-User": {"bob"},
			"User-Agent": {"kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd"}, "Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
			"Accept-Encoding": {"gzip"}, "Kubectl-Command": {"kubectl get"}, "Kubectl-Session": {"0f0a"}, "Authorization": {"Bearer x"}},
			wantCode: 200, wantUser: &filters.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "non_canonical_client_header_beside_impersonate_user", as: "imp-users", hdr: http.Header{"impersonate-user": {"bob"}, "user-agent": {"curl/8"}},
			wantCode: 200, wantUser: &filters.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "unknown_impersonate_header_beside_client_headers_is_400", as: "imp-full", hdr: http.Header{"Impersonate-User": {"bob"}, "User-Agent": {"kubectl"}, "Impersonate-Usr": {"x"}},
			wantCode: 400, wantBody: `unknown impersonation header \"Impersonate-Usr\"`},
		{name: "authenticated_group_not_duplicated", as: "imp-full", hdr: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:authenticated"}}, wantCode: 200,
			wantUser: &filters.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "anonymous_gets_unauthenticated", as: "imp-full", hdr: http.Header{"Impersonate-User": {"system:anonymous"}}, wantCode: 403,
			wantBody: `User \"system:anonymous\" cannot list resource \"things\"`},
		{name: "service_account_in_granted_namespace", as: "imp-sa-team", hdr: http.Header{"Impersonate-User": {"system:serviceaccount:team:deployer"}}, wantCode: 200,
			wantUser: &filters.User{Name: "system:serviceaccount:team:deployer", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}}},
		// Scope confusions (reliability-perf §B): a namespaced grant does not
		// reach another namespace, nor cluster-scoped users or groups; a
		// grant on users does not cover a service account's name.
		{name: "scope_service_account_other_namespace", as: "imp-sa-team", hdr: http.Header{"Impersonate-User": {"system:serviceaccount:prod:deployer"}}, wantCode: 403,
			wantBody: `serviceaccounts \"deployer\" is forbidden: User \"imp-sa-team\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"prod\"`},
		{name: "scope_namespaced_grant_cannot_impersonate_users", as: "ns-imp", hdr: http.Header{"Impersonate-User": {"bob"}}, wantCode: 403,
			wantBody: `cannot impersonate resource \"users\" in API group \"\" at the cluster scope`},
		{name: "scope_namespaced_grant_cannot_impersonate_groups", as: "ns-imp", hdr: http.Header{"Impersonate-User": {"system:serviceaccount:team:deployer"}, "Impersonate-Group": {"system:masters"}}, wantCode: 403},
		{name: "scope_users_grant_on_sa_name_is_not_serviceaccounts", as: "imp-sa-user", hdr: http.Header{"Impersonate-User": {"system:serviceaccount:team:deployer"}}, wantCode: 403,
			wantBody: `cannot impersonate resource \"serviceaccounts\"`},
		{name: "sa_groups_cannot_be_smuggled", as: "imp-sa-team", hdr: http.Header{"Impersonate-User": {"system:serviceaccount:team:deployer"}, "Impersonate-Group": {"system:masters"}}, wantCode: 403,
			wantBody: `groups \"system:masters\"`},
		{name: "malformed_sa_name_is_a_user", as: "imp-sa-team", hdr: http.Header{"Impersonate-User": {"system:serviceaccount:team:deployer:extra"}}, wantCode: 403,
			wantBody: `cannot impersonate resource \"users\"`},
		{name: "impersonated_user_is_authorized_not_requester", as: "imp-users", hdr: http.Header{"Impersonate-User": {"mallory"}}, wantCode: 403,
			wantBody: `User \"mallory\" cannot list resource \"things\"`},
		{name: "masters_requester_still_checked_as_itself", as: "root", hdr: http.Header{"Impersonate-User": {"bob"}}, wantCode: 200,
			wantUser: &filters.User{Name: "bob", Groups: []string{"system:authenticated"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, audited := impersonationChain(t)
			r := httptest.NewRequest("GET", listTeam.Path, nil)
			for k, v := range tt.hdr {
				r.Header[k] = v
			}
			requester := &filters.User{Name: tt.as}
			if tt.as == "root" {
				requester.Groups = []string{"system:masters"}
			}
			r = r.WithContext(filters.ContextWithRequestInfo(filters.ContextWithUser(r.Context(), requester), listTeam))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.String()
			if rec.Code != tt.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.wantCode, body)
			}
			if tt.wantBody != "" && !strings.Contains(body, tt.wantBody) {
				t.Errorf("body %s\nwant it to contain %s", body, tt.wantBody)
			}
			if tt.wantCode != 200 {
				return
			}
			var res impResult
			if err := json.Unmarshal([]byte(body), &res); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.User, tt.wantUser) {
				t.Errorf("user %+v, want %+v", res.User, tt.wantUser)
			}
			if len(res.Leaked) > 0 {
				t.Errorf("headers reached the handler: %v", res.Leaked)
			}
			if len(tt.hdr) > 0 {
				if res.Impersonator == nil || res.Impersonator.Name != tt.as {
					t.Errorf("impersonator %+v, want %s", res.Impersonator, tt.as)
				}
				if len(*audited) != 1 || (*audited)[0][0].Name != tt.as || (*audited)[0][1].Name != tt.wantUser.Name {
					t.Errorf("audit hook saw %v", *audited)
				}
			} else if res.Impersonator != nil {
				t.Errorf("impersonator set without impersonation: %+v", res.Impersonator)
			}
		})
	}
}

func TestWithImpersonation_misuse(t *testing.T) {
	t.Parallel()
	if _, err := authz.WithImpersonation(authz.ImpersonationConfig{}); !errors.Is(err, authz.ErrImpersonation) {
		t.Errorf("no authorizer: %v", err)
	}
	// An authorizer error is a refusal, never an allow.
	failing := authz.AuthorizerFunc(func(_ context.Context, _ authz.Attributes) (authz.Decision, string, error) {
		return authz.DecisionNoOpinion, "", errors.New("webhook down")
	})
	f, err := authz.WithImpersonation(authz.ImpersonationConfig{Authorizer: failing})
	if err != nil {
		t.Fatal(err)
	}
	h := f(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "reached") }))
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Impersonate-User", "bob")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r.WithContext(filters.ContextWithUser(r.Context(), &filters.User{Name: "alice"})))
	r.Header.Set("Impersonate-User", "bob") // (re)set for the next cases
	if rec.Code != 403 {
		t.Errorf("authorizer error: %d %s", rec.Code, rec.Body)
	}
	// Unknown headers, when allowed, are dropped and the requester stays.
	lax, err := authz.WithImpersonation(authz.ImpersonationConfig{Authorizer: failing, AllowUnknownHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	var seen *filters.User
	var leaked string
	hl := lax(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen, _ = filters.UserFrom(r.Context())
		leaked = r.Header.Get("Impersonate-Whatever")
	}))
	rl := httptest.NewRequest("GET", "/", nil)
	rl.Header.Set("Impersonate-Whatever", "x")
	rec = httptest.NewRecorder()
	hl.ServeHTTP(rec, rl.WithContext(filters.ContextWithUser(rl.Context(), &filters.User{Name: "alice"})))
	if rec.Code != 200 || seen == nil || seen.Name != "alice" || leaked != "" {
		t.Errorf("lax unknown header: %d %+v %q", rec.Code, seen, leaked)
	}
	// Without an authenticated user the chain is misordered: 500.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 500 || !strings.HasSuffix(rec.Body.String(), ": no user found for request\n") {
		t.Errorf("no user: %d %q, want 500 ending in Kubernetes' \"no user found for request\"", rec.Code, rec.Body)
	}
}
