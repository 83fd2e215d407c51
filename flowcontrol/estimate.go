// This file estimates a request's work in seats, as kube's work estimator
// does with the object-count method: a LIST (or a watch that sends its
// initial events) one seat per 100 objects, a write one seat plus, when ten
// or more watches will be told of it, extra seats held for a moment after
// it, and everything else one seat.

package flowcontrol

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/annexapi/annex/filters"
)

// ObjectCounter reports how many objects a resource holds, for the width of
// a LIST. It is called for every LIST and watch, so it must be cheap and
// safe for concurrent use: return a figure cached and refreshed now and then
// (kube's object-count tracker refreshes every minute), ok=false when the
// resource is unknown.
type ObjectCounter interface {
	ObjectCount(group, resource string) (count int64, ok bool)
}

// ObjectCounterFunc adapts a function to ObjectCounter.
type ObjectCounterFunc func(group, resource string) (int64, bool)

// ObjectCount calls f.
func (f ObjectCounterFunc) ObjectCount(group, resource string) (int64, bool) {
	return f(group, resource)
}

var _ ObjectCounter = ObjectCounterFunc(nil)

// Kube's estimator constants (pkg/util/flowcontrol/request/config.go).
const (
	objectsPerSeat          = 100
	maxListSeats            = 10
	maxMutatingSeats        = 10
	watchesPerSeat          = 10
	eventAdditionalDuration = 5 * time.Millisecond
)

type estimate struct {
	initial, final int
	additional     time.Duration
}

func (e estimate) seats() int { return max(e.initial, e.final) }

// work is the seat-seconds fair queuing charges at dispatch.
func (e estimate) work() float64 {
	return float64(e.initial)*serviceGuess + float64(e.final)*e.additional.Seconds()
}

func (c *Controller) estimate(r *http.Request, info *filters.RequestInfo, levelMaxSeats int) estimate {
	capSeats := func(limit int) int {
		if levelMaxSeats > 0 && levelMaxSeats < limit {
			return levelMaxSeats
		}
		return limit
	}
	switch info.Verb {
	case "watch":
		q := r.URL.Query()
		rv := q.Get("resourceVersion")
		if q.Get("sendInitialEvents") != "true" && rv != "" && rv != "0" {
			return estimate{initial: 1}
		}
		fallthrough
	case "list":
		if info.Name != "" || c.cfg.ObjectCounter == nil {
			return estimate{initial: 1}
		}
		n, ok := c.cfg.ObjectCounter.ObjectCount(info.APIGroup, info.Resource)
		if !ok {
			return estimate{initial: 1}
		}
		seats := int(math.Ceil(float64(n) / objectsPerSeat))
		return estimate{initial: min(max(seats, 1), capSeats(maxListSeats))}
	case "create", "update", "patch", "delete":
		if info.Resource == "serviceaccounts" && info.Subresource == "token" {
			return estimate{initial: 1}
		}
		var watchers int
		if c.cfg.WatchCount != nil {
			watchers = c.cfg.WatchCount(info)
		} else {
			watchers = c.watches.interested(info)
		}
		if watchers < watchesPerSeat {
			return estimate{initial: 1}
		}
		final := int(math.Ceil(float64(watchers) / watchesPerSeat))
		finalWork := time.Duration(final) * eventAdditionalDuration
		final = min(final, capSeats(maxMutatingSeats))
		return estimate{initial: 1, final: final, additional: finalWork / time.Duration(final)}
	}
	return estimate{initial: 1}
}

// watchTracker counts the watches in flight through the filter by what they
// watch, so a write can tell how many will be told of it (kube's
// watch_tracker.go).
type watchTracker struct {
	// mu guards counts.
	mu     sync.Mutex
	counts map[watchKey]int
}

type watchKey struct{ group, resource, namespace, name string }

func newWatchTracker() *watchTracker { return &watchTracker{counts: map[watchKey]int{}} }

func (t *watchTracker) register(info *filters.RequestInfo) func() {
	k := watchKey{info.APIGroup, info.Resource, info.Namespace, info.Name}
	t.mu.Lock()
	t.counts[k]++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.counts[k]--; t.counts[k] <= 0 {
			delete(t.counts, k)
		}
	}
}

// interested counts the watches of the resource that see a write to the
// object info names: those on the object, on its namespace, and on all
// namespaces.
func (t *watchTracker) interested(info *filters.RequestInfo) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, r := info.APIGroup, info.Resource
	n := t.counts[watchKey{g, r, "", ""}]
	if info.Name != "" {
		n += t.counts[watchKey{g, r, "", info.Name}]
	}
	if info.Namespace != "" {
		n += t.counts[watchKey{g, r, info.Namespace, ""}]
		if info.Name != "" {
			n += t.counts[watchKey{g, r, info.Namespace, info.Name}]
		}
	}
	return n
}
