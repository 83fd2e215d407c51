package annex

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
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

// handBuilt assembles a server's chain by hand, from exported pieces only, as
// a program that does without the Builder would: the table of stages.go,
// filled with the public filters, the user's stages inserted, checked and
// wrapped by Chain. Requests carry their user in X-Test-User; only "admin"
// is authorized.
func handBuilt(t testing.TB, h http.Handler, opts ChainOptions, extra ...InsertedStage) (http.Handler, error) {
	t.Helper()
	stages := handStages(t)
	var err error
	for _, ins := range extra {
		if stages, err = InsertStage(stages, ins.After, ins.Stage); err != nil {
			t.Fatal(err)
		}
	}
	return Chain(stages, h, opts)
}

// handStages is DefaultStages filled with the public filters (metrics and
// logging, which the root package makes, stay off).
func handStages(t testing.TB) []Stage {
	t.Helper()
	authenticator := authn.AuthenticatorFunc(func(r *http.Request) (*filters.User, bool, error) {
		if name := r.Header.Get("X-Test-User"); name != "" {
			return &filters.User{Name: name}, true, nil
		}
		return nil, false, nil
	})
	authorizer := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User != nil && a.User.Name == "admin" {
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})
	authnFilter, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: authenticator})
	if err != nil {
		t.Fatal(err)
	}
	impersonation, err := authz.WithImpersonation(authz.ImpersonationConfig{Authorizer: authorizer})
	if err != nil {
		t.Fatal(err)
	}
	authzFilter, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: authorizer})
	if err != nil {
		t.Fatal(err)
	}
	stages := DefaultStages()
	for name, f := range map[string]Filter{
		StagePanicRecovery:  filters.WithPanicRecovery(filters.PanicRecoveryConfig{}),
		StageAuditID:        filters.WithAuditID(filters.AuditIDConfig{}),
		StageRequestInfo:    filters.WithRequestInfoResolver(filters.RequestInfoResolver{}),
		StageHeaders:        filters.WithCacheControl(filters.CacheControlConfig{}),
		StageDeadline:       filters.WithRequestDeadline(filters.RequestDeadlineConfig{}),
		StageTimeout:        filters.WithRequestTimeout(filters.RequestTimeoutConfig{}),
		StageBodyLimit:      filters.WithMaxRequestBody(filters.MaxRequestBodyConfig{}),
		StageWarnings:       filters.WithWarningRecorder(filters.WarningRecorderConfig{}),
		StageAuthentication: authnFilter,
		StageImpersonation:  impersonation,
		StageAuthorization:  authzFilter,
	} {
		if err := SetFilter(stages, name, f); err != nil {
			t.Fatal(err)
		}
	}
	return stages
}

func TestHandBuiltServerGetsBuildOrderError(t *testing.T) {
	t.Parallel()
	misordered := InsertedStage{After: StageRequestInfo, Stage: Stage{Name: "tenant-check", Needs: []Provision{ProvidesUser}, Filter: pass}}
	_, handErr := handBuilt(t, http.NotFoundHandler(), ChainOptions{}, misordered)
	b := Builder{DataDir: t.TempDir(), Resources: []rest.Resource{widgets()}, Stages: []InsertedStage{misordered}}
	_, buildErr := b.Build()
	if handErr == nil || buildErr == nil {
		t.Fatalf("hand-built: %v; Build: %v", handErr, buildErr)
	}
	if handErr.Error() != buildErr.Error() {
		t.Errorf("hand-built chain error %q, Build error %q: want the same", handErr, buildErr)
	}
	if !strings.Contains(handErr.Error(), `stage "tenant-check" needs "user", which no earlier stage provides`) {
		t.Errorf("error %q", handErr)
	}
}

// TestBuildChecksOrderWithTheStagesItFills: the audit stage is the only
// provider of "audit" and is on only with an audit backend, so a stage that
// needs it builds with a backend and is refused by the validation phase,
// before anything is made, without one: both phases agree on which stages
// are filled.
func TestBuildChecksOrderWithTheStagesItFills(t *testing.T) {
	t.Parallel()
	needsAudit := InsertedStage{After: StageAuthorization, Stage: Stage{Name: "audit-reader", Needs: []Provision{ProvidesAudit}, Filter: pass}}
	off := Builder{DataDir: filepath.Join(t.TempDir(), "data"), Resources: []rest.Resource{widgets()}, Stages: []InsertedStage{needsAudit}}
	if _, err := off.Build(); err == nil || !strings.Contains(err.Error(), `stage "audit-reader" needs "audit", which no earlier stage provides`) {
		t.Errorf("Build without an audit backend: %v", err)
	}
	if _, err := os.Stat(off.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused Build made DataDir (%v)", err)
	}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	if err != nil {
		t.Fatal(err)
	}
	on := off
	on.DataDir = t.TempDir()
	on.Serving.Listener = mustListen(t)
	on.Audit = audit.Config{Policy: policy, Log: audit.LogConfig{Path: filepath.Join(t.TempDir(), "audit.log")}}
	srv, err := on.Build()
	if err != nil {
		t.Fatalf("Build with an audit backend: %v", err)
	}
	srv.closeAll()
}

// TestWarningsMustSitInsideTimeout: the timeout's rule, as Needs/Provides.
func TestWarningsMustSitInsideTimeout(t *testing.T) {
	t.Parallel()
	stages := DefaultStages()
	for i := range stages {
		stages[i].Filter = pass
	}
	if err := CheckOrder(stages); err != nil {
		t.Fatalf("the default table, all on: %v", err)
	}
	iw := slices.IndexFunc(stages, func(s Stage) bool { return s.Name == StageWarnings })
	it := slices.IndexFunc(stages, func(s Stage) bool { return s.Name == StageTimeout })
	stages[iw], stages[it] = stages[it], stages[iw]
	err := CheckOrder(stages)
	if err == nil || !strings.Contains(err.Error(), `stage "warnings" needs "timeout-writer"`) {
		t.Fatalf("warnings outside the timeout: %v", err)
	}
	if _, chainErr := Chain(stages, http.NotFoundHandler(), ChainOptions{}); chainErr == nil || chainErr.Error() != err.Error() {
		t.Errorf("Chain: %v, want %v", chainErr, err)
	}
}

func TestSetFilterFillsSlot(t *testing.T) {
	t.Parallel()
	stages := DefaultStages()
	if err := SetFilter(stages, StageAudit, pass); err != nil || stages[slices.IndexFunc(stages, func(s Stage) bool { return s.Name == StageAudit })].Filter == nil {
		t.Fatalf("SetFilter(audit): %v", err)
	}
	if err := SetFilter(stages, "nope", pass); err == nil {
		t.Error("SetFilter of an unknown stage succeeded")
	}
}

// TestChainTracesStagesAndRejections serves a hand-built chain and checks
// what the trace tells the audit slot and OnReject: the stage that
// rejected, and for a request that got through, every stage and handler
// step with its time.
func TestChainTracesStagesAndRejections(t *testing.T) {
	t.Parallel()
	type seen struct {
		stage string
		code  int
	}
	rejections := make(chan seen, 1)
	type audited struct {
		rejectedBy string
		latencies  []string
	}
	audits := make(chan audited, 1)
	auditProbe := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rw := filters.WrapResponseWriter(w)
			next.ServeHTTP(rw, r)
			tr := filters.TraceFrom(r.Context())
			var a audited
			a.rejectedBy = tr.RejectedBy(rw.Status())
			for name, d := range tr.Latencies() {
				if d < 0 {
					t.Errorf("stage %s took %v", name, d)
				}
				a.latencies = append(a.latencies, name)
			}
			audits <- a
		})
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		filters.RecordStep(r.Context(), filters.StepAdmission, 3*time.Millisecond)
		if r.URL.Query().Get("deny") != "" {
			filters.RecordRejection(r.Context(), filters.StepAdmission)
			filters.WriteStatus(w, meta.NewForbidden(meta.GroupResource{Resource: "widgets"}, "w", "denied"))
			return
		}
		filters.RecordStep(r.Context(), filters.StepStorage, 2*time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	})
	chain, err := handBuilt(t, h, ChainOptions{StageLatencies: true, OnReject: func(_ *http.Request, stage string, code int) { rejections <- seen{stage, code} }},
		InsertedStage{After: StageAuthentication, Stage: Stage{Name: "audit-probe", Filter: auditProbe}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(chain)
	defer srv.Close()
	all := "panic-recovery,audit-id,request-info,headers,deadline,timeout,body-limit,warnings,authentication,audit-probe,impersonation,authorization"
	tests := []struct {
		name, user, query string
		code              int
		rejectedBy        string
		latencies         string
	}{
		{"anonymous_rejected_by_authentication", "", "", 401, "authentication", ""},
		{"unauthorized_rejected_by_authorization", "bob", "", 403, "authorization", "panic-recovery,audit-id,request-info,headers,deadline,timeout,body-limit,warnings,authentication,audit-probe,impersonation,authorization"},
		{"admitted_and_stored", "admin", "", 201, "", all + ",admission,storage"},
		{"denied_by_admission", "admin", "?deny=1", 403, "admission", all + ",admission"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/apis/test.annex.dev/v1/widgets"+tt.query, nil)
		if tt.user != "" {
			req.Header.Set("X-Test-User", tt.user)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s: code %d, want %d", tt.name, resp.StatusCode, tt.code)
		}
		if tt.rejectedBy != "" {
			if got := <-rejections; got != (seen{tt.rejectedBy, tt.code}) {
				t.Errorf("%s: OnReject got %v, want %s %d", tt.name, got, tt.rejectedBy, tt.code)
			}
		}
		if tt.latencies == "" { // rejected before the audit slot
			continue
		}
		a := <-audits
		if a.rejectedBy != tt.rejectedBy || strings.Join(a.latencies, ",") != tt.latencies {
			t.Errorf("%s: audit saw rejectedBy %q, latencies\n%s\nwant %q,\n%s", tt.name, a.rejectedBy, strings.Join(a.latencies, ","), tt.rejectedBy, tt.latencies)
		}
	}
	select {
	case got := <-rejections:
		t.Errorf("unexpected rejection %v", got)
	default:
	}
}

// TestChainLatenciesFrom: with LatenciesFrom, the stages outside the named
// one are not timed and not yielded; the named one and those inside it are,
// each with a duration of its own.
func TestChainLatenciesFrom(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	probe := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * time.Millisecond) // the probe's own time, until impersonation is entered
			next.ServeHTTP(w, r)
			var names []string
			for name, d := range filters.TraceFrom(r.Context()).Latencies() {
				if name == "audit-probe" && d < 2*time.Millisecond || d < 0 {
					t.Errorf("%s took %v", name, d)
				}
				names = append(names, name)
			}
			got <- strings.Join(names, ",")
		})
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, tt := range []struct{ from, want string }{
		{StageAuthentication, "authentication,audit-probe,impersonation,authorization"},
		{"no-such-stage", "panic-recovery,audit-id,request-info,headers,deadline,timeout,body-limit,warnings,authentication,audit-probe,impersonation,authorization"},
	} {
		chain, err := handBuilt(t, h, ChainOptions{StageLatencies: true, LatenciesFrom: tt.from},
			InsertedStage{After: StageAuthentication, Stage: Stage{Name: "audit-probe", Filter: probe}})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/apis/test.annex.dev/v1/widgets", nil)
		req.Header.Set("X-Test-User", "admin")
		chain.ServeHTTP(httptest.NewRecorder(), req)
		if names := <-got; names != tt.want {
			t.Errorf("LatenciesFrom %q: latencies of\n%s\nwant\n%s", tt.from, names, tt.want)
		}
	}
}

func TestTraceIsNilSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	filters.RecordStep(ctx, filters.StepStorage, time.Second) // no trace: nothing happens
	filters.RecordRejection(ctx, filters.StepAdmission)
	tr := filters.TraceFrom(ctx)
	if tr != nil || tr.RejectedBy(500) != "" || tr.HandlerReached() || tr.Stage() != "" || len(tr.Steps()) != 0 {
		t.Fatal("a nil trace answered something")
	}
	for range tr.Latencies() {
		t.Fatal("a nil trace yielded a latency")
	}
}

// BenchmarkChain compares the same filled stages wrapped by hand (no trace,
// no rejection tracking) with Chain (a filters.Trace per request, OnReject),
// without and with stage times, on an authorized GET.
func BenchmarkChain(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		filters.RecordStep(r.Context(), filters.StepStorage, time.Microsecond)
		w.WriteHeader(http.StatusOK)
	})
	stages := handStages(b)
	var bare http.Handler = h
	for i := len(stages) - 1; i >= 0; i-- {
		if stages[i].Filter != nil {
			bare = stages[i].Filter(bare)
		}
	}
	traced, err := Chain(stages, h, ChainOptions{OnReject: func(*http.Request, string, int) {}})
	if err != nil {
		b.Fatal(err)
	}
	timed, err := Chain(stages, h, ChainOptions{OnReject: func(*http.Request, string, int) {}, StageLatencies: true})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/apis/test.annex.dev/v1/namespaces/ns/widgets/w1", nil)
	r.Header.Set("X-Test-User", "admin")
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"hand_wrapped", bare}, {"chain_traced", traced}, {"chain_timed", timed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("code %d", w.Code)
				}
			}
		})
	}
}
