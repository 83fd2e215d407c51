// This file holds the object counts API priority and fairness sizes LISTs
// with (flowcontrol.ObjectCounter), as kube's object-count tracker.

package storage

import (
	"context"
	"sync/atomic"
	"time"
)

// ObjectCounts gives the number of objects of each resource added to it,
// counted by its store when Start runs and then every Period: a request
// reads a cached figure, never a live count. Add every resource before
// Start; ObjectCount is safe for concurrent use.
type ObjectCounts struct {
	// Period is how often the counts are refreshed. Zero means one minute,
	// kube's.
	Period time.Duration
	// OnError is told of a count that failed (the last figure stays). Nil
	// means ignore it.
	OnError func(group, resource string, err error)
	// byResource is fixed once Start runs; each count is -1 until counted.
	byResource map[[2]string]*objectCount
}

type objectCount struct {
	counter Counter
	prefix  string
	n       atomic.Int64
}

// Add counts the objects under ResourcePrefix(group, resource, "") in
// counter. A resource added twice (another version of it) keeps the first.
func (o *ObjectCounts) Add(group, resource string, counter Counter) {
	if o.byResource == nil {
		o.byResource = map[[2]string]*objectCount{}
	}
	key := [2]string{group, resource}
	if o.byResource[key] != nil {
		return
	}
	oc := &objectCount{counter: counter, prefix: ResourcePrefix(group, resource, "")}
	oc.n.Store(-1)
	o.byResource[key] = oc
}

// ObjectCount returns the last count of the resource, and false when it
// was never counted (or never added).
func (o *ObjectCounts) ObjectCount(group, resource string) (int64, bool) {
	oc := o.byResource[[2]string{group, resource}]
	if oc == nil {
		return 0, false
	}
	n := oc.n.Load()
	return n, n >= 0
}

// Start counts at once, then every Period until ctx ends.
func (o *ObjectCounts) Start(ctx context.Context) error {
	if len(o.byResource) == 0 {
		return nil
	}
	period := o.Period
	if period <= 0 {
		period = time.Minute
	}
	o.refresh(ctx)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			o.refresh(ctx)
		}
	}
}

// refresh counts every resource once; a failed count keeps the last figure.
func (o *ObjectCounts) refresh(ctx context.Context) {
	for key, oc := range o.byResource {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := oc.counter.Count(cctx, oc.prefix)
		cancel()
		if err != nil {
			if ctx.Err() == nil && o.OnError != nil {
				o.OnError(key[0], key[1], err)
			}
			continue
		}
		oc.n.Store(n)
	}
}
