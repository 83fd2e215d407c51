// This file is the one place that knows the path of a request: the ordered
// table of the stages of the chain (DefaultStages), what each reads from and
// adds to the request context, and Chain, the checked builder that turns the
// table into a handler. Every wrapper of the path is a row: the Builder
// fills the table's Filters (handler.go, frontdoor.go) and serves Chain's
// handler as it is; a hand-built server can do the same.
//
// The path, outermost first, numbered as in DESIGN.md:
//
//	01  TLS handshake, client certificates requested   (net/http, server.go)
//	02  stack-growth, shutdown-drain (429 while draining), panic-recovery,
//	    audit-id, request-info, tracing, metrics, logging, headers,
//	    deadline, timeout, body-limit, warnings       (filters, otlp, metrics)
//	03  authentication                                 (authn)       401
//	04  audit                                          (audit)       never rejects
//	05  impersonation                                  (authz)       403
//	06  flowcontrol                                    (flowcontrol) 429
//	07  authorization                                  (authz)       403
//	--  the handler: the mux of API, health, metrics and version paths
//	08  decode                                         (rest)        400/415
//	09–11 admission                                    (admission)   4xx/422/500
//	12  storage                                        (storage)     409
//	13  watch fan-out                                  (watch)       410
//
// Steps 08–13 run inside the handler, not as stages: the handler reports
// them into the request's filters.Trace (StepAdmission, StepStorage) so that
// metrics and audit can name them like stages.

package annex

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/annexapi/annex/filters"
)

// The names of the stages, in the order a request meets them. A stage's
// name is what errors, logs, the annex_request_rejections_total metric and
// audit events call it.
const (
	// StageStackGrowth grows the goroutine's stack once up front
	// (filters.WithStackGrowth): net/http serves each request on a fresh
	// goroutine.
	StageStackGrowth = "stack-growth"
	// StageShutdownDrain counts the requests in flight for graceful
	// shutdown and, while draining with Shutdown.SendRetryAfter, answers
	// 429 with Retry-After (filters.ShutdownDrain).
	StageShutdownDrain = "shutdown-drain"
	// StagePanicRecovery answers a handler's panic with 500, or aborts a
	// response that had started (filters.WithPanicRecovery).
	StagePanicRecovery = "panic-recovery"
	// StageAuditID echoes the request's Audit-Id or makes one
	// (filters.WithAuditID).
	StageAuditID = "audit-id"
	// StageRequestInfo records the received time and resolves what the
	// request asks for; 500 on a path it cannot resolve
	// (filters.WithRequestReceivedTimestamp, filters.WithRequestInfoResolver).
	StageRequestInfo = "request-info"
	// StageTracing starts the request's span and adds one per stage the
	// request went through (otlp.Tracer.Filter). Off unless tracing is
	// configured.
	StageTracing = "tracing"
	// StageMetrics counts and times requests (package metrics).
	StageMetrics = "metrics"
	// StageLogging logs one line per request (filters.WithRequestLogging).
	StageLogging = "logging"
	// StageHeaders sets Cache-Control (filters.WithCacheControl).
	StageHeaders = "headers"
	// StageDeadline gives a non-long-running request its context deadline;
	// 400 on a bad ?timeout= (filters.WithRequestDeadline).
	StageDeadline = "deadline"
	// StageTimeout answers 504, or aborts a started response, when the
	// deadline passes (filters.WithRequestTimeout).
	StageTimeout = "timeout"
	// StageBodyLimit answers 413 past the body limit
	// (filters.WithMaxRequestBody).
	StageBodyLimit = "body-limit"
	// StageWarnings collects Warning headers (filters.WithWarningRecorder).
	StageWarnings = "warnings"
	// StageAuthentication finds who sent the request: front proxy, client
	// certificate, bearer token, anonymous; 401 otherwise
	// (authn.WithAuthentication).
	StageAuthentication = "authentication"
	// StageAudit records the request in the audit log (audit.Auditor.Filter).
	// Off unless the Builder's Audit turns it on; it never rejects.
	StageAudit = "audit"
	// StageImpersonation lets a user act as another when authorized to
	// impersonate; 403 otherwise (authz.WithImpersonation).
	StageImpersonation = "impersonation"
	// StageFlowControl is API priority and fairness; 429 with Retry-After
	// when a priority level is full (flowcontrol.Controller.Filter, as
	// Builder.FlowControl configures it; the health paths pass untouched).
	StageFlowControl = "flowcontrol"
	// StageAuthorization asks the authorizers; 403 unless one allows
	// (authz.WithAuthorization).
	StageAuthorization = "authorization"

	// StageAdmission and StageStorage are not stages of the chain but steps
	// of the resource handler after it, named here so that rejections and
	// latencies read the same for them. The handler reports them with
	// filters.RecordStep and filters.RecordRejection.
	StageAdmission = filters.StepAdmission
	StageStorage   = filters.StepStorage
)

// Provision names a value a stage puts into the request context, or a
// guarantee it gives, for the stages after it.
type Provision string

// The provisions of the built-in stages.
const (
	// ProvidesAuditID is the request's audit ID (filters.AuditIDFrom).
	ProvidesAuditID Provision = "audit-id"
	// ProvidesRequestInfo is the resolved *filters.RequestInfo and the
	// received timestamp.
	ProvidesRequestInfo Provision = "request-info"
	// ProvidesDeadline is the request deadline on the context.
	ProvidesDeadline Provision = "deadline"
	// ProvidesTimeoutWriter is the timeout's response writer: the handler's
	// headers stay in a map of their own until its first write, so a stage
	// that adds headers while the handler runs (warnings) never races the
	// 504. Such a stage needs it, which keeps it inside the timeout.
	ProvidesTimeoutWriter Provision = "timeout-writer"
	// ProvidesWarnings is the warning recorder (filters.AddWarning).
	ProvidesWarnings Provision = "warnings"
	// ProvidesUser is the authenticated *filters.User.
	ProvidesUser Provision = "user"
	// ProvidesAudit is the audit stage's record of the request, for the
	// stages after it to annotate.
	ProvidesAudit Provision = "audit"
	// ProvidesImpersonator is the user who sent an impersonating request
	// (filters.ImpersonatorFrom); ProvidesUser is then the impersonated one.
	ProvidesImpersonator Provision = "impersonator"
	// ProvidesAuthorized means the request was authorized: only handlers run
	// after it.
	ProvidesAuthorized Provision = "authorized"
)

// Filter is one stage's handler wrapper: it wraps the rest of the chain.
type Filter = func(http.Handler) http.Handler

// Stage is one step of the handler chain. Filter wraps the rest of the chain;
// Needs and Provides say what it reads from and adds to the request context.
type Stage struct {
	// Name names the stage in errors, logs, metrics and audit events.
	Name string
	// Needs lists what the stage reads; every entry must be provided by an
	// earlier enabled stage.
	Needs []Provision
	// Provides lists what the stage adds for later stages.
	Provides []Provision
	// Filter is the stage itself; nil means the stage is off (it then needs
	// and provides nothing).
	Filter Filter
}

// DefaultStages returns the built-in stages in their order, each with its
// Needs and Provides and no Filter (off): the table Build fills in and a
// hand-built server starts from. The slice is fresh on every call.
//
// Every stage of the path has a row, including those the Builder leaves off
// unless configured (StageAudit, StageTracing). Filling one is one call:
//
//	stages := annex.DefaultStages()
//	err := annex.SetFilter(stages, annex.StageAudit, auditFilter)
func DefaultStages() []Stage {
	needs := func(p ...Provision) []Provision { return p }
	return []Stage{
		{Name: StageStackGrowth},
		{Name: StageShutdownDrain},
		{Name: StagePanicRecovery},
		{Name: StageAuditID, Provides: needs(ProvidesAuditID)},
		{Name: StageRequestInfo, Provides: needs(ProvidesRequestInfo)},
		{Name: StageTracing, Needs: needs(ProvidesRequestInfo, ProvidesAuditID)},
		{Name: StageMetrics, Needs: needs(ProvidesRequestInfo)},
		{Name: StageLogging, Needs: needs(ProvidesRequestInfo, ProvidesAuditID)},
		{Name: StageHeaders},
		{Name: StageDeadline, Needs: needs(ProvidesRequestInfo), Provides: needs(ProvidesDeadline)},
		{Name: StageTimeout, Needs: needs(ProvidesDeadline), Provides: needs(ProvidesTimeoutWriter)},
		{Name: StageBodyLimit},
		{Name: StageWarnings, Needs: needs(ProvidesTimeoutWriter), Provides: needs(ProvidesWarnings)},
		{Name: StageAuthentication, Provides: needs(ProvidesUser)},
		{Name: StageAudit, Needs: needs(ProvidesAuditID, ProvidesRequestInfo, ProvidesUser), Provides: needs(ProvidesAudit)},
		{Name: StageImpersonation, Needs: needs(ProvidesUser), Provides: needs(ProvidesImpersonator)},
		{Name: StageFlowControl, Needs: needs(ProvidesUser, ProvidesRequestInfo)},
		{Name: StageAuthorization, Needs: needs(ProvidesUser, ProvidesRequestInfo), Provides: needs(ProvidesAuthorized)},
	}
}

// SetFilter sets the Filter of the stage named name (nil turns it off). It
// fails when no stage has that name.
func SetFilter(stages []Stage, name string, f Filter) error {
	for i := range stages {
		if stages[i].Name == name {
			stages[i].Filter = f
			return nil
		}
	}
	return fmt.Errorf("no stage named %q (stages: %s)", name, stageNames(stages))
}

// InsertStage returns stages with s placed after the stage named after (""
// puts it first). It fails when no stage has that name.
func InsertStage(stages []Stage, after string, s Stage) ([]Stage, error) {
	if after == "" {
		return append([]Stage{s}, stages...), nil
	}
	for i := range stages {
		if stages[i].Name == after {
			return slices.Insert(slices.Clone(stages), i+1, s), nil
		}
	}
	return nil, fmt.Errorf("stage %q: no stage named %q to insert after (stages: %s)", s.Name, after, stageNames(stages))
}

func stageNames(stages []Stage) string {
	names := make([]string, len(stages))
	for i := range stages {
		names[i] = stages[i].Name
	}
	return strings.Join(names, ", ")
}

// CheckOrder returns every problem with stages in the given order, joined: a
// repeated or empty name, a need no earlier enabled stage provides. Nil
// means Chain accepts the order.
func CheckOrder(stages []Stage) error {
	var errs []error
	provided := map[Provision]bool{}
	names := map[string]bool{}
	for i, s := range stages {
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("stage %d has no name", i))
		} else if names[s.Name] {
			errs = append(errs, fmt.Errorf("stage %q appears twice", s.Name))
		}
		names[s.Name] = true
		if s.Filter == nil {
			continue
		}
		for _, need := range s.Needs {
			if !provided[need] {
				errs = append(errs, fmt.Errorf("stage %q needs %q, which no earlier stage provides", s.Name, need))
			}
		}
		for _, p := range s.Provides {
			provided[p] = true
		}
	}
	return errors.Join(errs...)
}

// ChainOptions configures Chain. The zero value checks, wraps and traces
// (without stage times), and reports nothing.
type ChainOptions struct {
	// StageLatencies times every stage: the trace records when the request
	// entered each (a clock read per stage, 150 ns each on a kvm-clock VM),
	// for filters.Trace.Latencies (the audit stage's stage-latencies
	// annotation). Zero means the trace knows which stages a request
	// reached and which rejected it, but not how long each took.
	StageLatencies bool
	// LatenciesFrom, with StageLatencies, times only this stage and those
	// inside it (filters.Trace.TimeFrom): "" times every stage, as does a
	// name the chain does not hold.
	LatenciesFrom string

	// OnReject, when not nil, is called after each request a stage answered
	// with an error (status 400 or more) before the request reached the
	// handler, with that stage's name and the status; and after each request
	// a handler step recorded with filters.RecordRejection answered, with
	// the step's name. Metrics and logs count rejections by stage with it.
	OnReject func(r *http.Request, stage string, code int)
}

// Chain checks the order of stages (CheckOrder: every problem at once) and
// returns h wrapped in the enabled stages, stages[0] outermost. Every
// request gets a filters.Trace in its context, recording each enabled stage
// it entered (and when, with StageLatencies) and whether it reached h; the
// audit stage reads the rejecting stage and stage latencies from it, and
// OnReject is fed from it. Build uses Chain, so a hand-built server gets the
// same order errors.
func Chain(stages []Stage, h http.Handler, opts ChainOptions) (http.Handler, error) {
	if err := CheckOrder(stages); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range stages {
		if s.Filter != nil {
			names = append(names, s.Name)
		}
	}
	// Innermost first: the handler is "entered" last, after every stage.
	inner := enter(len(names), h)
	for i := len(stages) - 1; i >= 0; i-- {
		if stages[i].Filter != nil {
			inner = enter(slices.Index(names, stages[i].Name), stages[i].Filter(inner))
		}
	}
	report, timed := opts.OnReject, opts.StageLatencies
	timedFrom := max(0, slices.Index(names, opts.LatenciesFrom))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var start time.Time
		if timed {
			start = time.Now()
		}
		ctx, t, rw := filters.StartRequest(r.Context(), w, names, start)
		t.TimeFrom(timedFrom)
		if report == nil {
			inner.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		inner.ServeHTTP(rw, r.WithContext(ctx))
		if stage := t.RejectedBy(rw.Status()); stage != "" {
			report(r, stage, rw.Status())
		}
	}), nil
}

// enter wraps h so that the request's trace records entering stage i.
func enter(i int, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		filters.TraceFrom(r.Context()).Enter(i)
		h.ServeHTTP(w, r)
	})
}
