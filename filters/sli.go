// This file holds the time a request spent waiting on things an SLI does
// not count (kube's apiserver_request_sli_duration_seconds excludes priority
// and fairness queueing and admission webhooks): stages add it, the metrics
// filter subtracts it.

package filters

import (
	"context"
	"sync/atomic"
	"time"
)

type sliExcludedKey struct{}

// ContextWithSLIExcluded returns ctx with an accumulator of excluded time, and
// the accumulator: in the request's values layer when it has none yet (ctx
// itself is returned, see values), else in a layer of its own.
func ContextWithSLIExcluded(ctx context.Context) (context.Context, *atomic.Int64) {
	if v := slots(ctx, sliExcludedKey{}); v != nil {
		v.has |= hasSLIExcluded
		return ctx, &v.sliExcluded
	}
	acc := new(atomic.Int64)
	return context.WithValue(ctx, sliExcludedKey{}, acc), acc
}

// AddSLIExcluded records d, time the request waited on something the SLI
// does not count (a priority and fairness queue, an admission webhook). It
// does nothing when no metrics filter asked for it.
func AddSLIExcluded(ctx context.Context, d time.Duration) {
	if acc, ok := ctx.Value(sliExcludedKey{}).(*atomic.Int64); ok && d > 0 {
		acc.Add(int64(d))
	}
}
