// This file assembles the handler: the built-in stages in their fixed order,
// the user's stages, and the mux behind them.

package annex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/healthz"
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

	m, err := metrics.New(metrics.Config{Registerer: c.Registerer, Known: knownResources(resources)})
	if err != nil {
		return nil, err
	}
	admit, err := s.buildAdmission(c, p, resources, fd.cluster, m.ObserveRejection)
	if err != nil {
		errs = append(errs, err)
	}
	apiHandler, err := rest.NewHandler(rest.Config{Resources: resources, MinRequestTimeout: c.MinRequestTimeout, DisableManagedFields: c.DisableManagedFields, DisableResponseCompression: c.DisableResponseCompression, DeleteCollectionWorkers: c.DeleteCollectionWorkers, Shutdown: s.watchCtx,
		WatchEvents: m.WatchEvents,
		Admission:   admit, OpenAPITitle: c.Name})
	if err != nil {
		errs = append(errs, err)
	}
	flowControl, err := s.buildFlowControl(c, resources, fd)
	if err != nil {
		errs = append(errs, err)
	}
	mux, err := s.buildMux(c, resources, apiHandler, fd.authorizer)
	if err != nil {
		errs = append(errs, err)
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Fill the table of stages.go; a slot left unset stays off.
	stages := DefaultStages()
	set := func(name string, f Filter) {
		if err := SetFilter(stages, name, f); err != nil {
			errs = append(errs, err)
		}
	}
	set(StagePanicRecovery, filters.WithPanicRecovery(filters.PanicRecoveryConfig{
		OnPanic: func(r *http.Request, v any, stack []byte) {
			s.log.Error("handler panic", zap.String("path", r.URL.Path), zap.Any("panic", v), zap.ByteString("stack", stack))
		}}))
	set(StageAuditID, filters.WithAuditID(filters.AuditIDConfig{}))
	set(StageRequestInfo, chainOf(
		filters.WithRequestReceivedTimestamp(filters.RequestReceivedTimestampConfig{}),
		filters.WithRequestInfoResolver(filters.RequestInfoResolver{})))
	if s.tracer != nil { // the request's span wraps everything after request info
		set(StageMetrics, chainOf(s.tracer.filter, m.Filter()))
	} else {
		set(StageMetrics, m.Filter())
	}
	set(StageLogging, s.requestLogging)
	set(StageHeaders, filters.WithCacheControl(filters.CacheControlConfig{}))
	set(StageDeadline, filters.WithRequestDeadline(filters.RequestDeadlineConfig{MaxTimeout: c.RequestTimeout}))
	set(StageTimeout, filters.WithRequestTimeout(filters.RequestTimeoutConfig{}))
	set(StageBodyLimit, filters.WithMaxRequestBody(filters.MaxRequestBodyConfig{MaxBytes: c.MaxRequestBodyBytes}))
	set(StageWarnings, filters.WithWarningRecorder(filters.WarningRecorderConfig{}))
	auditor, err := s.buildAudit(c)
	if err != nil {
		errs = append(errs, err)
	} else if auditor != nil {
		set(StageAudit, auditor.Filter)
		// A 401 never reaches the audit stage, which sits after
		// authentication: the authentication stage reports it.
		fd.onAuthnFailure = auditor.FailedAuthentication
	}
	if err := fd.fill(set); err != nil {
		errs = append(errs, err)
	}
	set(StageFlowControl, flowControl)
	stages, err = c.insertStages(stages)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
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

// fills reports whether Build fills the built-in stage name; the others
// (the slots) stay off. The validation phase checks the order of the stages
// with these on.
func (c *Builder) fills(name string) bool {
	switch name {
	case StageAudit:
		return c.Audit.Enabled()
	}
	return true
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
func (s *Server) buildMux(c *Builder, resources []rest.Resource, api http.Handler, authorizer authz.Authorizer) (http.Handler, error) {
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
	health, err2 := mk("healthz", append([]healthz.Check{healthz.PingCheck()}, append(healthChecks, c.ReadyChecks...)...)...)
	ready, err3 := mk("readyz", append(append([]healthz.Check{healthz.PingCheck()}, storageChecks...), append(c.ReadyChecks, s.shutdownFlag)...)...)
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
	if !c.DisableProfiling {
		routeProfiling(r, c.ContentionProfiling)
	}
	var level *zap.AtomicLevel
	if !c.loggerInCode && c.logs != nil && c.logs.err == nil {
		level = &c.logs.level
	}
	r.Put("/debug/flags/v", logLevelHandler(level))
	r.Post(selfSubjectAccessReviewPath, selfSubjectAccessReviewHandler(authorizer))
	r.Post(selfSubjectReviewPath, selfSubjectReviewHandler)
	version := c.Version.complete()
	r.Get("/version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(version)
	})
	if g, ok := gathererOf(c.Registerer); ok {
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

// requestLogging logs one line per request at debug level, and 5xx answers at
// warn level.
func (s *Server) requestLogging(next http.Handler) http.Handler {
	log := s.log.Named("http")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := filters.WrapResponseWriter(w)
		next.ServeHTTP(rw, r)
		code := rw.Status()
		level := V(3) // kube's httplog: every request at -v=3
		if code >= 500 {
			level = zap.WarnLevel
		}
		if ce := log.Check(level, "HTTP"); ce != nil {
			verb := r.Method
			if info, ok := filters.RequestInfoFrom(r.Context()); ok && info.Verb != "" {
				verb = strings.ToUpper(info.Verb)
			}
			fields := []zap.Field{
				zap.String("verb", verb), zap.String("URI", r.RequestURI), zap.Duration("latency", time.Since(start)),
				zap.String("userAgent", r.UserAgent()), zap.String("audit-ID", filters.AuditIDFrom(r.Context())),
				zap.String("srcIP", r.RemoteAddr),
			}
			if u, ok := filters.UserFrom(r.Context()); ok {
				fields = append(fields, zap.String("user", u.Name))
			}
			ce.Write(append(fields, zap.Int("resp", code))...)
		}
	})
}

// VersionInfo is the /version document, as kube-apiserver's version.Info.
type VersionInfo struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// KubernetesVersion is the Kubernetes release whose API conventions annex
// serves: its wire behaviour is compared with kube-apiserver of this minor
// version in the e2e module. /version reports it as the gitVersion's core,
// so that kubectl's version-skew check, which compares minor versions,
// passes for every kubectl it supports.
const KubernetesVersion = "v1.33.0"

// complete fills zero fields from the build information of the binary:
// gitVersion is KubernetesVersion with the program's own version (the main
// module's, else annex's, else "devel") as semver build metadata, e.g.
// v1.33.0+v0.4.2; major and minor follow gitVersion.
func (v VersionInfo) complete() VersionInfo {
	own := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		own = bi.Main.Version
		if own == "" || own == "(devel)" {
			own = ""
			for _, d := range bi.Deps {
				if d.Path == "github.com/annexapi/annex" {
					own = "annex-" + d.Version
				}
			}
		}
		for _, kv := range bi.Settings {
			switch {
			case kv.Key == "vcs.revision" && v.GitCommit == "":
				v.GitCommit = kv.Value
			case kv.Key == "vcs.time" && v.BuildDate == "":
				v.BuildDate = kv.Value
			case kv.Key == "vcs.modified" && v.GitTreeState == "":
				v.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[kv.Value]
			}
		}
	}
	if v.GitVersion == "" {
		v.GitVersion = KubernetesVersion + "+" + buildMetadata(own)
	}
	if v.Major == "" && v.Minor == "" {
		if maj, rest, ok := strings.Cut(strings.TrimPrefix(v.GitVersion, "v"), "."); ok {
			min, _, _ := strings.Cut(rest, ".")
			v.Major, v.Minor = maj, min
		}
	}
	v.GoVersion = runtime.Version()
	v.Compiler = runtime.Compiler
	v.Platform = runtime.GOOS + "/" + runtime.GOARCH
	return v
}

// buildMetadata makes a version a semver build-metadata string: only
// [0-9A-Za-z-.], anything else becomes '-'; empty is "devel".
func buildMetadata(version string) string {
	if version == "" {
		return "devel"
	}
	b := []byte(version)
	for i, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '.') {
			b[i] = '-'
		}
	}
	return string(b)
}

// healthyChecker is a store with a health check of its own.
type healthyChecker interface {
	Healthy(ctx context.Context) error
}

// healthAsReady serves a store's Healthy as a check.
type healthAsReady struct{ h healthyChecker }

func (h healthAsReady) Ready(ctx context.Context) error { return h.h.Healthy(ctx) }
