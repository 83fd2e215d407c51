// This file holds the audit metrics, with Kubernetes' names.

package audit

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/metrics"
)

// auditMetrics are kube-apiserver's audit metrics. A nil *auditMetrics
// records nothing.
//
//	apiserver_audit_event_total                 events generated and sent to the backends
//	apiserver_audit_error_total{plugin}         events lost: log, webhook, buffered (a full buffer), truncate
//	apiserver_audit_level_total{level}          requests by policy level (one per request)
//	apiserver_audit_requests_rejected_total     requests rejected by a blocking-strict backend's failure
type auditMetrics struct {
	events   prometheus.Counter
	errors   *prometheus.CounterVec
	levels   *prometheus.CounterVec
	rejected prometheus.Counter
	// byLevel are levels' children by Level.ord, each looked up on its
	// level's first request (a series appears once its level occurred, as
	// in Kubernetes), not on every request.
	byLevel [4]atomic.Pointer[prometheus.Counter]
}

func newMetrics(reg prometheus.Registerer) (*auditMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &auditMetrics{
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "apiserver_audit_event_total",
			Help: "Counter of audit events generated and sent to the audit backend."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_audit_error_total",
			Help: "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error."}, []string{"plugin"}),
		levels: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_audit_level_total",
			Help: "Counter of policy levels for audit events (1 per request)."}, []string{"level"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "apiserver_audit_requests_rejected_total",
			Help: "Counter of apiserver requests rejected due to an error in audit logging backend."}),
	}
	var err error
	m.events = register(reg, m.events, &err)
	m.errors = register(reg, m.errors, &err)
	m.levels = register(reg, m.levels, &err)
	m.rejected = register(reg, m.rejected, &err)
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

func (m *auditMetrics) event() {
	if m != nil {
		m.events.Inc()
	}
}

func (m *auditMetrics) lost(plugin string, n int) {
	if m != nil && n > 0 {
		m.errors.WithLabelValues(plugin).Add(float64(n))
	}
}

func (m *auditMetrics) level(l Level) {
	if m == nil {
		return
	}
	i := l.ord()
	if i < 0 {
		m.levels.WithLabelValues(string(l)).Inc()
		return
	}
	c := m.byLevel[i].Load()
	if c == nil {
		child := m.levels.WithLabelValues(string(l))
		c = &child
		m.byLevel[i].Store(c)
	}
	(*c).Inc()
}

func (m *auditMetrics) reject() {
	if m != nil {
		m.rejected.Inc()
	}
}
