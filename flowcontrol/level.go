// This file is one priority level at run time: its seats, its queues, and
// kube's fair queuing for server requests (fairqueuing/queueset) — virtual
// time R advancing at min(seats asked, limit) / active queues, dispatch from
// the queue whose oldest request has the smallest virtual finish time,
// shuffle-sharded enqueueing to the queue with the least waiting work.

package flowcontrol

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/annexapi/annex/filters"
)

// serviceGuess is G: the execution time every request is charged when it is
// dispatched, corrected by the real one when it finishes. kube's queueset
// uses 3 ms (estimatedServiceDuration; the design's first G was a minute):
// with a minute, each completion pulled a busy flow's queues back to the
// arrival of their oldest request, so a newly active flow waited behind the
// backlog of every busy one, first come first served.
const serviceGuess = 0.003 // seconds

// Rejection reasons, as the reason label of rejected_requests_total.
const (
	reasonQueueFull        = "queue-full"
	reasonConcurrencyLimit = "concurrency-limit"
	reasonTimeout          = "time-out"
)

// levelSpec is what a level's configuration implies.
type levelSpec struct {
	uid              string
	exempt           bool
	queues           int // 0: Reject (or exempt)
	handSize         int
	queueLengthLimit int
	shares           int32
	lendablePercent  int32
	borrowPercent    *int32
	nominalCL        int
	minCL, maxCL     int
	maxSeats         int
}

type level struct {
	name string
	now  func() time.Time
	m    *metrics

	// mu guards everything below.
	mu        sync.Mutex
	spec      levelSpec
	currentCL int
	quiescing bool
	queues    []*queue
	robin     int
	enqueues  int
	r         float64 // virtual time, seat-seconds
	lastSync  time.Time

	seatsInUse       int // all executing requests
	queuedSeatsInUse int // executing requests that came through a queue
	seatsWaiting     int
	executing        int
	waiting          int
	activeQueues     int
	running          map[*request]struct{}

	dispatched, rejected, timedout, cancelled int

	// Seat demand (seats in use + waiting) integrated since the last
	// borrowing adjustment.
	demandAt                       time.Time
	demandDur, demandSum, demandSq float64
	demandMax                      int
	smoothed                       float64
}

type queue struct {
	index         int
	waiting       []*request
	waitingSeats  int
	waitingWork   float64
	executing     int
	seatsInUse    int
	nextDispatchR float64
	// running is what the queue's executing requests have run beyond the
	// G each was charged at dispatch, in seat-seconds, as of the current
	// dispatchLocked (runningLocked).
	running float64
}

func (q *queue) active() bool { return len(q.waiting) > 0 || q.executing > 0 }

type request struct {
	lvl        *level
	q          *queue
	fs         string
	flow       string
	seats      int // the most the request occupies: max(initial, final)
	initial    int
	final      int
	additional time.Duration
	work       float64 // seat-seconds charged at dispatch
	arrivalR   float64
	arrived    time.Time
	started    time.Time
	state      int
	ready      chan struct{}
	info       *filters.RequestInfo
	user       string
}

const (
	stateWaiting = iota
	stateExecuting
	stateRejected
)

func newLevel(name string, now func() time.Time, m *metrics) *level {
	t := now()
	return &level{name: name, now: now, m: m, lastSync: t, demandAt: t, running: map[*request]struct{}{}}
}

// syncLocked advances virtual time to now and integrates seat demand.
func (l *level) syncLocked() {
	t := l.now()
	dt := t.Sub(l.lastSync).Seconds()
	l.lastSync = t
	if dt > 0 && l.activeQueues > 0 {
		asked := float64(l.queuedSeatsInUse + l.seatsWaiting)
		l.r += dt * math.Min(asked, float64(l.currentCL)) / float64(l.activeQueues)
	}
	if d := t.Sub(l.demandAt).Seconds(); d > 0 {
		x := float64(l.seatsInUse + l.seatsWaiting)
		l.demandSum += x * d
		l.demandSq += x * x * d
		l.demandDur += d
		l.demandAt = t
	}
}

func (l *level) noteDemandLocked() {
	if d := l.seatsInUse + l.seatsWaiting; d > l.demandMax {
		l.demandMax = d
	}
}

// reconfigureLocked applies a new spec, keeping queued requests: extra queues
// beyond a smaller count stay until they drain.
func (l *level) reconfigureLocked(s levelSpec, initialCL int, fresh bool) {
	l.spec = s
	if fresh {
		l.currentCL = initialCL
	} else {
		l.currentCL = min(max(l.currentCL, s.minCL), s.maxCL)
	}
	for len(l.queues) < s.queues {
		l.queues = append(l.queues, &queue{index: len(l.queues)})
	}
	for len(l.queues) > s.queues && !l.queues[len(l.queues)-1].active() {
		l.queues = l.queues[:len(l.queues)-1]
	}
	if l.robin >= len(l.queues) {
		l.robin = 0
	}
	l.m.setLimits(l.name, s.nominalCL, l.currentCL)
	l.dispatchLocked()
}

func (l *level) canAccommodateLocked(seats int) bool {
	if seats > l.currentCL {
		return l.executing == 0
	}
	return l.seatsInUse+seats <= l.currentCL
}

// start admits req: it runs at once, waits in a queue, or is rejected. It
// returns the reason of a rejection, "" otherwise.
func (l *level) start(req *request, hash uint64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncLocked()
	req.arrived = l.lastSync
	if l.spec.queues == 0 {
		if !l.canAccommodateLocked(req.seats) {
			l.rejected++
			return reasonConcurrencyLimit
		}
		l.executeLocked(req)
		l.noteDemandLocked()
		return ""
	}
	q := l.chooseQueueLocked(hash)
	if l.seatsInUse >= l.currentCL && len(q.waiting) >= l.spec.queueLengthLimit {
		l.rejected++
		return reasonQueueFull
	}
	if !q.active() {
		q.nextDispatchR = l.newQueueStartLocked()
		l.activeQueues++
	}
	req.q, req.arrivalR = q, l.r
	if l.waiting == 0 && l.canAccommodateLocked(req.seats) {
		// Nothing waits anywhere: the scan of dispatchLocked would pick
		// this request, so start it directly.
		q.nextDispatchR += req.work
		q.executing++
		q.seatsInUse += req.seats
		l.queuedSeatsInUse += req.seats
		l.executeLocked(req)
		l.noteDemandLocked()
		return ""
	}
	req.ready = make(chan struct{})
	q.waiting = append(q.waiting, req)
	q.waitingSeats += req.seats
	q.waitingWork += req.work
	l.waiting++
	l.seatsWaiting += req.seats
	l.m.addWaiting(l.name, req.fs, 1)
	l.dispatchLocked()
	l.noteDemandLocked()
	return ""
}

// chooseQueueLocked deals the flow a hand and picks the queue of the hand
// with the least waiting work, starting at a rotating offset so ties spread.
func (l *level) chooseQueueLocked(hash uint64) *queue {
	var buf [15]int
	hand := Deal(hash, l.spec.queues, l.spec.handSize, buf[:0])
	offset := l.enqueues % len(hand)
	l.enqueues++
	var best *queue
	for i := range hand {
		q := l.queues[hand[(offset+i)%len(hand)]]
		if best == nil || q.waitingWork < best.waitingWork {
			best = q
		}
	}
	return best
}

// dispatchLocked starts as many waiting requests as the seats allow, each
// time from the queue whose oldest request finishes first in virtual time.
//
// A queue's virtual start counts the time its executing requests have run
// so far, not only the G each was charged at dispatch (kube's queueset
// corrects a request's charge only when it finishes). Requests that run
// many times G (LISTs sharing the cores with the others that run) would
// otherwise make their queues look less served than they are until they
// finish, and a newly active flow, starting at the current virtual time,
// would wait for several of them to finish before it gets a seat.
func (l *level) dispatchLocked() {
	if l.waiting > 0 && (l.seatsInUse < l.currentCL || l.executing == 0) {
		l.runningLocked()
	}
	for l.waiting > 0 && (l.seatsInUse < l.currentCL || l.executing == 0) {
		var best *queue
		bestFinish := math.Inf(1)
		n := len(l.queues)
		idx := l.robin
		for range n {
			idx = (idx + 1) % n
			q := l.queues[idx]
			if len(q.waiting) == 0 {
				continue
			}
			if f := q.nextDispatchR + q.running + q.waiting[0].work; f < bestFinish {
				best, bestFinish = q, f
				l.robin = idx
			}
		}
		if best == nil {
			return
		}
		req := best.waiting[0]
		if !l.canAccommodateLocked(req.seats) {
			return
		}
		best.waiting[0] = nil
		best.waiting = best.waiting[1:]
		best.waitingSeats -= req.seats
		best.waitingWork -= req.work
		l.waiting--
		l.seatsWaiting -= req.seats
		l.m.addWaiting(l.name, req.fs, -1)
		best.nextDispatchR += req.work
		best.executing++
		best.seatsInUse += req.seats
		l.queuedSeatsInUse += req.seats
		l.boundLocked(best)
		l.executeLocked(req)
	}
}

// newQueueStartLocked is the virtual start of a queue that becomes active:
// the current virtual time R, as in kube's queueset, or, when that is
// later, one G before the earliest start of the queues that wait (counting
// what their running requests have run so far). A newly active flow's
// first request is so served at the next free seat. With kube's R it waited
// for every waiting queue whose start lagged R: a flood's queues (one
// flow's requests are spread over its hand of queues by shuffle sharding)
// spread around R by about a request each, and the newcomer waited for
// several of the flood's requests to finish, each holding a seat for many
// times G. The head start is bounded: after its first request the new
// queue is level with the earliest waiting queue, and it is served in turn
// from then on.
func (l *level) newQueueStartLocked() float64 {
	start := l.r
	if l.waiting == 0 {
		return start
	}
	l.runningLocked()
	for _, q := range l.queues {
		if len(q.waiting) > 0 {
			start = min(start, q.nextDispatchR+q.running-serviceGuess)
		}
	}
	return start
}

// runningLocked sets each queue's running: the seat-seconds its executing
// requests have run beyond their G, at the last sync.
func (l *level) runningLocked() {
	for _, q := range l.queues {
		q.running = 0
	}
	for r := range l.running {
		if r.q == nil {
			continue
		}
		if over := l.lastSync.Sub(r.started).Seconds() - serviceGuess; over > 0 {
			r.q.running += float64(r.initial) * over
		}
	}
}

// boundLocked keeps a queue's virtual start from falling behind the arrival
// of its oldest waiting request (kube's anti-windup).
func (l *level) boundLocked(q *queue) {
	if len(q.waiting) > 0 && q.nextDispatchR < q.waiting[0].arrivalR {
		q.nextDispatchR = q.waiting[0].arrivalR
	}
}

func (l *level) executeLocked(req *request) {
	req.state = stateExecuting
	req.started = l.lastSync
	l.executing++
	l.seatsInUse += req.seats
	l.dispatched++
	l.running[req] = struct{}{}
	l.m.addExecuting(l.name, req.fs, 1, req.seats)
	l.m.dispatch(l.name, req.fs)
	if req.ready != nil {
		close(req.ready)
	}
}

// isDispatched reports whether req left its queue to run (start may have
// dispatched it at once).
func (l *level) isDispatched(req *request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return req.state == stateExecuting
}

// wait blocks until req is dispatched (true) or ctx is done while it waits
// (false: it is taken out of its queue and never runs).
func (l *level) wait(ctx context.Context, req *request) bool {
	select {
	case <-req.ready:
		return true
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.state != stateWaiting {
		return true // dispatched as the deadline passed
	}
	l.syncLocked()
	q := req.q
	for i, w := range q.waiting {
		if w == req {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			break
		}
	}
	q.waitingSeats -= req.seats
	q.waitingWork -= req.work
	l.waiting--
	l.seatsWaiting -= req.seats
	if !q.active() {
		l.activeQueues--
	}
	l.boundLocked(q)
	req.state = stateRejected
	l.rejected++
	l.timedout++
	l.m.addWaiting(l.name, req.fs, -1)
	return false
}

// finish ends an executing request: its seats are released (after its
// additional latency, if any), its queue's virtual start corrected by the
// difference between G and the real execution time, and waiting requests
// dispatched.
func (l *level) finish(req *request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncLocked()
	l.executing--
	delete(l.running, req)
	l.m.addExecuting(l.name, req.fs, -1, 0)
	if q := req.q; q != nil {
		actual := l.lastSync.Sub(req.started).Seconds()
		q.nextDispatchR -= float64(req.initial) * (serviceGuess - actual)
		l.boundLocked(q)
	}
	if req.additional > 0 {
		time.AfterFunc(req.additional, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.syncLocked()
			l.releaseLocked(req)
		})
		return
	}
	l.releaseLocked(req)
}

func (l *level) releaseLocked(req *request) {
	l.seatsInUse -= req.seats
	l.m.addExecuting(l.name, req.fs, 0, -req.seats)
	if q := req.q; q != nil {
		q.executing--
		q.seatsInUse -= req.seats
		l.queuedSeatsInUse -= req.seats
		if !q.active() {
			l.activeQueues--
		}
	}
	l.dispatchLocked()
}

// idleLocked reports whether nothing waits or runs.
func (l *level) idleLocked() bool { return l.waiting == 0 && l.seatsInUse == 0 && l.executing == 0 }

// demandStats returns and resets the seat demand integrated since the last
// call: its high watermark, and the smoothed envelope (average + standard
// deviation, decaying with kube's coefficient 0.977 per period).
func (l *level) demandStats() (highWatermark int, smoothed float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncLocked()
	high := l.demandMax
	if l.demandDur > 0 {
		avg := l.demandSum / l.demandDur
		dev := math.Sqrt(math.Max(0, l.demandSq/l.demandDur-avg*avg))
		env := avg + dev
		l.smoothed = math.Max(env, 0.977*l.smoothed+(1-0.977)*env)
	}
	cur := l.seatsInUse + l.seatsWaiting
	l.demandMax, l.demandSum, l.demandSq, l.demandDur = cur, 0, 0, 0
	return high, l.smoothed
}

func (l *level) setCurrentCL(cl int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncLocked()
	l.currentCL = cl
	l.m.setLimits(l.name, l.spec.nominalCL, cl)
	l.dispatchLocked()
}
