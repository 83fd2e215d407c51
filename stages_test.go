package annex

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func pass(next http.Handler) http.Handler { return next }

func TestCheckOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		stages  []Stage
		wantErr []string
	}{
		{"valid", []Stage{
			{Name: "info", Provides: []Provision{ProvidesRequestInfo}, Filter: pass},
			{Name: "authn", Provides: []Provision{ProvidesUser}, Filter: pass},
			{Name: "authz", Needs: []Provision{ProvidesUser, ProvidesRequestInfo}, Filter: pass},
		}, nil},
		{"authz_before_authn", []Stage{
			{Name: "info", Provides: []Provision{ProvidesRequestInfo}, Filter: pass},
			{Name: "authz", Needs: []Provision{ProvidesUser, ProvidesRequestInfo}, Filter: pass},
			{Name: "authn", Provides: []Provision{ProvidesUser}, Filter: pass},
		}, []string{`stage "authz" needs "user", which no earlier stage provides`}},
		{"disabled_provider_provides_nothing", []Stage{
			{Name: "authn", Provides: []Provision{ProvidesUser}},
			{Name: "authz", Needs: []Provision{ProvidesUser}, Filter: pass},
		}, []string{`stage "authz" needs "user"`}},
		{"disabled_consumer_needs_nothing", []Stage{
			{Name: "authz", Needs: []Provision{ProvidesUser}},
		}, nil},
		{"duplicate_and_empty_names_all_reported", []Stage{
			{Name: "a", Filter: pass},
			{Name: "a", Filter: pass},
			{Name: "", Filter: pass},
		}, []string{`stage "a" appears twice`, `stage 2 has no name`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var errs []error
			if err := CheckOrder(tc.stages); err != nil {
				errs = err.(interface{ Unwrap() []error }).Unwrap()
			}
			if len(errs) != len(tc.wantErr) {
				t.Fatalf("got %d errors %v, want %d %v", len(errs), errs, len(tc.wantErr), tc.wantErr)
			}
			for i, want := range tc.wantErr {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], want)
				}
			}
		})
	}
}

func TestChainRunsStagesInOrder(t *testing.T) {
	t.Parallel()
	var order []string
	mark := func(name string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				order = append(order, name)
				next.ServeHTTP(w, r)
			})
		}
	}
	stages := []Stage{{Name: "first", Filter: mark("first")}, {Name: "off"}, {Name: "second", Filter: mark("second")}}
	stages, err := InsertStage(stages, "first", Stage{Name: "inserted", Filter: mark("inserted")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Chain(stages, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { order = append(order, "handler") }), ChainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if got := strings.Join(order, ","); got != "first,inserted,second,handler" {
		t.Fatalf("order = %s", got)
	}
	if _, err := InsertStage(stages, "nope", Stage{Name: "x"}); err == nil {
		t.Fatal("want an error inserting after an unknown stage")
	}
}
