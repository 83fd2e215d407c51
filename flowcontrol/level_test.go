package flowcontrol

import (
	"slices"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// TestNewFlowIsNotQueuedBehindABacklog: a flow that keeps 60 requests in
// flight in a level of 3 seats, each running 5 ms, and another flow that
// sends one request. Fair queuing serves the newcomer within one round of
// the seats, whatever the backlog: its queue's virtual start is now (or
// just before the flood's earliest queue), and the flood's queues, charged
// for what they ran, are not far behind it. First come first served would
// make it wait for the flood's 57 waiting requests.
func TestNewFlowIsNotQueuedBehindABacklog(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := newLevel("global-default", clock.now, nil)
	l.mu.Lock()
	l.reconfigureLocked(levelSpec{queues: 128, handSize: 6, queueLengthLimit: 50, nominalCL: 3, minCL: 3, maxCL: 3}, 3, true)
	l.mu.Unlock()
	one := estimate{initial: 1}
	newRequest := func(flow string) *request {
		return &request{lvl: l, fs: "global-default", flow: flow, seats: 1, initial: 1, work: one.work()}
	}
	flooder, bystander := FlowHash("global-default", "flooder"), FlowHash("global-default", "bystander")

	var running []*request
	// The oldest running request finishes first: every one runs 5 ms.
	startAll := func() {
		running = running[:0]
		for r := range l.running {
			running = append(running, r)
		}
		slices.SortFunc(running, func(a, b *request) int { return a.started.Compare(b.started) })
	}
	// The flood: 60 requests in flight, 3 run, 57 wait in its hand's queues.
	for range 60 {
		if reason := l.start(newRequest("flooder"), flooder); reason != "" {
			t.Fatalf("flood request rejected: %s", reason)
		}
	}
	// Let the flood run for a while: each request takes 5 ms, and a new
	// one replaces each that finishes, as a client keeping 60 in flight.
	for range 200 {
		startAll()
		clock.advance(5 * time.Millisecond / 3)
		l.finish(running[0])
		if reason := l.start(newRequest("flooder"), flooder); reason != "" {
			t.Fatalf("flood request rejected: %s", reason)
		}
	}
	b := newRequest("bystander")
	if reason := l.start(b, bystander); reason != "" {
		t.Fatalf("the bystander's request was rejected: %s", reason)
	}
	// Count the flood's dispatches before the bystander's.
	before := 0
	for !l.isDispatched(b) {
		startAll()
		clock.advance(5 * time.Millisecond / 3)
		var done *request
		for _, r := range running {
			if r != b {
				done = r
				break
			}
		}
		l.finish(done)
		before++
		if before > 60 {
			t.Fatalf("the bystander still waits after %d of the flood's requests were served", before)
		}
	}
	if before > 3 {
		t.Errorf("the bystander waited for %d of the flood's requests to finish, want at most one round of the 3 seats", before)
	}
}

// TestNewFlowTakesTheNextSeat: a flow keeps 100 requests in flight in a
// level of a few seats, each running several times G (the server's cores
// are shared by every request that runs, so a request's time grows with
// the seats); another flow sends a request now and then, at every phase of
// the flood's completions. The newcomer gets the next seat that frees (its
// queue starts one G before the flood's earliest, counting what their
// running requests have run so far). With kube's start (the current virtual
// time) it waited for 3 to 22 of the flood's requests to finish.
func TestNewFlowTakesTheNextSeat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seats int
		run   time.Duration // each flood request's execution time
	}{
		{"3_seats_5ms", 3, 5 * time.Millisecond},
		{"4_seats_13ms", 4, 13 * time.Millisecond},
		{"4_seats_40ms", 4, 40 * time.Millisecond},
		{"9_seats_30ms", 9, 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			l := newLevel("global-default", clock.now, nil)
			l.mu.Lock()
			l.reconfigureLocked(levelSpec{queues: 128, handSize: 6, queueLengthLimit: 50, nominalCL: tc.seats, minCL: tc.seats, maxCL: tc.seats}, tc.seats, true)
			l.mu.Unlock()
			one := estimate{initial: 1}
			newRequest := func() *request {
				return &request{lvl: l, fs: "global-default", seats: 1, initial: 1, work: one.work()}
			}
			flooder, bystander := FlowHash("global-default", "flooder"), FlowHash("global-default", "bystander")
			var running []*request
			oldest := func(except *request) *request {
				running = running[:0]
				for r := range l.running {
					if r != except {
						running = append(running, r)
					}
				}
				slices.SortFunc(running, func(a, b *request) int { return a.started.Compare(b.started) })
				return running[0]
			}
			// One flood request finishes every run/seats (the oldest) and
			// the flooder sends another at once.
			step := func(except *request) {
				clock.advance(tc.run / time.Duration(tc.seats))
				l.finish(oldest(except))
				if reason := l.start(newRequest(), flooder); reason != "" {
					t.Fatalf("flood request rejected: %s", reason)
				}
			}
			for range 100 {
				if reason := l.start(newRequest(), flooder); reason != "" {
					t.Fatalf("flood request rejected: %s", reason)
				}
			}
			for range 500 {
				step(nil)
			}
			worst := 0
			for i := range 60 {
				// The bystander arrives at another phase each time.
				clock.advance(time.Duration(i%7) * tc.run / time.Duration(7*tc.seats))
				b := newRequest()
				if reason := l.start(b, bystander); reason != "" {
					t.Fatalf("the bystander's request was rejected: %s", reason)
				}
				before := 0
				for !l.isDispatched(b) {
					step(b)
					if before++; before > 100 {
						t.Fatalf("the bystander still waits after %d of the flood's requests finished", before)
					}
				}
				worst = max(worst, before)
				clock.advance(time.Millisecond)
				l.finish(b)
				for range 1 + i%5 {
					step(nil)
				}
			}
			if worst > 1 {
				t.Errorf("the bystander waited for up to %d of the flood's requests to finish, want the next one", worst)
			}
		})
	}
}
