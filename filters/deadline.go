// This file holds the received timestamp and the request deadline: the
// deadline a non-long-running request's context carries, from ?timeout= or
// the server's maximum.

package filters

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/annexapi/annex/meta"
)

// RequestReceivedTimestampConfig configures WithRequestReceivedTimestamp.
type RequestReceivedTimestampConfig struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// WithRequestReceivedTimestamp returns the filter that records when the
// request arrived (read it with ReceivedTimestampFrom). The deadline, audit
// and priority-and-fairness measure from it, so it sits near the outside of
// the chain.
func WithRequestReceivedTimestamp(cfg RequestReceivedTimestampConfig) func(http.Handler) http.Handler {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, RequestWithContext(r, ContextWithReceivedTimestamp(r.Context(), now())))
		})
	}
}

// DefaultRequestTimeout is Kubernetes' --request-timeout: the longest a
// non-long-running request may take.
const DefaultRequestTimeout = 60 * time.Second

// RequestDeadlineConfig configures WithRequestDeadline.
type RequestDeadlineConfig struct {
	// MaxTimeout is the deadline of requests that ask for none, and the
	// largest they may ask for; zero means DefaultRequestTimeout (60s).
	MaxTimeout time.Duration
	// LongRunning tells which requests get no deadline; nil means
	// DefaultLongRunning (watch, /debug/pprof/).
	LongRunning LongRunningFunc
	// Now is the clock used when no received timestamp is in the context;
	// nil means time.Now.
	Now func() time.Time
}

// invalidTimeoutInURL starts the message of a bad ?timeout=, as in Kubernetes.
const invalidTimeoutInURL = "invalid timeout specified in the request URL"

// WithRequestDeadline returns the filter that gives each non-long-running
// request a context deadline of its received timestamp (see
// WithRequestReceivedTimestamp; now when absent) plus its timeout. The
// timeout is ?timeout= (a Go duration, as client-go sends it) when
// 0 < timeout < MaxTimeout, else MaxTimeout. A ?timeout= that does not parse
// is answered with 400 BadRequest, message "invalid timeout specified in the
// request URL - time: invalid duration ...". Long-running requests pass
// untouched. WithRequestTimeout, inside this filter, answers 504 when the
// deadline passes.
func WithRequestDeadline(cfg RequestDeadlineConfig) func(http.Handler) http.Handler {
	maxTimeout := cfg.MaxTimeout
	if maxTimeout <= 0 {
		maxTimeout = DefaultRequestTimeout
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	longRunning := cfg.LongRunning
	if longRunning == nil {
		longRunning = DefaultLongRunning
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if longRunning(r, requestInfo(r)) {
				next.ServeHTTP(w, r)
				return
			}
			timeout := maxTimeout
			if v := QueryValue(r, "timeout"); v != "" {
				d, err := time.ParseDuration(v)
				if err != nil {
					WriteStatus(w, meta.NewBadRequest(fmt.Sprintf("%s - %s", invalidTimeoutInURL, err)))
					return
				}
				if d > 0 && d < maxTimeout {
					timeout = d
				}
			}
			started, ok := ReceivedTimestampFrom(r.Context())
			if !ok {
				started = now()
			}
			ctx, cancel := context.WithDeadline(r.Context(), started.Add(timeout))
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// QueryValue is r.URL.Query().Get(key) without parsing (and allocating) an
// empty query, as most requests have.
func QueryValue(r *http.Request, key string) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get(key)
}
