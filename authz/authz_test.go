package authz_test

import (
	"context"
	"errors"
	"testing"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
)

var (
	errA = errors.New("a failed")
	errB = errors.New("b failed")
)

func fixed(d authz.Decision, reason string, err error, calls *int) authz.Authorizer {
	return authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
		*calls++
		return d, reason, err
	})
}

type answer struct {
	d      authz.Decision
	reason string
	err    error
}

func TestUnion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		answers    []answer
		want       authz.Decision
		wantReason string
		wantErrs   []error
		wantCalls  []int
	}{
		{name: "first_allow_wins", answers: []answer{{authz.DecisionNoOpinion, "a says no", nil}, {authz.DecisionAllow, "b allows", nil}, {authz.DecisionDeny, "", nil}},
			want: authz.DecisionAllow, wantReason: "b allows", wantCalls: []int{1, 1, 0}},
		{name: "first_deny_wins", answers: []answer{{authz.DecisionDeny, "denied by a", nil}, {authz.DecisionAllow, "", nil}},
			want: authz.DecisionDeny, wantReason: "denied by a", wantCalls: []int{1, 0}},
		{name: "deciding_authorizer_error_returned", answers: []answer{{authz.DecisionNoOpinion, "", errA}, {authz.DecisionAllow, "", errB}},
			want: authz.DecisionAllow, wantErrs: []error{errB}, wantCalls: []int{1, 1}},
		{name: "all_abstain_reasons_joined", answers: []answer{{authz.DecisionNoOpinion, "r1", nil}, {authz.DecisionNoOpinion, "", errA}, {authz.DecisionNoOpinion, "r3", errB}},
			want: authz.DecisionNoOpinion, wantReason: "a: r1\nc: r3", wantErrs: []error{errA, errB}, wantCalls: []int{1, 1, 1}},
		{name: "empty_union_abstains", want: authz.DecisionNoOpinion, wantCalls: []int{}},
	}
	names := []string{"a", "b", "c"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := make([]int, len(tt.answers))
			var chain []authz.NamedAuthorizer
			for i, a := range tt.answers {
				chain = append(chain, authz.NamedAuthorizer{Name: names[i], Authorizer: fixed(a.d, a.reason, a.err, &calls[i])})
			}
			u, err := authz.NewUnion(chain...)
			if err != nil {
				t.Fatal(err)
			}
			d, reason, err := u.Authorize(t.Context(), authz.Attributes{})
			if d != tt.want || reason != tt.wantReason {
				t.Errorf("got %v %q, want %v %q", d, reason, tt.want, tt.wantReason)
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Errorf("err = %v, want nil", err)
			}
			for _, w := range tt.wantErrs {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want it to include %v", err, w)
				}
			}
			for i := range calls {
				if calls[i] != tt.wantCalls[i] {
					t.Errorf("calls = %v, want %v", calls, tt.wantCalls)
					break
				}
			}
		})
	}
}

func TestNewUnion_rejects_bad_names(t *testing.T) {
	t.Parallel()
	ok := authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
		return authz.DecisionAllow, "", nil
	})
	tests := []struct {
		name  string
		chain []authz.NamedAuthorizer
	}{
		{name: "empty_name", chain: []authz.NamedAuthorizer{{Name: "", Authorizer: ok}}},
		{name: "duplicate_name", chain: []authz.NamedAuthorizer{{Name: "x", Authorizer: ok}, {Name: "x", Authorizer: ok}}},
		{name: "nil_authorizer", chain: []authz.NamedAuthorizer{{Name: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := authz.NewUnion(tt.chain...); !errors.Is(err, authz.ErrInvalidName) {
				t.Errorf("err = %v, want ErrInvalidName", err)
			}
		})
	}
}

func TestAlwaysAllowPaths(t *testing.T) {
	t.Parallel()
	a, err := authz.NewAlwaysAllowPaths([]string{"/healthz", "livez", "/debug/*", "/"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		attrs authz.Attributes
		want  authz.Decision
	}{
		{name: "exact", attrs: authz.Attributes{Path: "/healthz", Verb: "get"}, want: authz.DecisionAllow},
		{name: "exact_without_leading_slash_in_config", attrs: authz.Attributes{Path: "/livez"}, want: authz.DecisionAllow},
		{name: "exact_is_not_prefix", attrs: authz.Attributes{Path: "/healthz/etcd"}, want: authz.DecisionNoOpinion},
		{name: "prefix", attrs: authz.Attributes{Path: "/debug/pprof/heap"}, want: authz.DecisionAllow},
		{name: "prefix_base", attrs: authz.Attributes{Path: "/debug/"}, want: authz.DecisionAllow},
		{name: "root_matches_root_only", attrs: authz.Attributes{Path: "/"}, want: authz.DecisionAllow},
		{name: "other_path", attrs: authz.Attributes{Path: "/metrics"}, want: authz.DecisionNoOpinion},
		{name: "resource_request_never", attrs: authz.Attributes{Path: "/healthz", IsResourceRequest: true}, want: authz.DecisionNoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _, err := a.Authorize(t.Context(), tt.attrs)
			if err != nil || d != tt.want {
				t.Errorf("got %v, %v; want %v", d, err, tt.want)
			}
		})
	}
	for _, bad := range []string{"/de*bug", "*/x", "/a/**"} {
		if _, err := authz.NewAlwaysAllowPaths([]string{bad}); !errors.Is(err, authz.ErrInvalidPath) {
			t.Errorf("%q: err = %v, want ErrInvalidPath", bad, err)
		}
	}
}

func TestPrivilegedGroups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		groups  []string
		user    *filters.User
		want    authz.Decision
		wantErr error
	}{
		{name: "default_masters", user: &filters.User{Name: "root", Groups: []string{"x", "system:masters"}}, want: authz.DecisionAllow},
		{name: "not_member", user: &filters.User{Name: "alice", Groups: []string{"dev"}}, want: authz.DecisionNoOpinion},
		{name: "configured_group", groups: []string{"admins"}, user: &filters.User{Name: "a", Groups: []string{"admins"}}, want: authz.DecisionAllow},
		{name: "configured_replaces_default", groups: []string{"admins"}, user: &filters.User{Name: "a", Groups: []string{"system:masters"}}, want: authz.DecisionNoOpinion},
		{name: "no_user", want: authz.DecisionNoOpinion, wantErr: authz.ErrNoUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _, err := authz.NewPrivilegedGroups(tt.groups...).Authorize(t.Context(), authz.Attributes{User: tt.user})
			if d != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v, %v; want %v, %v", d, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestDecision_String(t *testing.T) {
	t.Parallel()
	for d, want := range map[authz.Decision]string{authz.DecisionDeny: "Deny", authz.DecisionAllow: "Allow", authz.DecisionNoOpinion: "NoOpinion", 7: "Decision(7)"} {
		if got := d.String(); got != want {
			t.Errorf("%d: %q, want %q", int(d), got, want)
		}
	}
}

func TestAttributesFrom(t *testing.T) {
	t.Parallel()
	u := &filters.User{Name: "alice"}
	info := &filters.RequestInfo{IsResourceRequest: true, Path: "/apis/g/v1/namespaces/ns/res/n/status", Verb: "update",
		APIPrefix: "apis", APIGroup: "g", APIVersion: "v1", Namespace: "ns", Resource: "res", Subresource: "status", Name: "n",
		FieldSelector: "f=1", LabelSelector: "l=2"}
	got := authz.AttributesFrom(u, info)
	want := authz.Attributes{User: u, Verb: "update", IsResourceRequest: true, Path: info.Path, APIGroup: "g", APIVersion: "v1",
		Namespace: "ns", Resource: "res", Subresource: "status", Name: "n", FieldSelector: "f=1", LabelSelector: "l=2"}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := authz.AttributesFrom(nil, nil); got != (authz.Attributes{}) {
		t.Errorf("nil, nil: %+v", got)
	}
}
