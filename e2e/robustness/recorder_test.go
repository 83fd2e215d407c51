// This file holds the recorder: one watch of every namespace for the whole
// run, resumed from its last revision after each break, so that the history
// holds every write (the watches' no-gap check keeps it honest).

package robustness

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

type recorder struct {
	c   *Client
	eps []*Endpoint
	rng *rand.Rand

	mu      sync.Mutex
	last    uint64 // revision up to which everything was delivered
	started bool
	gaps    [][2]uint64 // (from, to]: revisions the recorder could not watch
	changed chan struct{}
}

func newRecorder(c *Client, eps []*Endpoint, seed uint64) *recorder {
	return &recorder{c: c, eps: eps, rng: rand.New(rand.NewPCG(seed, 777)), changed: make(chan struct{})}
}

func (r *recorder) lastRV() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *recorder) gapList() [][2]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][2]uint64(nil), r.gaps...)
}

// advance records that everything up to rv was delivered.
func (r *recorder) advance(rv uint64, gapFrom uint64, gap bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gap && rv > gapFrom {
		r.gaps = append(r.gaps, [2]uint64{gapFrom, rv})
	}
	if rv > r.last || !r.started {
		r.last = rv
	}
	r.started = true
	close(r.changed)
	r.changed = make(chan struct{})
}

// wait blocks until cond holds or d passes.
func (r *recorder) wait(ctx context.Context, d time.Duration, cond func() bool) bool {
	timeout := time.After(d)
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// waitStarted waits for the first WatchList's initial-events-end bookmark
// and returns its revision.
func (r *recorder) waitStarted(ctx context.Context, d time.Duration) (uint64, bool) {
	ok := r.wait(ctx, d, func() bool { return r.started })
	return r.lastRV(), ok
}

// waitFor waits until the recorder delivered rv.
func (r *recorder) waitFor(ctx context.Context, rv uint64, d time.Duration) bool {
	return r.wait(ctx, d, func() bool { return r.last >= rv })
}

func (r *recorder) run(ctx context.Context) {
	list := true // start (and restart after a 410) with a WatchList
	for ctx.Err() == nil {
		ep := r.eps[r.rng.IntN(len(r.eps))]
		o := WatchOptions{}
		from := r.lastRV()
		r.mu.Lock()
		started := r.started
		r.mu.Unlock()
		if list {
			o.SendInitial = true
		} else {
			o.RV = strconv.FormatUint(from, 10)
		}
		initial := o.SendInitial
		w := r.c.Watch(ctx, ep, o, func(ev WatchEvent) {
			switch {
			case initial && ev.Type == "BOOKMARK" && ev.InitialEnd:
				initial = false
				r.advance(ev.Obj.RV, from, started)
			case !initial:
				r.advance(ev.Obj.RV, 0, false)
			}
		})
		// After a 410 the revisions between the last delivered one and the
		// next WatchList's bookmark are a gap the run fills with exact lists.
		list = w.Ended == "expired" || (initial && w.SendInitial)
		if w.Ended != "stopped" {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}
