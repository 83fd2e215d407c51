// This file holds the storage metric families of kube-apiserver:
// etcd_request_duration_seconds for every request to the backend (the
// embedded bbolt file included: dashboards key on the name), and
// apiserver_storage_db_total_size_in_bytes polled from backends that know
// their size.

package metrics

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/storage"
)

// Storage are the storage families, registered once per server: the
// backends report to Observer, and PollDBSize runs beside the server.
type Storage struct {
	requests *prometheus.HistogramVec
	dbSize   *prometheus.GaugeVec
}

// NewStorage registers the storage families on reg.
func NewStorage(reg prometheus.Registerer) (*Storage, error) {
	m := &Storage{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Etcd request latency in seconds for each operation and object type.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"operation", "group", "resource"}),
		dbSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_storage_db_total_size_in_bytes",
			Help: "Total size of the storage database file physically allocated in bytes.",
		}, []string{"endpoint"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.dbSize} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Observer is the storage.RequestObserver of the backends (their Observer
// option): the group and resource labels are the key's (kube's since 1.34).
func (m *Storage) Observer() storage.RequestObserver {
	return func(_ context.Context, op, key string, _ time.Time, took time.Duration) {
		group, resource := KeyResource(key)
		m.requests.WithLabelValues(op, group, resource).Observe(took.Seconds())
	}
}

// KeyResource is the group and resource of a storage key
// (/<group>/<resource>/...; the core group, "core" in keys, is "").
func KeyResource(key string) (group, resource string) {
	parts := strings.SplitN(strings.TrimPrefix(key, "/"), "/", 3)
	if len(parts) < 2 {
		return "", "unknown"
	}
	if parts[0] == "core" {
		return "", parts[1]
	}
	return parts[0], parts[1]
}

// PollDBSize returns a long-running part (Start-shaped) that sets the size
// gauge from the stores at once and then every interval until ctx is done.
func (m *Storage) PollDBSize(stores []storage.SizeReporter, interval time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var once sync.Once
		poll := func() {
			for _, st := range stores {
				pctx, cancel := context.WithTimeout(ctx, interval)
				sizes, err := st.DBSize(pctx)
				cancel()
				if err != nil {
					continue // the last value stays, as kube's
				}
				for ep, n := range sizes {
					m.dbSize.WithLabelValues(ep).Set(float64(n))
				}
			}
		}
		once.Do(poll)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				poll()
			}
		}
	}
}
