// This file holds the request metrics and the filter that records them.

package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/filters"
)

// Config configures the request metrics. The zero value records nothing.
type Config struct {
	// Registerer receives the collectors; nil disables recording.
	Registerer prometheus.Registerer
	// Known reports whether a resource is served; nil treats every resource as
	// served (only safe when something earlier rejects unknown paths).
	Known func(group, version, resource string) bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Metrics are the request metrics of one server.
type Metrics struct {
	requests    *prometheus.CounterVec
	durations   *prometheus.HistogramVec
	rejections  *prometheus.CounterVec
	inflight    *prometheus.GaugeVec
	longRunning *prometheus.GaugeVec
	sizes       *prometheus.HistogramVec
	watchEvents *prometheus.CounterVec
	watchSizes  *prometheus.HistogramVec
	sli         *prometheus.HistogramVec
	known       func(group, version, resource string) bool
	now         func() time.Time
	// series caches the children a completed request records into, by
	// seriesKey (see seriesFor).
	series sync.Map
}

// seriesKey names the series a completed request records into: its labels,
// status code, and whether it observes the SLI histogram (long-running
// requests do not).
type seriesKey struct {
	labels [8]string
	code   int
	sli    bool
}

// series are the children of one seriesKey; sli and size are nil where the
// request records none.
type series struct {
	duration, sli, size prometheus.Observer
	requests            prometheus.Counter
}

// seriesFor returns k's children, looked up in the vectors on k's first
// request only: a vector hashes and validates every label value on each
// lookup, which across the four was a microsecond of each request. The
// cache holds one entry per series the vectors hold, so it is bounded as
// they are (unknown resources are labelled "other").
func (m *Metrics) seriesFor(k seriesKey) *series {
	if s, ok := m.series.Load(k); ok {
		return s.(*series)
	}
	l := k.labels
	g := gaugeLabelValues(l)
	s := &series{duration: m.durations.WithLabelValues(l[:]...), requests: m.requests.WithLabelValues(append(l[:], strconv.Itoa(k.code))...)}
	if k.sli {
		s.sli = m.sli.WithLabelValues(g[:]...)
	}
	if l[0] == "GET" || l[0] == "LIST" { // read responses only, as kube
		s.size = m.sizes.WithLabelValues(g[:]...)
	}
	got, _ := m.series.LoadOrStore(k, s)
	return got.(*series)
}

// gaugeLabelValues are l without the dry_run label: the gauges', sizes' and
// SLI's label set.
func gaugeLabelValues(l [8]string) [7]string {
	return [7]string{l[0], l[2], l[3], l[4], l[5], l[6], l[7]}
}

// durationBuckets are kube-apiserver's buckets for apiserver_request_duration_seconds.
func durationBuckets() []float64 {
	return []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}
}

// New creates the collectors and registers them with cfg.Registerer. It fails
// when registration fails (for example, a second server on one registry).
func New(cfg Config) (*Metrics, error) {
	m := &Metrics{known: cfg.Known, now: cfg.Now}
	if m.now == nil {
		m.now = time.Now
	}
	if cfg.Registerer == nil {
		return m, nil
	}
	labels := []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_request_total",
		Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
	}, append(labels, "code"))
	m.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_duration_seconds",
		Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
		Buckets: durationBuckets(),
	}, labels)
	m.rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "annex_request_rejections_total",
		Help: "Requests turned away, by the stage that turned them away.",
	}, []string{"stage"})
	m.inflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_current_inflight_requests",
		Help: "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
	}, []string{"request_kind"})
	gaugeLabels := []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}
	m.longRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_longrunning_requests",
		Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
	}, gaugeLabels)
	m.sizes = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_response_sizes",
		Help:    "Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
		Buckets: prometheus.ExponentialBuckets(1000, 10, 8),
	}, gaugeLabels)
	gvr := []string{"group", "version", "resource"} // kube's since 1.31 (was kind)
	m.watchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_watch_events_total",
		Help: "Number of events sent in watch clients",
	}, gvr)
	m.watchSizes = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_watch_events_sizes",
		Help:    "Watch event size distribution in bytes",
		Buckets: prometheus.ExponentialBuckets(1024, 2, 8),
	}, gvr)
	m.sli = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_sli_duration_seconds",
		Help:    "Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.",
		Buckets: []float64{0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
	}, gaugeLabels)
	for _, c := range []prometheus.Collector{m.requests, m.durations, m.rejections, m.inflight, m.longRunning, m.sizes, m.watchEvents, m.watchSizes, m.sli} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveRejection counts a request turned away by stage.
func (m *Metrics) ObserveRejection(stage string) {
	if m.rejections != nil {
		m.rejections.WithLabelValues(stage).Inc()
	}
}

// Filter returns the filter that records every request. It reads the
// RequestInfo from the context, so it must run after the request-info stage.
func (m *Metrics) Filter() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if m.requests == nil {
			return next
		}
		readOnly, mutating := m.inflight.WithLabelValues("readOnly"), m.inflight.WithLabelValues("mutating")
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := m.now()
			rw := filters.WrapResponseWriter(w)
			info, ok := filters.RequestInfoFrom(r.Context())
			if !ok {
				info = &filters.RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
			}
			l := m.labels(r, info)
			longRunning := filters.IsLongRunning(r, filters.DefaultLongRunning)
			var excluded *atomic.Int64
			if !longRunning {
				var ctx context.Context
				ctx, excluded = filters.ContextWithSLIExcluded(r.Context())
				r = filters.RequestWithContext(r, ctx)
			}
			if longRunning {
				g := gaugeLabelValues(l)
				lr := m.longRunning.WithLabelValues(g[:]...)
				lr.Inc()
				defer lr.Dec()
			} else {
				kind := readOnly
				if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
					kind = mutating
				}
				kind.Inc()
				defer kind.Dec()
			}
			next.ServeHTTP(rw, r)
			code := rw.Status()
			if code == 0 {
				code = http.StatusOK
			}
			took := m.now().Sub(start)
			s := m.seriesFor(seriesKey{labels: l, code: code, sli: excluded != nil})
			s.duration.Observe(took.Seconds())
			if s.sli != nil {
				s.sli.Observe(max(took-time.Duration(excluded.Load()), 0).Seconds())
			}
			s.requests.Inc()
			if s.size != nil {
				s.size.Observe(float64(rw.BytesWritten()))
			}
		})
	}
}

// labels computes the label values, in the order New declares them, with
// kube-apiserver's CleanVerb and CleanScope rules.
func (m *Metrics) labels(r *http.Request, info *filters.RequestInfo) [8]string {
	group, version, resource, subresource := info.APIGroup, info.APIVersion, info.Resource, info.Subresource
	if info.IsResourceRequest && m.known != nil && !m.known(group, version, resource) {
		group, version, resource, subresource = "", "", "other", ""
	}
	dryRun := ""
	if r.URL.RawQuery != "" && r.URL.Query().Get("dryRun") == "All" { // no query to parse for a plain GET
		dryRun = "All"
	}
	return [8]string{Verb(r, info), dryRun, group, version, resource, subresource, Scope(info), "apiserver"}
}

// Verb is the metrics verb of a request, as kube-apiserver's CleanVerb: LIST,
// WATCH, APPLY for apply patches, the kube verb in upper case for other
// resource requests, and the HTTP method otherwise.
func Verb(r *http.Request, info *filters.RequestInfo) string {
	if !info.IsResourceRequest {
		return strings.ToUpper(r.Method)
	}
	switch info.Verb {
	case "get":
		return "GET"
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return "APPLY"
		}
		return "PATCH"
	case "":
		return "other"
	default:
		return strings.ToUpper(info.Verb)
	}
}

// Scope is kube-apiserver's CleanScope: "resource" for a named object or a
// create, "namespace", "cluster", or "" for non-resource requests.
func Scope(info *filters.RequestInfo) string {
	switch {
	case info.Name != "" || info.Verb == "create":
		return "resource"
	case info.Namespace != "":
		return "namespace"
	case info.IsResourceRequest:
		return "cluster"
	}
	return ""
}

// WatchEvents returns what records one event sent to a watcher of the
// resource group/version/resource (apiserver_watch_events_total and
// _sizes), with the label lookup done once; nil when nothing is recorded.
func (m *Metrics) WatchEvents(group, version, resource string) func(size int) {
	if m == nil || m.watchEvents == nil {
		return nil
	}
	n, sz := m.watchEvents.WithLabelValues(group, version, resource), m.watchSizes.WithLabelValues(group, version, resource)
	return func(size int) {
		n.Inc()
		sz.Observe(float64(size))
	}
}
