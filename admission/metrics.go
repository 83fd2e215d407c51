// This file holds the admission metrics, with the names and labels of
// k8s.io/apiserver's pkg/admission/metrics, plus annex's per-stage rejection
// counter.

package admission

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	annexmetrics "github.com/annexapi/annex/metrics"
)

const (
	stepAdmit    = "admit"
	stepValidate = "validate"
)

// metrics is nil-safe: a nil *metrics records nothing.
type metrics struct {
	step            *prometheus.HistogramVec
	controller      *prometheus.HistogramVec
	webhook         *prometheus.HistogramVec
	webhookReject   *prometheus.CounterVec
	webhookFailOpen *prometheus.CounterVec
	webhookRequests *prometheus.CounterVec
	policyCheck     *prometheus.CounterVec
	policyLatency   *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	buckets := []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5}
	m := &metrics{
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "step_admission_duration_seconds",
			Help: "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).", Buckets: buckets,
		}, []string{"type", "operation", "rejected"}),
		controller: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "controller_admission_duration_seconds",
			Help: "Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).", Buckets: buckets,
		}, []string{"name", "type", "operation", "rejected"}),
		webhook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_admission_duration_seconds",
			Help: "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).", Buckets: buckets,
		}, []string{"name", "type", "operation", "rejected"}),
		webhookReject: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_rejection_count",
			Help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation.",
		}, []string{"name", "type", "operation", "error_type", "rejection_code"}),
		webhookFailOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_fail_open_count",
			Help: "Admission webhook fail open count, identified by name and broken out for each admission type (validating or mutating).",
		}, []string{"name", "type"}),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "admission", Name: "webhook_request_total",
			Help: "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation.",
		}, []string{"name", "type", "operation", "code", "rejected"}),
		policyCheck: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "validating_admission_policy", Name: "check_total",
			Help: "Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.",
		}, []string{"policy", "policy_binding", "error_type", "enforcement_action"}),
		policyLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "validating_admission_policy", Name: "check_duration_seconds",
			Help:    "Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.",
			Buckets: []float64{0.0000005, 0.001, 0.01, 0.1, 1.0},
		}, []string{"policy", "policy_binding", "error_type", "enforcement_action"}),
	}
	var errs []error
	m.step = register(reg, m.step, &errs)
	m.controller = register(reg, m.controller, &errs)
	m.webhook = register(reg, m.webhook, &errs)
	m.webhookReject = register(reg, m.webhookReject, &errs)
	m.webhookFailOpen = register(reg, m.webhookFailOpen, &errs)
	m.webhookRequests = register(reg, m.webhookRequests, &errs)
	m.policyCheck = register(reg, m.policyCheck, &errs)
	m.policyLatency = register(reg, m.policyLatency, &errs)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observeStep(typ, op string, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.step.WithLabelValues(typ, op, strconv.FormatBool(err != nil)).Observe(d.Seconds())
}

func (m *metrics) observeController(name, typ, op string, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.controller.WithLabelValues(name, typ, op, strconv.FormatBool(err != nil)).Observe(d.Seconds())
}

func (m *metrics) observeWebhook(name, typ, op string, code int, rejected bool, d time.Duration) {
	if m == nil {
		return
	}
	r := strconv.FormatBool(rejected)
	m.webhook.WithLabelValues(name, typ, op, r).Observe(d.Seconds())
	m.webhookRequests.WithLabelValues(name, typ, op, strconv.Itoa(code), r).Inc()
}

func (m *metrics) webhookRejected(name, typ, op, errorType string, code int) {
	if m == nil {
		return
	}
	m.webhookReject.WithLabelValues(name, typ, op, errorType, strconv.Itoa(code)).Inc()
}

func (m *metrics) failOpen(name, typ string) {
	if m == nil {
		return
	}
	m.webhookFailOpen.WithLabelValues(name, typ).Inc()
}

// policyChecked records one validation of a policy that failed (or, with
// action "allow", that failed to evaluate and was ignored), as kube's
// check_total and check_duration_seconds: elapsed is the validation's.
func (m *metrics) policyChecked(policy, binding, errorType, action string, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.policyCheck.WithLabelValues(policy, binding, errorType, action).Inc()
	m.policyLatency.WithLabelValues(policy, binding, errorType, action).Observe(elapsed.Seconds())
}

// register registers c, or returns the collector already registered in its
// place (a second server on the same registry), collecting errors in errs.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errs *[]error) C {
	got, err := annexmetrics.Register(reg, c)
	if err != nil {
		*errs = append(*errs, err)
	}
	return got
}
