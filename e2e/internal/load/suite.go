package load

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Sizes sets how much each scenario does.
type Sizes struct {
	Objects, Clients, Reads, Lists, Updates, Conflicts int
	Watchers                                           int
	WriteRate                                          float64
	WatchFor                                           time.Duration
}

// Short is a few seconds per scenario: what CI runs to keep the tool working.
func Short() Sizes {
	return Sizes{Objects: 300, Clients: 8, Reads: 2000, Lists: 20, Updates: 500, Conflicts: 200, Watchers: 50, WriteRate: 50, WatchFor: 2 * time.Second}
}

// Full is issue 18's comparison.
func Full() Sizes {
	return Sizes{Objects: 10000, Clients: 16, Reads: 50000, Lists: 100, Updates: 10000, Conflicts: 2000, Watchers: 1000, WriteRate: 100, WatchFor: 20 * time.Second}
}

// Suite runs every scenario against t, in order, and the footprint:
// resident memory (RSS) and the part of it the process owns (RssAnon: heap
// and stacks, not the binary's file-backed pages), in KiB. A Minimal target
// skips the conflicts and the watch.
func (t Target) Suite(ctx context.Context, s Sizes) []Result {
	mem := func(label string) []Result {
		return []Result{{Scenario: "RSS " + label + " (MiB)", Ops: int(t.RSS() >> 10)},
			{Scenario: "RssAnon " + label + " (MiB)", Ops: int(t.RssAnon() >> 10)}}
	}
	out := []Result{{Scenario: "start → ready, fresh data (ms)", Ops: int(t.Ready.Milliseconds())}}
	out = append(out, mem("idle")...)
	out = append(out,
		t.Create("obj", s.Objects, s.Clients),
		t.Get("obj", s.Objects, s.Reads, s.Clients),
		t.List("", s.Lists, 1),
		t.List("limit=500", s.Lists, 1),
		t.List("resourceVersion=0", s.Lists, 1),
		t.Update("obj", s.Objects, s.Updates, s.Clients),
	)
	if t.Minimal {
		out = append(out, Result{Skipped: true})
	} else {
		out = append(out, t.Conflicts("obj", s.Conflicts, s.Clients))
	}
	out = append(out, mem(fmt.Sprintf("with %d objects", s.Objects))...)
	if t.Minimal {
		return append(out, Result{Skipped: true}, Result{Skipped: true}, Result{Skipped: true}, Result{Skipped: true},
			Result{Skipped: true}, Result{Skipped: true})
	}
	perWatcher := func(label string, w Result, before int64) Result {
		return Result{Scenario: "RssAnon per watcher, " + label + " (KiB)", Ops: int(max(w.RssAnon-before, 0) >> 10 / int64(max(s.Watchers, 1)))}
	}
	// Multiplexed first: the memory it leaves in the heap (not returned to
	// the OS at once) is reused by the next, which needs more (a TLS
	// connection per watcher), so neither delta hides the other's.
	before := t.RssAnon()
	shared := t.WatchShared(ctx, s.Watchers, 100, s.WriteRate, s.WatchFor)
	out = append(out, shared, perWatcher("100 per connection", shared, before))
	before = t.RssAnon()
	own := t.Watch(ctx, s.Watchers, s.WriteRate, s.WatchFor)
	out = append(out, own, perWatcher("own connection", own, before))
	out = append(out, mem(fmt.Sprintf("after %d watchers", s.Watchers))...)
	return out
}

// WatchSuite is the watch scenarios of Suite alone, on an empty
// collection: the footprint idle, multiplexed watchers (100 per
// connection) and watchers on their own connections, each with its
// RssAnon per watcher and the server's CPU per delivery. With profileDir,
// each scenario's CPU profile over its writes is written there
// (shared.pprof, own.pprof), and the server's heap at its end
// (shared.heap.pprof, own.heap.pprof).
func (t Target) WatchSuite(ctx context.Context, s Sizes, profileDir string) []Result {
	out := []Result{{Scenario: "RSS idle (MiB)", Ops: int(t.RSS() >> 10)}, {Scenario: "RssAnon idle (MiB)", Ops: int(t.RssAnon() >> 10)}}
	perWatcher := func(label string, w Result, before int64) []Result {
		cpu := Result{Scenario: "CPU per delivery, " + label + " (µs)"}
		fmt.Fprintf(os.Stderr, "%s: %d deliveries in %v, server CPU %v (%.1f%% of a core), load tool CPU %v (%.1f%% of a core)\n", w.Scenario, w.Ops, w.Elapsed.Round(time.Millisecond),
			w.CPU, 100*w.CPU.Seconds()/max(w.Elapsed.Seconds(), 1e-9), w.LoadCPU.Round(time.Millisecond), 100*w.LoadCPU.Seconds()/max(w.Elapsed.Seconds(), 1e-9))
		if w.Ops > 0 {
			cpu.Ops = int(w.CPU.Microseconds() * 1000 / int64(w.Ops)) // ns, shown as µs below
		}
		return []Result{{Scenario: "RssAnon per watcher, " + label + " (KiB)", Ops: int(max(w.RssAnon-before, 0) >> 10 / int64(max(s.Watchers, 1)))}, cpu}
	}
	profile := func(name string) Target {
		if profileDir != "" {
			t.WatchProfile = filepath.Join(profileDir, name)
		}
		return t
	}
	before := t.RssAnon()
	shared := profile("shared.pprof").WatchShared(ctx, s.Watchers, 100, s.WriteRate, s.WatchFor)
	out = append(out, shared)
	out = append(out, perWatcher("100 per connection", shared, before)...)
	before = t.RssAnon()
	own := profile("own.pprof").Watch(ctx, s.Watchers, s.WriteRate, s.WatchFor)
	out = append(out, own)
	out = append(out, perWatcher("own connection", own, before)...)
	return append(out, Result{Scenario: "RSS peak (MiB)", Ops: int(t.PeakRSS() >> 10)})
}

// Table writes results as a markdown table, one column per target, and
// the ratio of the first target to the last (the reference) when there are
// two.
func Table(w io.Writer, names []string, results [][]Result) {
	fmt.Fprintf(w, "| scenario | %s |", strings.Join(names, " | "))
	if len(names) == 2 {
		fmt.Fprintf(w, " %s ÷ %s |", names[0], names[1])
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|---|"+strings.Repeat("---|", len(names)))
	if len(names) == 2 {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for i, r := range results[0] {
		fmt.Fprintf(w, "| %s |", r.Scenario)
		var vals []float64
		for _, rs := range results {
			v, cell := figure(rs[i])
			vals = append(vals, v)
			fmt.Fprintf(w, " %s |", cell)
		}
		if len(names) == 2 && vals[1] != 0 {
			if q := vals[0] / vals[1]; q < 0.1 {
				fmt.Fprintf(w, " 1/%.0f |", 1/q)
			} else {
				fmt.Fprintf(w, " %.2f× |", q)
			}
		}
		fmt.Fprintln(w)
	}
}

// CompareTable writes annex, the floor and the reference side by side
// (results in that order), CPU per operation first: annex ÷ floor and
// reference ÷ annex are ratios of CPU per operation where there is one
// (of memory, of latency or of time otherwise), so that both read "how many
// times".
func CompareTable(w io.Writer, names []string, results [][]Result) {
	fmt.Fprintf(w, "| scenario | %s | %s ÷ %s | %s ÷ %s |\n", strings.Join(names, " | "), names[0], names[1], names[2], names[0])
	fmt.Fprintln(w, "|---|"+strings.Repeat("---|", len(names)+2))
	for i, r := range results[0] {
		fmt.Fprintf(w, "| %s |", r.Scenario)
		var vals []float64
		for _, rs := range results {
			v, cell := cpuFigure(rs[i])
			vals = append(vals, v)
			fmt.Fprintf(w, " %s |", cell)
		}
		ratio := func(a, b float64) string {
			if a <= 0 || b <= 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f×", a/b)
		}
		fmt.Fprintf(w, " %s | %s |\n", ratio(vals[0], vals[1]), ratio(vals[2], vals[0]))
	}
}

// cpuFigure is a result's cell with CPU per operation first, and that CPU
// in ms as its number (or figure's number for results without one).
func cpuFigure(r Result) (float64, string) {
	if r.Skipped || r.CPU <= 0 || r.Ops <= 0 || strings.HasPrefix(r.Scenario, "watch") || strings.HasPrefix(r.Scenario, "lost") {
		return figure(r)
	}
	ms := float64(r.CPU.Microseconds()) / 1000 / float64(r.Ops)
	cell := fmt.Sprintf("%.4f ms CPU, %.0f/s", ms, r.PerSecond())
	if len(r.OpLatencies) > 0 {
		cell += fmt.Sprintf(", p99 %v", r.OpLatencies[min(len(r.OpLatencies)-1, len(r.OpLatencies)*99/100)].Round(10*time.Microsecond))
	}
	if r.Errors > 0 {
		cell += fmt.Sprintf(", %d errors", r.Errors)
	}
	return ms, cell
}

// Spread writes, scenario by scenario, each pass's figure on each target:
// how far apart the passes behind a median are.
func Spread(w io.Writer, names []string, passes [][][]Result) {
	for i, name := range names {
		if len(passes[i]) < 2 {
			continue
		}
		fmt.Fprintf(w, "%s, each pass:\n", name)
		for j, r := range passes[i][0] {
			cells := make([]string, len(passes[i]))
			for p := range passes[i] {
				_, cells[p] = figure(passes[i][p][j])
			}
			fmt.Fprintf(w, "  %s: %s\n", r.Scenario, strings.Join(cells, " | "))
		}
	}
}

// Median returns, scenario by scenario, the result of the pass with the
// median headline figure (the lower middle one for an even count).
func Median(passes [][]Result) []Result {
	if len(passes) == 0 {
		return nil
	}
	out := make([]Result, len(passes[0]))
	for i := range out {
		rs := make([]Result, len(passes))
		for p := range passes {
			rs[p] = passes[p][i]
		}
		slices.SortFunc(rs, func(a, b Result) int {
			fa, _ := figure(a)
			fb, _ := figure(b)
			return cmp.Compare(fa, fb)
		})
		out[i] = rs[(len(rs)-1)/2]
	}
	return out
}

// figure is a result's headline number and its cell.
func figure(r Result) (float64, string) {
	switch {
	case r.Skipped:
		return 0, "—"
	case strings.HasSuffix(r.Scenario, "(MiB)"): // measured in KiB
		return float64(r.Ops), fmt.Sprintf("%.1f", float64(r.Ops)/1024)
	case strings.HasSuffix(r.Scenario, "(µs)"): // measured in ns
		return float64(r.Ops), fmt.Sprintf("%.2f", float64(r.Ops)/1000)
	case strings.HasSuffix(r.Scenario, "(KiB)"), strings.HasPrefix(r.Scenario, "start"):
		return float64(r.Ops), fmt.Sprintf("%d", r.Ops)
	case strings.HasPrefix(r.Scenario, "lost events"):
		return float64(r.Lost), fmt.Sprintf("%d creates at %.0f/s: lost %d, out of order or repeated %d", r.Ops, r.PerSecond(), r.Lost, r.Errors)
	case strings.HasPrefix(r.Scenario, latencyPrefix):
		p50, p99 := quantile(r.OpLatencies, 0.5), quantile(r.OpLatencies, 0.99)
		errs := ""
		if r.Errors > 0 {
			errs = fmt.Sprintf(", %d errors", r.Errors)
		}
		return float64(p50), fmt.Sprintf("p50 %v, p99 %v%s", p50.Round(time.Microsecond*10), p99.Round(time.Microsecond*10), errs)
	case strings.HasPrefix(r.Scenario, "watch"):
		p99 := r.Quantile(0.99)
		lost := fmt.Sprintf("lost %d", r.Lost)
		if r.Ended > 0 {
			lost += fmt.Sprintf(" (%d watches ended by the server)", r.Ended)
		}
		return float64(p99), fmt.Sprintf("p50 %v, p99 %v (from the send: p50 %v, p99 %v), %s, errors %d, writes sent at %.0f/s", r.Quantile(0.5).Round(time.Microsecond*10), p99.Round(time.Microsecond*10),
			quantile(r.FromSend, 0.5).Round(time.Microsecond*10), quantile(r.FromSend, 0.99).Round(time.Microsecond*10), lost, r.Errors, r.WriteRate)
	}
	cpu := ""
	if r.CPU > 0 && r.Ops > 0 {
		cpu = fmt.Sprintf(" (%.3f ms CPU each)", float64(r.CPU.Microseconds())/1000/float64(r.Ops))
	}
	if len(r.OpLatencies) > 0 {
		p99 := r.OpLatencies[min(len(r.OpLatencies)-1, len(r.OpLatencies)*99/100)]
		cpu += fmt.Sprintf(", p99 %v", p99.Round(10*time.Microsecond))
	}
	errs := ""
	if r.Errors > 0 {
		errs = fmt.Sprintf(", %d errors", r.Errors)
	}
	return r.PerSecond(), fmt.Sprintf("%.0f/s%s%s", r.PerSecond(), cpu, errs)
}

// quantile of sorted durations.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}
