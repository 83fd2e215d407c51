package watch

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex/storage"
)

// TestConsistentReadCounted checks the consistent-read counter the cache
// keeps its series of: each consistent GET served from memory counts as
// success=true,fallback=false, and the fallback series does not appear
// before a read falls back.
func TestConsistentReadCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := startCacher(t, openBolt(t, true), Config{Registerer: reg, Resource: "widgets"})
	mustCreate(t, c, key("ns", "a"), object("ns", "a", "1"))
	const reads = 3
	for range reads {
		if _, err := c.Get(context.Background(), key("ns", "a"), storage.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_watch_cache_consistent_read_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			got[l["resource"]+" success="+l["success"]+" fallback="+l["fallback"]] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"widgets success=true fallback=false": reads}
	if len(got) != len(want) || got["widgets success=true fallback=false"] < reads {
		t.Errorf("consistent reads counted %v, want at least %v and no other series", got, want)
	}
}
