// This file holds the tracewait command: where a bystander's requests
// waited, from an execution trace of the server.

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// tracewaitCmd runs `annexload tracewait FILE`: it reads an execution trace
// of the server (flood --profile DIR --trace writes one per row), finds the
// HTTP/2 connection with the fewest requests above --min (the bystander's:
// A's connection carries tens of thousands, the admin's a few), and prints,
// for its slowest handler goroutines, each stretch of their life: running,
// runnable (waiting for a P), blocked (and where), and, for a long runnable
// stretch, what each P ran meanwhile. A goroutine Go counts as running
// while its thread is off its core shows as a long running stretch there.
func tracewaitCmd(args []string) error {
	fs := flag.NewFlagSet("tracewait", flag.ContinueOnError)
	minHandlers := fs.Int("min", 100, "the fewest requests the bystander's connection carried")
	slowest := fs.Int("slowest", 10, "how many of its slowest handlers to show")
	longWait := fs.Duration("long", 500*time.Microsecond, "a runnable stretch at least this long lists what the Ps ran meanwhile")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: annexload tracewait [--min N] [--slowest N] [--long D] FILE")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	tr, err := readTrace(f)
	if err != nil {
		return err
	}
	tr.report(os.Stdout, *minHandlers, *slowest, *longWait)
	return nil
}

// stretch is a span of a goroutine's life in one state.
type stretch struct {
	state    trace.GoState
	from, to trace.Time
	proc     trace.ProcID // for a running stretch
	note     string       // where it blocked, or who woke it
}

// goroutine is what the trace says of one goroutine.
type goroutine struct {
	creator   trace.GoID
	start     string // its function
	created   trace.Time
	ended     trace.Time
	state     trace.GoState
	since     trace.Time
	proc      trace.ProcID
	note      string
	stretches []stretch
}

// traced is a read trace: its goroutines, and the wall clock of its start.
type traced struct {
	gs        map[trace.GoID]*goroutine
	clockAt   trace.Time
	clockWall time.Time
}

// readTrace reads every goroutine's state transitions.
func readTrace(r io.Reader) (*traced, error) {
	rd, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	t := &traced{gs: map[trace.GoID]*goroutine{}}
	for {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind() {
		case trace.EventSync:
			if cs := ev.Sync().ClockSnapshot; cs != nil && t.clockWall.IsZero() {
				t.clockAt, t.clockWall = cs.Trace, cs.Wall
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			id := st.Resource.Goroutine()
			from, to := st.Goroutine()
			g := t.gs[id]
			if g == nil {
				g = &goroutine{state: from, since: ev.Time()}
				t.gs[id] = g
				if from == trace.GoNotExist {
					g.creator, g.start, g.created = ev.Goroutine(), frames(st.Stack, 1), ev.Time()
				}
			}
			if g.state != trace.GoNotExist && g.state != trace.GoUndetermined {
				g.stretches = append(g.stretches, stretch{state: g.state, from: g.since, to: ev.Time(), proc: g.proc, note: g.note})
			}
			g.state, g.since, g.note = to, ev.Time(), ""
			switch to {
			case trace.GoRunning:
				g.proc = ev.Proc()
			case trace.GoWaiting, trace.GoSyscall:
				g.note = st.Reason + " at " + frames(ev.Stack(), 3)
			case trace.GoRunnable:
				if from == trace.GoWaiting {
					g.note = fmt.Sprintf("woken by g%d", ev.Goroutine())
				}
			case trace.GoNotExist:
				g.ended = ev.Time()
			}
		}
	}
}

// frames names the first n functions of a stack.
func frames(s trace.Stack, n int) string {
	var out []string
	for f := range s.Frames() {
		if out = append(out, f.Func); len(out) == n {
			break
		}
	}
	return strings.Join(out, " < ")
}

// report prints the bystander's slowest handlers.
func (t *traced) report(w io.Writer, minHandlers, slowest int, longWait time.Duration) {
	byConn := map[trace.GoID][]*goroutine{}
	for _, g := range t.gs {
		if strings.HasSuffix(g.start, "runHandler") && g.ended != 0 {
			byConn[g.creator] = append(byConn[g.creator], g)
		}
	}
	var b []*goroutine
	for conn, hs := range byConn {
		fmt.Fprintf(w, "connection g%d: %d requests\n", conn, len(hs))
		if len(hs) >= minHandlers && (b == nil || len(hs) < len(b)) {
			b = hs
		}
	}
	if b == nil {
		fmt.Fprintf(w, "no connection carried %d requests or more\n", minHandlers)
		return
	}
	life := func(g *goroutine) time.Duration { return time.Duration(g.ended - g.created) }
	slices.SortFunc(b, func(x, y *goroutine) int { return int(life(y) - life(x)) })
	for _, g := range b[:min(slowest, len(b))] {
		fmt.Fprintf(w, "\nrequest at %s took %v\n", t.wall(g.created), life(g))
		for _, s := range g.stretches {
			d := time.Duration(s.to - s.from)
			fmt.Fprintf(w, "  %-9v %10v  at +%-10v %s\n", s.state, d, time.Duration(s.from-g.created), s.note)
			if s.state == trace.GoRunnable && d >= longWait {
				t.meanwhile(w, s)
			}
		}
	}
	var sum [4]time.Duration // running, runnable, blocked, life
	for _, g := range b {
		sum[3] += life(g)
		for _, s := range g.stretches {
			switch s.state {
			case trace.GoRunning:
				sum[0] += time.Duration(s.to - s.from)
			case trace.GoRunnable:
				sum[1] += time.Duration(s.to - s.from)
			default:
				sum[2] += time.Duration(s.to - s.from)
			}
		}
	}
	n := time.Duration(len(b))
	fmt.Fprintf(w, "\n%d requests, mean: life %v, running %v, runnable %v, blocked %v\n", len(b), sum[3]/n, sum[0]/n, sum[1]/n, sum[2]/n)
}

// meanwhile prints what ran on each P during s (stretches over 20 µs).
func (t *traced) meanwhile(w io.Writer, s stretch) {
	type run struct {
		g *goroutine
		r stretch
	}
	var runs []run
	for _, g := range t.gs {
		for _, r := range g.stretches {
			if r.state == trace.GoRunning && r.to > s.from && r.from < s.to && r.to-r.from > trace.Time(20*time.Microsecond) {
				runs = append(runs, run{g, r})
			}
		}
	}
	slices.SortFunc(runs, func(x, y run) int { return int(x.r.from - y.r.from) })
	for _, r := range runs {
		fmt.Fprintf(w, "      P%d ran %s (created by g%d) from %+v for %v\n", r.r.proc, r.g.start, r.g.creator,
			time.Duration(r.r.from-s.from), time.Duration(r.r.to-r.r.from))
	}
}

// wall is the wall clock time of a trace time.
func (t *traced) wall(at trace.Time) string {
	if t.clockWall.IsZero() {
		return fmt.Sprint(at)
	}
	return t.clockWall.Add(time.Duration(at - t.clockAt)).Format("15:04:05.000000")
}
