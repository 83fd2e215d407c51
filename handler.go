// This file assembles the handler: the built-in stages in their fixed order,
// the user's stages, and the mux behind them.

package annex

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/internal/logs"
	"github.com/annexapi/annex/internal/profiling"
	"github.com/annexapi/annex/metrics"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// healthPaths are open to everyone: anonymous authentication and the
// always-allow authorizer both cover them.
func healthPaths() []string { return []string{"/healthz", "/livez", "/readyz"} }

func (s *Server) buildHandler(c *Builder, p *plan, resources []rest.Resource, fd *frontDoor) (http.Handler, error) {
	var errs []error
	s.watchCtx, s.cancelWatch = context.WithCancel(context.Background())
	s.closers = append(s.closers, func() error { s.cancelWatch(); return nil })
	reg := c.Observability.Registerer

	m, err := metrics.New(metrics.Config{Registerer: reg, Known: knownResources(resources)})
	if err != nil {
		return nil, err
	}
	admit, err := s.buildAdmission(c, p, resources, fd.cluster, fd.authorizer, m.ObserveRejection)
	if err != nil {
		errs = append(errs, err)
	}
	apiHandler, err := rest.NewHandler(rest.Config{Resources: resources, MinRequestTimeout: c.Limits.MinRequestTimeout,
		DisableManagedFields: c.Storage.DisableManagedFields, DisableResponseCompression: c.Serving.DisableResponseCompression,
		DeleteCollectionWorkers: c.Limits.DeleteCollectionWorkers, Shutdown: s.watchCtx,
		WatchEvents: m.WatchEvents, Admission: admit, OpenAPITitle: c.Name})
	if err != nil {
		errs = append(errs, err)
	}
	flowControl, err := s.buildFlowControl(c, resources, fd)
	if err != nil {
		errs = append(errs, err)
	}
	mux, err := s.buildMux(c, apiHandler, fd.authorizer)
	if err != nil {
		errs = append(errs, err)
	}
	auditor, err := s.buildAudit(c)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// The filter of each built-in stage; fillStages turns on those Build
	// fills (tracing and audit only when configured, when s.tracer and
	// auditor are set; both filters are nil-safe).
	built := map[string]Filter{
		StageStackGrowth:   filters.WithStackGrowth(),
		StageShutdownDrain: s.drain.Filter,
		StagePanicRecovery: filters.WithPanicRecovery(filters.PanicRecoveryConfig{
			OnPanic: func(r *http.Request, v any, stack []byte) {
				s.log.Error("handler panic", zap.String("path", r.URL.Path), zap.Any("panic", v), zap.ByteString("stack", stack))
			}}),
		StageAuditID: filters.WithAuditID(filters.AuditIDConfig{}),
		StageRequestInfo: chainOf(
			filters.WithRequestReceivedTimestamp(filters.RequestReceivedTimestampConfig{}),
			filters.WithRequestInfoResolver(filters.RequestInfoResolver{})),
		StageTracing:     s.tracer.Filter,
		StageMetrics:     m.Filter(),
		StageLogging:     filters.WithRequestLogging(filters.RequestLoggingConfig{Logger: s.log.Named("http")}),
		StageHeaders:     filters.WithCacheControl(filters.CacheControlConfig{}),
		StageDeadline:    filters.WithRequestDeadline(filters.RequestDeadlineConfig{MaxTimeout: c.Limits.RequestTimeout}),
		StageTimeout:     filters.WithRequestTimeout(filters.RequestTimeoutConfig{}),
		StageBodyLimit:   filters.WithMaxRequestBody(filters.MaxRequestBodyConfig{MaxBytes: c.Limits.MaxRequestBodyBytes}),
		StageWarnings:    filters.WithWarningRecorder(filters.WarningRecorderConfig{}),
		StageAudit:       auditor.Filter,
		StageFlowControl: flowControl,
	}
	if auditor != nil {
		// A 401 never reaches the audit stage, which sits after
		// authentication: the authentication stage reports it.
		fd.onAuthnFailure = auditor.FailedAuthentication
	}
	if err := fd.fill(func(name string, f Filter) { built[name] = f }); err != nil {
		return nil, err
	}
	stages, err := c.fillStages(func(name string) Filter { return built[name] })
	if err != nil {
		return nil, err
	}
	// Audit's annotation leaves out the generic stages (outside
	// authentication): they are not timed unless tracing's spans show them.
	from := ""
	if s.tracer == nil {
		if i := slices.IndexFunc(stages, func(st Stage) bool { return st.Filter != nil && !genericStage(st.Name) }); i >= 0 {
			from = stages[i].Name
		}
	}
	return Chain(stages, mux, ChainOptions{StageLatencies: auditor != nil || s.tracer != nil, LatenciesFrom: from, OnReject: func(r *http.Request, stage string, code int) {
		m.ObserveRejection(stage)
		s.log.Debug("request rejected", zap.String("stage", stage), zap.Int("code", code), zap.String("path", r.URL.Path))
	}})
}

// genericStage reports whether name is one of the stages before
// authentication that every request passes in microseconds; the
// stage-latencies annotation leaves them out.
func genericStage(name string) bool {
	switch name {
	case StageStackGrowth, StageShutdownDrain, StagePanicRecovery, StageAuditID, StageRequestInfo, StageTracing,
		StageMetrics, StageLogging, StageHeaders, StageDeadline, StageTimeout, StageBodyLimit, StageWarnings:
		return true
	}
	return false
}

// fillStages is the table of stages.go as Build fills it, the user's stages
// inserted: each built-in stage gets filter(name) but audit without a
// backend and tracing without a configuration, which stay off. Both phases
// use it: validation checks the order with stand-ins, the build phase
// gives the real filters.
func (c *Builder) fillStages(filter func(name string) Filter) ([]Stage, error) {
	stages, o := DefaultStages(), c.Observability
	for i, st := range stages {
		if st.Name == StageAudit && !c.Audit.Enabled() || st.Name == StageTracing && o.TracingConfigFile == "" && o.Tracing == nil {
			continue
		}
		if stages[i].Filter = filter(st.Name); stages[i].Filter == nil {
			return nil, fmt.Errorf("stage %q: Build makes no filter for it", st.Name)
		}
	}
	return c.insertStages(stages)
}

// insertStages places the user's stages (Builder.Stages) into stages.
func (c *Builder) insertStages(stages []Stage) ([]Stage, error) {
	var errs []error
	for i, ins := range c.Stages {
		out, err := InsertStage(stages, ins.After, ins.Stage)
		if err != nil {
			errs = append(errs, fmt.Errorf("Stages[%d]: %w", i, err))
			continue
		}
		stages = out
	}
	return stages, errors.Join(errs...)
}

// chainOf composes filters so that the first runs first.
func chainOf(fs ...func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		for i := len(fs) - 1; i >= 0; i-- {
			next = fs[i](next)
		}
		return next
	}
}

func knownResources(resources []rest.Resource) func(group, version, resource string) bool {
	known := map[[3]string]bool{}
	for _, r := range resources {
		known[[3]string{r.Group, r.Version, r.Plural}] = true
	}
	return func(g, v, r string) bool { return known[[3]string{g, v, r}] }
}

// buildMux routes the health, metrics and version paths, and everything else
// to the API handler (which answers discovery and 404s).
func (s *Server) buildMux(c *Builder, api http.Handler, authorizer authz.Authorizer) (http.Handler, error) {
	s.shutdownFlag = healthz.NewFlag("shutdown", "server is shutting down")
	// One "storage" check per distinct store under the resources (the watch
	// caches in front of them have their own checks).
	// A store with a health check of its own (etcd's, with
	// --etcd-healthcheck-timeout) uses it in /healthz.
	var storageChecks, healthChecks []healthz.Check
	seen := map[storage.Interface]bool{}
	for _, st := range c.stores() {
		if rc, ok := st.(healthz.ReadinessChecker); ok && !seen[st] {
			seen[st] = true
			name := "storage"
			if len(seen) > 1 {
				name = fmt.Sprintf("storage-%d", len(seen))
			}
			storageChecks = append(storageChecks, healthz.ReadyCheck(name, rc))
			hc := healthz.ReadyCheck(name, rc)
			if h, ok := st.(healthyChecker); ok {
				hc = healthz.ReadyCheck(name, healthAsReady{h})
			}
			healthChecks = append(healthChecks, hc)
		}
	}
	storageChecks = append(storageChecks, s.readyChecks...)
	healthChecks = append(healthChecks, s.readyChecks...)
	onFailure := func(_ *http.Request, check string, err error) {
		s.log.Warn("health check failed", zap.String("check", check), zap.Error(err))
	}
	mk := func(endpoint string, checks ...Check) (*healthz.Handler, error) {
		h, err := healthz.New(endpoint, checks...)
		if h != nil {
			h.OnFailure = onFailure
		}
		return h, err
	}
	live, err1 := mk("livez", healthz.PingCheck())
	health, err2 := mk("healthz", append([]healthz.Check{healthz.PingCheck()}, append(healthChecks, c.Serving.ReadyChecks...)...)...)
	ready, err3 := mk("readyz", append(append([]healthz.Check{healthz.PingCheck()}, storageChecks...), append(slices.Clone(c.Serving.ReadyChecks), s.shutdownFlag)...)...)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}

	r := chi.NewRouter()
	for _, h := range []struct {
		path string
		h    http.Handler
	}{{"/livez", live}, {"/healthz", health}, {"/readyz", ready}} {
		r.Handle(h.path, h.h)
		r.Handle(h.path+"/*", h.h)
	}
	if !c.Observability.DisableProfiling {
		profiling.Route(r, c.Observability.ContentionProfiling)
	}
	var level *zap.AtomicLevel
	if !c.loggerInCode && c.logs != nil && c.logs.err == nil {
		level = &c.logs.level
	}
	r.Put("/debug/flags/v", logs.LevelHandler(level))
	r.Post(authz.SelfSubjectAccessReviewPath, authz.SelfSubjectAccessReviewHandler(authorizer))
	r.Post(authz.SelfSubjectRulesReviewPath, authz.SelfSubjectRulesReviewHandler(authorizer))
	r.Post(authn.SelfSubjectReviewPath, authn.SelfSubjectReviewHandler)
	r.Method(http.MethodGet, "/version", c.Serving.Version.Handler())
	if g, ok := gathererOf(c.Observability.Registerer); ok {
		r.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	if s.flowControl != nil {
		r.Handle(FlowControlDebugPath+"*", s.flowControl.DebugHandler())
	}
	r.NotFound(api.ServeHTTP)
	r.MethodNotAllowed(api.ServeHTTP)
	return r, nil
}

// Check is a health check; see package healthz.
type Check = healthz.Check

// healthyChecker is a store with a health check of its own.
type healthyChecker interface {
	Healthy(ctx context.Context) error
}

// healthAsReady serves a store's Healthy as a check.
type healthAsReady struct{ h healthyChecker }

func (h healthAsReady) Ready(ctx context.Context) error { return h.h.Healthy(ctx) }
