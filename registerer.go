// This file holds the Registerer Build's second phase registers through, so
// that a failed Build takes its metrics back.

package annex

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// trackingRegisterer registers on the caller's Registerer and remembers what
// it registered, so that a Build failing after some stages registered their
// metrics can unregister them: the caller may then fix the cause and Build
// again with the same registry.
type trackingRegisterer struct {
	prometheus.Registerer
	mu         sync.Mutex
	registered []prometheus.Collector
}

// Register registers c and remembers it.
func (t *trackingRegisterer) Register(c prometheus.Collector) error {
	if err := t.Registerer.Register(c); err != nil {
		return err
	}
	t.mu.Lock()
	t.registered = append(t.registered, c)
	t.mu.Unlock()
	return nil
}

// MustRegister registers each collector, panicking on the first error as
// prometheus' own MustRegister does.
func (t *trackingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := t.Register(c); err != nil {
			panic(err)
		}
	}
}

// gathererOf is r, or the Registerer a trackingRegisterer wraps, as a
// prometheus.Gatherer (what /metrics serves), if it is one.
func gathererOf(r prometheus.Registerer) (prometheus.Gatherer, bool) {
	if t, ok := r.(*trackingRegisterer); ok {
		r = t.Registerer
	}
	g, ok := r.(prometheus.Gatherer)
	return g, ok
}

// unregisterAll unregisters everything registered through t, last first.
func (t *trackingRegisterer) unregisterAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.registered) - 1; i >= 0; i-- {
		t.Registerer.Unregister(t.registered[i])
	}
	t.registered = nil
}
