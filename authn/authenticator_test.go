package authn_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/filters"
)

var (
	errA = errors.New("a rejects")
	errB = errors.New("b rejects")
)

func fixed(u *filters.User, ok bool, err error, calls *int) authn.Authenticator {
	return authn.AuthenticatorFunc(func(*http.Request) (*filters.User, bool, error) {
		if calls != nil {
			*calls++
		}
		return u, ok, err
	})
}

func TestUnion_and_FailOnError(t *testing.T) {
	t.Parallel()
	alice := &filters.User{Name: "alice"}
	bob := &filters.User{Name: "bob"}
	tests := []struct {
		name        string
		failOnError bool
		results     []struct {
			u   *filters.User
			ok  bool
			err error
		}
		wantUser  string
		wantOK    bool
		wantErrs  []error
		wantCalls []int
	}{
		{name: "first_ok_wins", results: res(r(alice, true, nil), r(bob, true, nil)), wantUser: "alice", wantOK: true, wantCalls: []int{1, 0}},
		{name: "not_ok_falls_through", results: res(r(nil, false, nil), r(bob, true, nil)), wantUser: "bob", wantOK: true, wantCalls: []int{1, 1}},
		{name: "error_does_not_stop_union", results: res(r(nil, false, errA), r(bob, true, nil)), wantUser: "bob", wantOK: true, wantCalls: []int{1, 1}},
		{name: "errors_joined_when_none_succeeds", results: res(r(nil, false, errA), r(nil, false, nil), r(nil, false, errB)), wantErrs: []error{errA, errB}, wantCalls: []int{1, 1, 1}},
		{name: "none_ok_no_error", results: res(r(nil, false, nil), r(nil, false, nil)), wantCalls: []int{1, 1}},
		{name: "fail_on_error_stops", failOnError: true, results: res(r(nil, false, errA), r(bob, true, nil)), wantErrs: []error{errA}, wantCalls: []int{1, 0}},
		{name: "fail_on_error_first_ok_wins", failOnError: true, results: res(r(nil, false, nil), r(bob, true, nil), r(nil, false, errB)), wantUser: "bob", wantOK: true, wantCalls: []int{1, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := make([]int, len(tt.results))
			auths := make([]authn.Authenticator, len(tt.results))
			for i, x := range tt.results {
				auths[i] = fixed(x.u, x.ok, x.err, &calls[i])
			}
			a := authn.Union(auths...)
			if tt.failOnError {
				a = authn.FailOnError(auths...)
			}
			u, ok, err := a.Authenticate(httptest.NewRequest("GET", "/", nil))
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if ok && u.Name != tt.wantUser {
				t.Errorf("user = %q, want %q", u.Name, tt.wantUser)
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Errorf("err = %v, want nil", err)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want it to include %v", err, want)
				}
			}
			if !reflect.DeepEqual(calls, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", calls, tt.wantCalls)
			}
		})
	}
}

type result = struct {
	u   *filters.User
	ok  bool
	err error
}

func r(u *filters.User, ok bool, err error) result { return result{u, ok, err} }
func res(rs ...result) []result                    { return rs }

func TestWithAuthenticatedGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		in         *filters.User
		wantGroups []string
	}{
		{name: "adds_group", in: &filters.User{Name: "alice", Groups: []string{"dev"}}, wantGroups: []string{"dev", "system:authenticated"}},
		{name: "adds_to_no_groups", in: &filters.User{Name: "alice"}, wantGroups: []string{"system:authenticated"}},
		{name: "not_for_anonymous", in: &filters.User{Name: "system:anonymous"}, wantGroups: nil},
		{name: "not_twice", in: &filters.User{Name: "alice", Groups: []string{"system:authenticated", "dev"}}, wantGroups: []string{"system:authenticated", "dev"}},
		{name: "not_with_unauthenticated", in: &filters.User{Name: "x", Groups: []string{"system:unauthenticated"}}, wantGroups: []string{"system:unauthenticated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orig := append([]string(nil), tt.in.Groups...)
			in := &filters.User{Name: tt.in.Name, UID: "uid-1", Groups: tt.in.Groups, Extra: map[string][]string{"k": {"v"}}}
			u, ok, err := authn.WithAuthenticatedGroup(fixed(in, true, nil, nil)).Authenticate(httptest.NewRequest("GET", "/", nil))
			if err != nil || !ok {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if !reflect.DeepEqual(u.Groups, tt.wantGroups) {
				t.Errorf("groups = %v, want %v", u.Groups, tt.wantGroups)
			}
			if u.Name != tt.in.Name || u.UID != "uid-1" || u.Extra["k"][0] != "v" {
				t.Errorf("user lost fields: %+v", u)
			}
			if !reflect.DeepEqual(in.Groups, orig) && !(len(in.Groups) == 0 && len(orig) == 0) {
				t.Errorf("input user modified: %v, was %v", in.Groups, orig)
			}
		})
	}
	// Errors and not-ok pass through.
	_, ok, err := authn.WithAuthenticatedGroup(fixed(nil, false, errA, nil)).Authenticate(httptest.NewRequest("GET", "/", nil))
	if ok || !errors.Is(err, errA) {
		t.Errorf("error case: ok=%v err=%v", ok, err)
	}
}

func TestAnonymous_paths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		paths []string
		path  string
		want  bool
	}{
		{name: "any_path_when_unlimited", path: "/apis/x", want: true},
		{name: "listed_path", paths: authn.StandaloneAnonymousPaths(), path: "/readyz", want: true},
		{name: "unlisted_path", paths: authn.StandaloneAnonymousPaths(), path: "/apis", want: false},
		{name: "no_prefix_match", paths: authn.StandaloneAnonymousPaths(), path: "/healthz/ping", want: false},
		{name: "version_is_not_anonymous", paths: authn.StandaloneAnonymousPaths(), path: "/version", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, ok, err := authn.NewAnonymous(authn.AnonymousConfig{Paths: tt.paths}).Authenticate(httptest.NewRequest("GET", tt.path, nil))
			if err != nil || ok != tt.want {
				t.Fatalf("ok=%v err=%v, want ok=%v", ok, err, tt.want)
			}
			if ok && (u.Name != "system:anonymous" || !reflect.DeepEqual(u.Groups, []string{"system:unauthenticated"})) {
				t.Errorf("user = %+v", u)
			}
		})
	}
}

func TestNew_needs_something(t *testing.T) {
	t.Parallel()
	if _, err := authn.New(authn.Config{}); !errors.Is(err, authn.ErrNoAuthenticator) {
		t.Errorf("New(zero) err = %v, want ErrNoAuthenticator", err)
	}
	if _, err := authn.WithAuthentication(authn.FilterConfig{}); !errors.Is(err, authn.ErrNoAuthenticator) {
		t.Errorf("WithAuthentication(zero) err = %v, want ErrNoAuthenticator", err)
	}
	if _, err := authn.NewX509(authn.X509Config{}); !errors.Is(err, authn.ErrNoCA) {
		t.Errorf("NewX509(zero) err = %v, want ErrNoCA", err)
	}
}

func TestFailureMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		url    string
		header http.Header
		want   string
	}{
		{name: "nothing", url: "/", want: "Authentication failed, no credentials provided"},
		{name: "basic", url: "/", header: http.Header{"Authorization": {"Basic YTpi"}}, want: "Authentication failed, attempted: basic"},
		{name: "bearer_any_case", url: "/", header: http.Header{"Authorization": {"  BeArEr tok "}}, want: "Authentication failed, attempted: bearer"},
		{name: "bearer_without_token", url: "/", header: http.Header{"Authorization": {"Bearer"}}, want: "Authentication failed, no credentials provided"},
		{name: "access_token", url: "/?access_token=x", want: "Authentication failed, attempted: access_token"},
		{name: "bearer_and_access_token", url: "/?access_token=x", header: http.Header{"Authorization": {"Bearer t"}}, want: "Authentication failed, attempted: bearer, access_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", tt.url, nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			if got := authn.FailureMessage(r); got != tt.want {
				t.Errorf("FailureMessage = %q, want %q", got, tt.want)
			}
		})
	}
}
