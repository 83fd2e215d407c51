// This file reads the chain's trace for the stage-latencies and
// rejected-by annotations of ResponseComplete events.

package audit

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/filters"
)

// appendMillis appends d in milliseconds with three decimals (whole
// microseconds), as strconv's 'f' format of d.Microseconds()/1000 with
// precision 3 writes them, without the float.
func appendMillis(dst []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us < 0 {
		dst, us = append(dst, '-'), -us
	}
	dst = strconv.AppendInt(dst, us/1000, 10)
	frac := us % 1000
	return append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// TraceStages returns a Config.Stages read from the chain's trace
// (filters.TraceFrom): the time spent in each stage skip does not name and
// in each handler step
// (summed per name: admission runs twice for a write), in milliseconds with
// microsecond precision, e.g.
// "authentication=0.012ms,audit=0.020ms,authorization=0.004ms,admission=0.110ms,storage=1.250ms";
// and the stage or step that rejected the request, if one did.
//
// A server passes the generic stages before authentication as skip: every
// request spends microseconds there.
func TraceStages(skip func(stage string) bool) func(ctx context.Context, code int) (latencies, rejectedBy string) {
	if skip == nil {
		skip = func(string) bool { return false }
	}
	return func(ctx context.Context, code int) (string, string) { return traceStages(ctx, code, skip) }
}

func traceStages(ctx context.Context, code int, skip func(string) bool) (latencies, rejectedBy string) {
	t := filters.TraceFrom(ctx)
	if t == nil {
		return "", ""
	}
	// Stages come first, each once; the handler's steps after them, a name
	// possibly repeated: those are summed.
	type entry struct {
		name string
		d    time.Duration
	}
	var arr [16]entry // the usual chain fits: no slice to allocate
	entries := arr[:0]
next:
	for name, d := range t.Latencies() {
		if skip(name) {
			continue
		}
		for i := range entries {
			if entries[i].name == name {
				entries[i].d += d
				continue next
			}
		}
		entries = append(entries, entry{name, d})
	}
	var b strings.Builder // one allocation: the string is the builder's buffer
	b.Grow(24 * len(entries))
	var num [24]byte
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.name)
		b.WriteByte('=')
		b.Write(appendMillis(num[:0], e.d))
		b.WriteString("ms")
	}
	return b.String(), t.RejectedBy(code)
}
