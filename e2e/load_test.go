package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/e2e/internal/load"
)

// TestLoadShort runs the load tool's short suite against the environments
// example as a process: every scenario does work, with no error and no lost
// watch event, and the footprint is read.
func TestLoadShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example; not in -short")
	}
	target, stop, err := load.StartAnnex(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	sizes := load.Short()
	sizes.Watchers, sizes.WatchFor = 20, time.Second
	results := target.Suite(context.Background(), sizes)
	var table strings.Builder
	load.Table(&table, []string{target.Name}, [][]load.Result{results})
	t.Logf("\n%s", table.String())
	for _, r := range results {
		switch {
		case strings.HasSuffix(r.Scenario, "(KiB)"): // per watcher: may round to 0
		case strings.HasSuffix(r.Scenario, "(MiB)"), strings.HasPrefix(r.Scenario, "start"):
			if r.Ops <= 0 {
				t.Errorf("%s: not read", r.Scenario)
			}
		case r.Errors > 0 || r.Lost > 0 || r.Ops == 0 || r.PerSecond() <= 0:
			t.Errorf("%s: %d ops, %d errors, %d lost", r.Scenario, r.Ops, r.Errors, r.Lost)
		}
		if strings.HasPrefix(r.Scenario, "watch") && (len(r.Latencies) == 0 || r.Quantile(0.99) <= 0) {
			t.Errorf("%s: no latencies", r.Scenario)
		}
	}
}
