// This file holds the apiserver_flowcontrol_* metrics, with kube's names,
// labels and buckets, registered on an injected Registerer.

package flowcontrol

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	annexmetrics "github.com/annexapi/annex/metrics"
)

// metrics is nil-safe: every method does nothing on a nil receiver, which is
// what a nil Registerer gives.
type metrics struct {
	rejected   *prometheus.CounterVec
	dispatched *prometheus.CounterVec
	inqueue    *prometheus.GaugeVec
	executing  *prometheus.GaugeVec
	seats      *prometheus.GaugeVec
	wait       *prometheus.HistogramVec
	nominal    *prometheus.GaugeVec
	current    *prometheus.GaugeVec

	// flowsMu guards flows.
	flowsMu sync.RWMutex
	// flows holds each priority level and flow schema's series, looked up
	// in the vectors once: a request changes five of them (dispatched,
	// executing and seats up and down), and a vector's lookup hashes the
	// labels and takes its lock each time. Series are never deleted, so a
	// series kept here stays the one the vector exports.
	flows map[flowKey]*flowSeries
}

type flowKey struct{ pl, fs string }

// flowSeries are the series of one priority level and flow schema, each
// looked up in its vector on its first use (a series appears when first
// changed, as before).
type flowSeries struct {
	pl, fs                    string
	dispatched                annexmetrics.Lazy[prometheus.Counter]
	inqueue, executing, seats annexmetrics.Lazy[prometheus.Gauge]
}

// series returns pl and fs's series.
func (m *metrics) series(pl, fs string) *flowSeries {
	k := flowKey{pl, fs}
	m.flowsMu.RLock()
	f, ok := m.flows[k]
	m.flowsMu.RUnlock()
	if ok {
		return f
	}
	m.flowsMu.Lock()
	defer m.flowsMu.Unlock()
	if f, ok := m.flows[k]; ok {
		return f
	}
	f = &flowSeries{pl: pl, fs: fs}
	if m.flows == nil {
		m.flows = make(map[flowKey]*flowSeries)
	}
	m.flows[k] = f
	return f
}

func (f *flowSeries) gauge(l *annexmetrics.Lazy[prometheus.Gauge], vec *prometheus.GaugeVec) prometheus.Gauge {
	return l.Get(func() prometheus.Gauge { return vec.WithLabelValues(f.pl, f.fs) })
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	const ns, sub = "apiserver", "flowcontrol"
	plfs := []string{"priority_level", "flow_schema"}
	m := &metrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rejected_requests_total",
			Help: "Number of requests rejected by API Priority and Fairness subsystem"}, []string{"priority_level", "flow_schema", "reason"}),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dispatched_requests_total",
			Help: "Number of requests executed by API Priority and Fairness subsystem"}, plfs),
		inqueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "current_inqueue_requests",
			Help: "Number of requests currently pending in queues of the API Priority and Fairness subsystem"}, plfs),
		executing: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "current_executing_requests",
			Help: "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem"}, plfs),
		seats: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "current_executing_seats",
			Help: "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem"}, plfs),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "request_wait_duration_seconds",
			Help:    "Length of time a request spent waiting in its queue",
			Buckets: []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}}, []string{"priority_level", "flow_schema", "execute"}),
		nominal: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "nominal_limit_seats",
			Help: "Nominal number of execution seats configured for each priority level"}, []string{"priority_level"}),
		current: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "current_limit_seats",
			Help: "current derived number of execution seats available to each priority level"}, []string{"priority_level"}),
	}
	for _, c := range []prometheus.Collector{m.rejected, m.dispatched, m.inqueue, m.executing, m.seats, m.wait, m.nominal, m.current} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) reject(pl, fs, reason string) {
	if m != nil {
		m.rejected.WithLabelValues(pl, fs, reason).Inc()
	}
}

func (m *metrics) dispatch(pl, fs string) {
	if m != nil {
		f := m.series(pl, fs)
		f.dispatched.Get(func() prometheus.Counter { return m.dispatched.WithLabelValues(pl, fs) }).Inc()
	}
}

func (m *metrics) addWaiting(pl, fs string, d int) {
	if m != nil {
		f := m.series(pl, fs)
		f.gauge(&f.inqueue, m.inqueue).Add(float64(d))
	}
}

func (m *metrics) addExecuting(pl, fs string, reqs, seats int) {
	if m == nil {
		return
	}
	f := m.series(pl, fs)
	if reqs != 0 {
		f.gauge(&f.executing, m.executing).Add(float64(reqs))
	}
	if seats != 0 {
		f.gauge(&f.seats, m.seats).Add(float64(seats))
	}
}

func (m *metrics) observeWait(pl, fs string, executed bool, d time.Duration) {
	if m != nil {
		m.wait.WithLabelValues(pl, fs, strconv.FormatBool(executed)).Observe(d.Seconds())
	}
}

func (m *metrics) setLimits(pl string, nominal, current int) {
	if m != nil {
		m.nominal.WithLabelValues(pl).Set(float64(nominal))
		m.current.WithLabelValues(pl).Set(float64(current))
	}
}
