package metrics

import (
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestLazy: the series is looked up once however many goroutines change it,
// is the vector's own (its changes are what the vector exports), and does
// not appear before its first use.
func TestLazy(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lazy_total", Help: "h"}, []string{"l"})
	var l Lazy[prometheus.Counter]
	var lookups int
	var mu sync.Mutex
	lookup := func() prometheus.Counter {
		mu.Lock()
		lookups++
		mu.Unlock()
		return vec.WithLabelValues("a")
	}
	if n := testutil.CollectAndCount(vec); n != 0 {
		t.Fatalf("%d series before the first use, want 0", n)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				l.Get(lookup).Inc()
			}
		})
	}
	wg.Wait()
	if lookups != 1 {
		t.Errorf("%d lookups, want 1", lookups)
	}
	want := "# HELP lazy_total h\n# TYPE lazy_total counter\nlazy_total{l=\"a\"} 800\n"
	if err := testutil.CollectAndCompare(vec, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
