// This file holds the limit on the cores that long scans of the cache take
// at once, so that short requests always find a free core.

package watch

import (
	"runtime"
	"time"
)

// Scans limits how many long scans of watch caches (a LIST that walks many
// objects, most of them not selected: a label selector over a large
// collection) run on a core at once. One Scans is shared by every cache of
// a server; a Cacher whose Config has none makes its own.
//
// # Why
//
// Go's scheduler reads the network (which connections have bytes waiting)
// when a core runs out of goroutines to run, and otherwise only from its
// monitor thread, every 10 ms. While CPU-bound scans keep every core busy,
// a GET that arrived waits those 10 ms before its connection is even read,
// however often the scans yield: runtime.Gosched puts a scan straight back
// on the run queue, so no core ever runs out of work. Holding the scans to
// fewer cores than GOMAXPROCS leaves a core that, between short requests,
// is idle and so waits in the network poller: a GET that arrives is read
// at once, whatever the scans do.
//
// # How
//
// A scan runs its first yieldEvery objects freely (a short LIST never
// waits), then takes a slot; once it has held it for scanTurn, it gives it
// to the longest waiting scan and queues again (first come, first served).
// Long turns matter under a flood: scans of tens of thousands of objects
// then run one after another and finish one at a time, so the seats of
// priority and fairness that they hold free one at a time too, and a
// request waiting for a seat gets the next within about one scan; in turns
// of 1,024 objects (tens of microseconds) they all progressed together and
// finished together, and that request waited for the whole round. Short
// requests never wait for a turn: they run on the cores left free, and a
// scan yields its core with runtime.Gosched every scanYield so that a
// short request queued on it is not left there. A scan that hands
// an object to its consumer (a streamed LIST encoding it) gives its slot up
// first: a slot is held only while walking, never while writing to a
// client.
//
// While it holds a turn, a scan's thread asks the kernel for the shortest
// time slices (on Linux, polite): the scan keeps its share of the core, and
// whatever wakes on that core (a short request, its client, the network)
// runs within 0.1 ms instead of after the scan's slice. Under a flood of
// scans, a server's threads had waited up to 5–8 ms for their core so,
// and the slowest of a bystander's GETs about 4 ms of it.
//
// Scans is safe for concurrent use.
type Scans struct {
	slots chan struct{}
}

// NewScans returns a limit of cores long scans may take at once. Zero or
// less means GOMAXPROCS-1 (at least 1), read now.
func NewScans(cores int) *Scans {
	if cores <= 0 {
		cores = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return &Scans{slots: make(chan struct{}, cores)}
}

// Cores is the limit.
func (s *Scans) Cores() int { return cap(s.slots) }

// scan is one walk's use of a Scans. Not safe for concurrent use: one
// goroutine walks.
type scan struct {
	s       *Scans
	visited int       // objects since the last check
	held    bool      // the walk holds a slot
	since   time.Time // when it took it
	yielded time.Time // when it last yielded its core (runtime.Gosched)
	thread  politeThread
}

// scanYield is how often a scan holding a slot yields its core to the
// goroutines queued on it. Each runtime.Gosched also wakes an idle core to
// look for work (which spins and costs CPU), so not every yieldEvery
// objects.
const scanYield = 200 * time.Microsecond

// scanTurn is how long a scan keeps its slot while others wait for one:
// longer than a scan of tens of thousands of objects (a few milliseconds),
// so that such scans finish in one turn. At 4 ms, scans of 50,000 objects
// under a flood took 4.4 ms: most needed a second turn, after every other
// scan's, and finished in bunches with gaps of 12 ms between them.
const scanTurn = 20 * time.Millisecond

// visit is called for every object the walk reads. Every yieldEvery
// objects it takes a slot if it has none, and ends its turn if it has held
// one for scanTurn. Small enough to be inlined: the walk pays an increment
// and a comparison per object.
func (w *scan) visit() {
	if w.visited++; w.visited >= yieldEvery {
		w.turn()
	}
}

// turn is visit's work every yieldEvery objects.
func (w *scan) turn() {
	w.visited = 0
	now := time.Now()
	yield := now.Sub(w.yielded) >= scanYield
	over := w.held && now.Sub(w.since) >= scanTurn
	if w.held && !yield && !over {
		return
	}
	// The thread is unlocked to yield: a goroutine locked to its thread
	// yields by handing its core to another thread and back (~18 µs, a
	// tenth of a scan's time), and one unlocked in ~75 ns.
	w.thread.restore()
	if yield {
		// Let the goroutines queued on this core run first: the scan
		// that took the slot from this one was woken on this core, ahead
		// of a GET woken here a moment before, which Go's scheduler then
		// leaves in the core's queue until the scan's 10 ms slice ends
		// unless an idle core steals it first.
		runtime.Gosched()
		w.yielded = now
	}
	if over {
		<-w.s.slots // the longest waiting scan, if any, takes it
		w.held = false
	}
	if !w.held {
		w.s.slots <- struct{}{}
		w.held, w.since = true, time.Now()
	}
	w.thread = polite()
}

// pause gives the walk's slot up, if it holds one: before it hands an
// object to a consumer that may block, and when it ends.
func (w *scan) pause() {
	if w.held {
		w.thread.restore()
		<-w.s.slots
		w.held = false
	}
}
