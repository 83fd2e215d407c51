package audit_test

import (
	"flag"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// registry is a prometheus registry that reads back counter values.
type registry struct{ *prometheus.Registry }

func newRegistry() registry { return registry{prometheus.NewRegistry()} }

// value returns the value of the counter name with labels (nil: the one
// without labels), 0 when absent.
func (r registry) value(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func newFlagSet() *flag.FlagSet { return flag.NewFlagSet("server", flag.ContinueOnError) }
