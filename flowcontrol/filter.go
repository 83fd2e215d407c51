// This file is the filter: classify the request, estimate its seats, wait
// for them in its level's queues (or be rejected with 429 and Retry-After),
// run it, and release the seats — a watch's as soon as it has sent its
// initial events.

package flowcontrol

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// The canonical forms of the header names, set directly to skip
// canonicalizing them on every request.
var (
	canonicalFSHeader = http.CanonicalHeaderKey(HeaderFlowSchemaUID)
	canonicalPLHeader = http.CanonicalHeaderKey(HeaderPriorityLevelUID)
)

// TooManyRequestsMessage is the message of a rejection, as kube's.
const TooManyRequestsMessage = "Too many requests, please try again later."

// Filter returns the filter as a func(http.Handler) http.Handler. It reads
// the RequestInfo (resolved with the default resolver when absent) and the
// user (filters.UserFrom) from the context, so it runs after authentication
// and impersonation and before authorization, as in kube. Long-running
// requests other than watches pass untouched.
func (c *Controller) Filter(next http.Handler) http.Handler {
	if c.cfg.Disabled {
		return c.inflight.filter(next, c.longRunning)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := filters.RequestInfoFrom(r.Context())
		if !ok {
			info, _ = filters.RequestInfoResolver{}.Resolve(r)
		}
		isWatch := info.Verb == "watch"
		if !isWatch && c.longRunning(r, info) {
			next.ServeHTTP(w, r)
			return
		}
		u, ok := filters.UserFrom(r.Context())
		if !ok {
			filters.WriteStatus(w, meta.NewInternalError(ErrNoUser))
			return
		}
		sc := c.state.Load().classify(u, info)
		lvl := sc.lvl
		h := w.Header()
		h[canonicalFSHeader] = sc.fsUIDValue
		h[canonicalPLHeader] = sc.plUIDValue

		plName, fsName := lvl.name, sc.fs.Metadata.Name
		if sc.spec.exempt {
			c.serveExempt(w, r, next, lvl, fsName)
			return
		}
		var hash uint64
		var flow string
		if sc.spec.queues > 1 {
			flow = distinguisher(sc.fs, u, info)
			hash = FlowHash(fsName, flow)
		}
		e := c.estimate(r, info, sc.spec.maxSeats)
		req := &request{lvl: lvl, fs: fsName, flow: flow, seats: e.seats(), initial: e.initial, final: e.final,
			additional: e.additional, work: e.work(), info: info, user: u.Name}
		if reason := lvl.start(req, hash); reason != "" {
			c.reject(w, plName, fsName, reason)
			return
		}
		if req.q != nil && !lvl.isDispatched(req) {
			arrived := req.arrived
			waitCtx, cancel := c.waitContext(r.Context(), arrived)
			ok := lvl.wait(waitCtx, req)
			cancel()
			waited := c.now().Sub(arrived)
			c.m.observeWait(plName, fsName, ok, waited)
			filters.AddSLIExcluded(r.Context(), waited)
			if !ok {
				c.reject(w, plName, fsName, reasonTimeout)
				return
			}
		}
		if !isWatch {
			// No closure here: a GET or a write pays no allocation for
			// the release that only a watch needs once.
			defer lvl.finish(req)
			next.ServeHTTP(w, r)
			return
		}
		var once bool
		release := func() {
			if !once {
				once = true
				lvl.finish(req)
			}
		}
		forget := c.watches.register(info)
		defer forget()
		done := make(chan struct{})
		ctx := filters.ContextWithWatchInitialized(r.Context(), func() { close(done) })
		stop := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-stop:
			}
			release()
		}()
		defer close(stop)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// serveExempt runs a request of the exempt level: never queued nor
// rejected, but counted.
func (c *Controller) serveExempt(w http.ResponseWriter, r *http.Request, next http.Handler, lvl *level, fs string) {
	lvl.mu.Lock()
	lvl.executing++
	lvl.dispatched++
	lvl.seatsInUse++
	lvl.noteDemandLocked()
	lvl.mu.Unlock()
	c.m.dispatch(lvl.name, fs)
	c.m.addExecuting(lvl.name, fs, 1, 1)
	defer func() {
		lvl.mu.Lock()
		lvl.syncLocked()
		lvl.executing--
		lvl.seatsInUse--
		lvl.mu.Unlock()
		c.m.addExecuting(lvl.name, fs, -1, -1)
	}()
	next.ServeHTTP(w, r)
}

// waitContext bounds the queue wait: a quarter of the time from arrival to
// the request's deadline, RequestWaitLimit without one, never over a minute.
func (c *Controller) waitContext(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	arrived, ok := filters.ReceivedTimestampFrom(ctx)
	if !ok {
		arrived = now
	}
	limit := c.cfg.RequestWaitLimit
	if limit <= 0 {
		limit = filters.DefaultRequestTimeout / 4
	}
	if d, ok := ctx.Deadline(); ok {
		limit = d.Sub(arrived) / 4
	}
	limit = min(limit, time.Minute)
	return context.WithDeadline(ctx, arrived.Add(limit))
}

func (c *Controller) reject(w http.ResponseWriter, pl, fs, reason string) {
	c.m.reject(pl, fs, reason)
	retry := c.drops.record(pl)
	writeTooManyRequests(w, retry)
}

func writeTooManyRequests(w http.ResponseWriter, retryAfter int64) {
	w.Header().Set("Retry-After", strconv.FormatInt(retryAfter, 10))
	filters.WriteStatus(w, &meta.Status{
		Kind: "Status", APIVersion: "v1",
		Status:  meta.StatusFailure,
		Code:    http.StatusTooManyRequests,
		Reason:  meta.StatusReasonTooManyRequests,
		Message: TooManyRequestsMessage,
		Details: &meta.StatusDetails{RetryAfterSeconds: int32(retryAfter)},
	})
}
