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
// the seats, whatever the backlog: its queue's virtual start is now, and the
// flood's queues, charged G at dispatch and corrected by the real execution
// time, are not far behind it. First come first served would make it wait
// for the flood's 57 waiting requests.
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
