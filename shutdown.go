// This file holds the generic server's shutdown and connection flags of
// kube-apiserver: --shutdown-send-retry-after (requests arriving while the
// server drains get 429 with Retry-After and Connection: close),
// --shutdown-watch-termination-grace-period (how long watches get to end),
// and --goaway-chance (HTTP/2 connections closed at random so clients spread
// over replicas).

package annex

import (
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// drain counts the requests in flight and, once draining, answers new
// ones with 429 (kube's WithRetryAfter during shutdown).
type drain struct {
	retryAfter  bool
	goaway      float64
	draining    atomic.Bool
	inflight    atomic.Int64 // not long-running
	longRunning atomic.Int64
}

func (d *drain) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		long := filters.IsLongRunning(r, filters.DefaultLongRunning)
		if d.retryAfter && d.draining.Load() && !long {
			w.Header().Set("Retry-After", "5")
			w.Header().Set("Connection", "close")
			filters.WriteStatus(w, meta.NewTooManyRequests("The apiserver is shutting down, please try again later.", 5))
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
			if d.goaway > 0 && r.ProtoMajor == 2 && rand.Float64() < d.goaway {
				w.Header().Set("Connection", "close")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// waitFor polls n until it is zero or d passes.
func waitFor(n *atomic.Int64, d time.Duration) {
	deadline := time.Now().Add(d)
	for n.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
