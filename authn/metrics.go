// This file holds the authentication metrics, with Kubernetes' names.

package authn

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/metrics"
)

// Metrics are the authentication metrics. A nil *Metrics records nothing, so
// every config can take one optionally.
type Metrics struct {
	attempts      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	delegated     *prometheus.CounterVec
	delegatedTime *prometheus.HistogramVec
	cache         *prometheus.CounterVec

	// successAttempts and successDuration are result="success"'s series,
	// every authenticated request's, looked up once.
	successAttempts metrics.Lazy[prometheus.Counter]
	successDuration metrics.Lazy[prometheus.Observer]
}

// NewMetrics registers the authentication metrics with reg and returns them;
// a nil reg returns nil (no metrics). Registering twice with the same
// registry reuses the collectors already there.
//
//	authentication_attempts{result}                         success, failure, error
//	authentication_duration_seconds{result}
//	apiserver_delegated_authn_request_total{code}           TokenReview calls ("<error>" when none answered)
//	apiserver_delegated_authn_request_duration_seconds{code}
//	authentication_token_cache_request_total{status}        hit, miss
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "authentication_attempts",
			Help: "Counter of authenticated attempts."}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "authentication_duration_seconds",
			Help: "Authentication duration in seconds broken out by result.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"result"}),
		delegated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_delegated_authn_request_total",
			Help: "Number of HTTP requests partitioned by status code."}, []string{"code"}),
		delegatedTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_delegated_authn_request_duration_seconds",
			Help: "Request latency in seconds. Broken down by status code.", Buckets: []float64{0.25, 0.5, 0.7, 1, 1.5, 3, 5, 10}}, []string{"code"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "authentication_token_cache_request_total",
			Help: "Number of token cache lookups, by hit or miss."}, []string{"status"}),
	}
	var err error
	m.attempts = register(reg, m.attempts, &err)
	m.duration = register(reg, m.duration, &err)
	m.delegated = register(reg, m.delegated, &err)
	m.delegatedTime = register(reg, m.delegatedTime, &err)
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

func (m *Metrics) attempt(result string, d time.Duration) {
	if m == nil {
		return
	}
	if result == "success" {
		m.successAttempts.Get(func() prometheus.Counter { return m.attempts.WithLabelValues(result) }).Inc()
		m.successDuration.Get(func() prometheus.Observer { return m.duration.WithLabelValues(result) }).Observe(d.Seconds())
		return
	}
	m.attempts.WithLabelValues(result).Inc()
	m.duration.WithLabelValues(result).Observe(d.Seconds())
}

func (m *Metrics) delegatedRequest(code int, d time.Duration) {
	if m == nil {
		return
	}
	c := "<error>"
	if code > 0 {
		c = strconv.Itoa(code)
	}
	m.delegated.WithLabelValues(c).Inc()
	m.delegatedTime.WithLabelValues(c).Observe(d.Seconds())
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

// AttemptsCounter returns the authentication_attempts counter for a result
// (success, failure, error), for tests and dashboards that read it directly.
func (m *Metrics) AttemptsCounter(result string) prometheus.Counter {
	return m.attempts.WithLabelValues(result)
}
