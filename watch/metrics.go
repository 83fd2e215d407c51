// This file holds the cache's Prometheus metrics, named as kube-apiserver's
// watch cache metrics where those exist.

package watch

import (
	"github.com/prometheus/client_golang/prometheus"

	annexmetrics "github.com/annexapi/annex/metrics"
)

// metrics are the collectors of one cacher, already curried with its
// resource label. With no registerer they are unregistered collectors: they
// count, but nobody scrapes them (no nil checks on the hot path).
type metrics struct {
	watchers   prometheus.Gauge
	received   prometheus.Counter
	dispatched prometheus.Counter
	terminated prometheus.Counter
	objects    prometheus.Gauge
	stored     prometheus.Gauge
	rv         prometheus.Gauge
	capacity   prometheus.Gauge
	readWait   prometheus.Observer
	// consistent is the consistent-read counter, curried by hand with
	// resource; consistentOK and consistentFallback are its only pairs
	// counted (success=true,fallback=false and the reverse), looked up once
	// rather than on every read.
	consistent                       *prometheus.CounterVec
	resource                         string
	consistentOK, consistentFallback annexmetrics.Lazy[prometheus.Counter]
	initialized                      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, resource string) (*metrics, error) {
	var firstErr error
	reg1 := func(c prometheus.Collector) prometheus.Collector {
		got, err := annexmetrics.Register(reg, c)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return got
	}
	l := []string{"resource"}
	gauge := func(name, help string) prometheus.Gauge {
		return reg1(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, l)).(*prometheus.GaugeVec).WithLabelValues(resource)
	}
	counter := func(name, help string) prometheus.Counter {
		return reg1(prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, l)).(*prometheus.CounterVec).WithLabelValues(resource)
	}
	wait := reg1(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_watch_cache_read_wait_seconds",
		Help:    "Histogram of time spent waiting for a watch cache to become fresh.",
		Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3},
	}, l)).(*prometheus.HistogramVec)
	consistent := reg1(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_watch_cache_consistent_read_total",
		Help: "Counter for consistent reads from cache.",
	}, []string{"resource", "success", "fallback"})).(*prometheus.CounterVec)
	m := &metrics{
		watchers:    gauge("apiserver_registered_watchers", "Number of currently registered watchers for a given resource."),
		received:    counter("apiserver_watch_cache_events_received_total", "Counter of events received in watch cache broken by resource type."),
		dispatched:  counter("apiserver_watch_cache_events_dispatched_total", "Counter of events dispatched in watch cache broken by resource type."),
		terminated:  counter("apiserver_terminated_watchers_total", "Counter of watchers closed due to unresponsiveness broken by resource type."),
		objects:     gauge("apiserver_watch_cache_objects", "Number of objects held by the watch cache."),
		stored:      gauge("apiserver_storage_objects", "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1."),
		rv:          gauge("apiserver_watch_cache_resource_version", "Current resource version of watch cache broken by resource type."),
		capacity:    gauge("apiserver_watch_cache_capacity", "Total capacity of watch cache broken by resource type."),
		readWait:    wait.WithLabelValues(resource),
		consistent:  consistent,
		resource:    resource,
		initialized: counter("apiserver_watch_cache_initializations_total", "Counter of watch cache initializations broken by resource type."),
	}
	return m, firstErr
}

// consistentRead counts a consistent read served from the cache (ok) or
// sent to the store.
func (m *metrics) consistentRead(ok bool) {
	if ok {
		m.consistentOK.Get(func() prometheus.Counter { return m.consistent.WithLabelValues(m.resource, "true", "false") }).Inc()
	} else {
		m.consistentFallback.Get(func() prometheus.Counter { return m.consistent.WithLabelValues(m.resource, "false", "true") }).Inc()
	}
}
