// This file holds the generic server's shutdown filter, kube-apiserver's
// --shutdown-send-retry-after (requests arriving while the server drains
// get 429 with Retry-After and Connection: close), the count of requests
// in flight that shutdown waits for, and --goaway-chance (HTTP/2
// connections told to go away at random so that clients spread over
// replicas); and the stack growth every request starts with.

package filters

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/annexapi/annex/internal/stack"
	"github.com/annexapi/annex/meta"
)

// ShutdownDrainConfig configures a ShutdownDrain. The zero value counts
// requests and rejects nothing.
type ShutdownDrainConfig struct {
	// SendRetryAfter answers requests that arrive once StartDraining was
	// called 429 with Retry-After: 5 and Connection: close
	// (--shutdown-send-retry-after); long-running ones (watches) pass.
	SendRetryAfter bool
	// GoAwayChance is the probability (0 to 0.02) that an HTTP/2
	// request's connection is told to go away after its response
	// (--goaway-chance). Zero means never.
	GoAwayChance float64
}

// ShutdownDrain counts the requests in flight, long-running ones apart, so
// that a server's shutdown can wait for them, and refuses new ones while
// draining. Its methods are safe for concurrent use.
type ShutdownDrain struct {
	cfg         ShutdownDrainConfig
	draining    atomic.Bool
	inflight    atomic.Int64 // not long-running
	longRunning atomic.Int64
}

// NewShutdownDrain returns a drain configured by cfg.
func NewShutdownDrain(cfg ShutdownDrainConfig) *ShutdownDrain {
	return &ShutdownDrain{cfg: cfg}
}

// Filter counts each request while it runs and, once draining with
// SendRetryAfter, answers the non-long-running ones 429.
func (d *ShutdownDrain) Filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		long := IsLongRunning(r, DefaultLongRunning)
		if d.cfg.SendRetryAfter && d.draining.Load() && !long {
			w.Header().Set("Retry-After", "5")
			w.Header().Set("Connection", "close")
			WriteStatus(w, meta.NewTooManyRequests("The apiserver is shutting down, please try again later.", 5))
			return
		}
		if long {
			d.longRunning.Add(1)
			defer d.longRunning.Add(-1)
		} else {
			d.inflight.Add(1)
			defer d.inflight.Add(-1)
			// kube's probabilistic GOAWAY: an HTTP/2 connection is told to
			// go away after this response, so that clients behind one
			// load balancer spread over replicas.
			if d.cfg.GoAwayChance > 0 && r.ProtoMajor == 2 && rand.Float64() < d.cfg.GoAwayChance {
				w.Header().Set("Connection", "close")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// StartDraining makes Filter refuse new requests (with SendRetryAfter).
func (d *ShutdownDrain) StartDraining() { d.draining.Store(true) }

// WaitInFlight waits until no request but the long-running ones is in
// flight, or ctx ends.
func (d *ShutdownDrain) WaitInFlight(ctx context.Context) { waitZero(ctx, &d.inflight) }

// WaitLongRunning waits until no long-running request (watch) is in
// flight, or ctx ends.
func (d *ShutdownDrain) WaitLongRunning(ctx context.Context) { waitZero(ctx, &d.longRunning) }

// waitZero polls n until it is zero or ctx ends.
func waitZero(ctx context.Context, n *atomic.Int64) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for n.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// WithStackGrowth runs each request with its goroutine's stack grown first
// (net/http serves each request on a fresh goroutine whose stack would
// otherwise double and copy itself as the chain goes deeper); writes,
// which go deeper, get the larger stack.
func WithStackGrowth() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch:
				stack.GrowLarge()
			default:
				stack.Grow()
			}
			next.ServeHTTP(w, r)
		})
	}
}
