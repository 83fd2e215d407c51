// This file is the filter used when priority and fairness is disabled:
// kube's WithMaxInFlightLimit, two plain limits (read-only and mutating),
// long-running requests excluded, system:masters never refused, 429 with
// Retry-After: 1 beyond them.

package flowcontrol

import (
	"net/http"
	"slices"

	"github.com/annexapi/annex/filters"
)

type maxInFlight struct {
	readOnly, mutating chan struct{}
}

func newMaxInFlight(readOnly, mutating int) *maxInFlight {
	m := &maxInFlight{}
	if readOnly > 0 {
		m.readOnly = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		m.mutating = make(chan struct{}, mutating)
	}
	return m
}

func (m *maxInFlight) filter(next http.Handler, longRunning filters.LongRunningFunc) http.Handler {
	if m.readOnly == nil && m.mutating == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := filters.RequestInfoFrom(r.Context())
		if !ok {
			info, _ = filters.RequestInfoResolver{}.Resolve(r)
		}
		if longRunning(r, info) {
			next.ServeHTTP(w, r)
			return
		}
		c := m.mutating
		if info.Verb == "get" || info.Verb == "list" || info.Verb == "watch" {
			c = m.readOnly
		}
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case c <- struct{}{}:
			defer func() { <-c }()
			next.ServeHTTP(w, r)
		default:
			if u, ok := filters.UserFrom(r.Context()); ok && slices.Contains(u.Groups, groupMasters) {
				next.ServeHTTP(w, r)
				return
			}
			writeTooManyRequests(w, 1)
		}
	})
}
