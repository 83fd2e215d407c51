package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterReusesTheSameCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "annex_test_total", Help: "test"}
	first, err := Register(reg, prometheus.NewCounterVec(opts, []string{"x"}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(reg, prometheus.NewCounterVec(opts, []string{"x"}))
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("the second registration did not return the registered collector")
	}
	// Same name, other type: an error, never a collector of the wrong kind.
	if _, err := Register[prometheus.Collector](reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "annex_test_total", Help: "test"}, []string{"x"})); err == nil {
		t.Fatal("a gauge registered over a counter was accepted")
	}
	if c, err := Register[prometheus.Collector](nil, first); err != nil || c != prometheus.Collector(first) {
		t.Fatalf("nil registry: %v %v", c, err)
	}
}
