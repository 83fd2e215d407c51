// This file holds the test entry points: the short mode run by go test and
// the long mode behind ANNEX_ROBUSTNESS_RUNS.

package robustness

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// bin is the example, built once for every test of the package.
var bin = &exampleBinary{}

// backends are the two ways of running the example, with the faults each
// gets, one per run in turn.
func backends() []*backend {
	return []*backend{
		{name: "bbolt", faults: []string{"kill", "pause", "kill"}, bin: bin},
		{name: "etcd", faults: []string{"kill-replica", "restart-etcd", "pause"}, bin: bin},
		{name: "postgres", faults: []string{"kill-replica", "restart-postgres", "pause"}, bin: bin},
	}
}

// baseSeed is ANNEX_ROBUSTNESS_SEED, or the time.
func baseSeed(t *testing.T) uint64 {
	if s, err := strconv.ParseUint(os.Getenv("ANNEX_ROBUSTNESS_SEED"), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano())
}

// totals are the figures of a backend's runs.
type totals struct {
	runs, ops, writes, unknown, watches, events, faults, violations int
	lists, initial, expired, skipped                                int
}

func (tt *totals) add(h *History, r *Report) {
	tt.runs++
	tt.ops += r.Ops
	tt.writes += r.Writes
	tt.unknown += r.UnknownWrites
	tt.watches += r.Watches
	tt.events += r.Events
	tt.faults += len(h.Faults)
	tt.violations += len(r.Violations)
	tt.lists += r.ListsChecked
	tt.initial += r.InitialStates
	tt.expired += r.ExpiredExpected
	tt.skipped += r.Skipped
}

func (tt totals) String() string {
	return fmt.Sprintf("runs %d, operations %d (writes %d, unknown outcome %d), watches %d, events %d, faults injected %d, lists checked %d, WatchList initial states %d, expected 410s %d, skipped (incomplete) %d, violations %d",
		tt.runs, tt.ops, tt.writes, tt.unknown, tt.watches, tt.events, tt.faults, tt.lists, tt.initial, tt.expired, tt.skipped, tt.violations)
}

// TestRobustness runs randomized runs per backend: 3 in the short mode,
// ANNEX_ROBUSTNESS_RUNS in the long mode (with longer loads), each with one
// fault, and the window phase once per backend; each history is checked.
func TestRobustness(t *testing.T) {
	runs := envInt("ANNEX_ROBUSTNESS_RUNS", 3)
	long := os.Getenv("ANNEX_ROBUSTNESS_RUNS") != ""
	load := 2 * time.Second
	if long {
		load = 3 * time.Second
	}
	seed := baseSeed(t)
	t.Logf("ANNEX_ROBUSTNESS_SEED=%d", seed)
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			var tt totals
			start := time.Now()
			for i := range runs + 1 {
				cfg := runConfig{seed: seed + uint64(i), clients: 4, load: load}
				if i == 0 {
					cfg.window = true // no fault: the window phase is its fault
				} else {
					cfg.fault = b.faults[(i-1)%len(b.faults)]
				}
				h, r := runOnce(t, b, cfg)
				tt.add(h, r)
				t.Logf("%s run %d (seed %d, fault %q, window %v): ops %d, writes %d (%d unknown), watches %d, events %d, lists checked %d, initial states %d, 410 as expected %d, skipped %d, porcupine timeouts %d, violations %d",
					b.name, i, cfg.seed, cfg.fault, cfg.window, r.Ops, r.Writes, r.UnknownWrites, r.Watches, r.Events, r.ListsChecked, r.InitialStates, r.ExpiredExpected, r.Skipped, r.PorcupineUnknown, len(r.Violations))
				for _, v := range r.Violations {
					t.Errorf("%s run %d (ANNEX_ROBUSTNESS_SEED=%d): %s", b.name, i, cfg.seed, v)
				}
				if r.Visualization != "" {
					t.Logf("porcupine visualization: %s", r.Visualization)
				}
				if t.Failed() && !long {
					break
				}
			}
			t.Logf("SUMMARY %s: %s in %v", b.name, tt, time.Since(start).Round(time.Second))
		})
	}
}
