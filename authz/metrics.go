// This file holds the authorization metrics, with Kubernetes' names where
// Kubernetes has one.

package authz

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/metrics"
)

// Metrics are the authorization metrics. A nil *Metrics records nothing.
type Metrics struct {
	decisions     *prometheus.CounterVec
	delegated     *prometheus.CounterVec
	delegatedTime *prometheus.HistogramVec
	evaluations   *prometheus.CounterVec
	failOpen      *prometheus.CounterVec
	cache         *prometheus.CounterVec

	// allowed is decisions{decision="allowed"}, every authorized request's,
	// looked up once rather than on each request (on its first use, so that
	// it appears when first counted, as before).
	allowed metrics.Lazy[prometheus.Counter]
}

// NewMetrics registers the authorization metrics with reg; a nil reg returns
// nil (no metrics). Registering twice with one registry reuses the
// collectors already there.
//
//	apiserver_authorization_decisions_total{decision}                  allowed, denied (the filter's outcome)
//	apiserver_delegated_authz_request_total{code}                      SubjectAccessReview calls
//	apiserver_delegated_authz_request_duration_seconds{code}
//	apiserver_authorization_webhook_evaluations_total{name,result}    success, canceled, timeout, error
//	apiserver_authorization_webhook_evaluations_fail_open_total{name,result}
//	apiserver_authorization_webhook_cache_requests_total{status}      hit, miss (annex's own)
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_authorization_decisions_total",
			Help: "Total number of terminal decisions made by the authorization filter, by decision."}, []string{"decision"}),
		delegated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_delegated_authz_request_total",
			Help: "Number of HTTP requests partitioned by status code."}, []string{"code"}),
		delegatedTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_delegated_authz_request_duration_seconds",
			Help: "Request latency in seconds. Broken down by status code.", Buckets: []float64{0.25, 0.5, 0.7, 1, 1.5, 3, 5, 10}}, []string{"code"}),
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_authorization_webhook_evaluations_total",
			Help: "Round-trips to authorization webhooks."}, []string{"name", "result"}),
		failOpen: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_authorization_webhook_evaluations_fail_open_total",
			Help: "NoOpinion results due to webhook timeout or error."}, []string{"name", "result"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_authorization_webhook_cache_requests_total",
			Help: "SubjectAccessReview cache lookups, by hit or miss."}, []string{"status"}),
	}
	var err error
	m.decisions = register(reg, m.decisions, &err)
	m.delegated = register(reg, m.delegated, &err)
	m.delegatedTime = register(reg, m.delegatedTime, &err)
	m.evaluations = register(reg, m.evaluations, &err)
	m.failOpen = register(reg, m.failOpen, &err)
	m.cache = register(reg, m.cache, &err)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	got, err := metrics.Register(reg, c)
	*errp = errors.Join(*errp, err)
	return got
}

func (m *Metrics) decision(allowed bool) {
	if m == nil {
		return
	}
	if allowed {
		m.allowed.Get(func() prometheus.Counter { return m.decisions.WithLabelValues("allowed") }).Inc()
	} else {
		m.decisions.WithLabelValues("denied").Inc()
	}
}

func (m *Metrics) webhookCall(name string, code int, result string, d time.Duration) {
	if m == nil {
		return
	}
	c := "<error>"
	if code > 0 {
		c = strconv.Itoa(code)
	}
	m.delegated.WithLabelValues(c).Inc()
	m.delegatedTime.WithLabelValues(c).Observe(d.Seconds())
	m.evaluations.WithLabelValues(name, result).Inc()
	if result != "success" {
		m.failOpen.WithLabelValues(name, result).Inc()
	}
}

func (m *Metrics) cacheLookup(hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.cache.WithLabelValues("hit").Inc()
	} else {
		m.cache.WithLabelValues("miss").Inc()
	}
}

// CacheCounter returns the webhook cache counter for status "hit" or
// "miss", for tests and dashboards that read it directly.
func (m *Metrics) CacheCounter(status string) prometheus.Counter {
	return m.cache.WithLabelValues(status)
}
