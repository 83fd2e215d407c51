// This file holds the request's values layer: one context layer, put in by
// ContextWithTrace at the chain's entry, in which the values the stages set
// once per request (the audit ID, the received timestamp, the request info,
// the warning recorder, the user, the SLI's excluded time, the audit
// annotation recorder) take their slots instead of each adding a layer of
// its own. A stage that adds a value with one of this package's setters then
// gets back the context it passed (and skips r.WithContext, a copy of the
// request): an audited GET saves seven context layers and seven request
// copies, and every lookup walks as many layers fewer.
//
// A slot is filled only while no layer of the context carries that value:
// a second value (impersonation's user) gets a layer of its own above the
// slot, and a lookup finds it first, as before. The values are set on the
// request's goroutine by the stages in order, before the handler starts any
// goroutine of its own; a context taken before a slot was filled sees the
// value from then on, which no stage relies on not doing.

package filters

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// values is the request's values layer.
type values struct {
	context.Context
	trace    *Trace
	info     *RequestInfo
	user     *User
	warnings WarningRecorder
	// annotations is the audit stage's recorder (annotations.go).
	annotations AuditAnnotationRecorder
	auditID     string
	received    time.Time
	has         uint8 // the set slots among auditID, received and sliExcluded
	// sliExcluded accumulates the time the SLI does not count (sli.go).
	sliExcluded atomic.Int64

	// Room for the values this package's filters make once per request,
	// allocated with the layer: WithRequestInfoResolver and
	// WithWarningRecorder build theirs here (see room) instead of
	// allocating each.
	infoRoom     RequestInfo
	warningsRoom headerWarningRecorder
	// auditIDHeader is the Audit-Id response header's value (WithAuditID).
	auditIDHeader [1]string
	roomUsed      uint8 // roomInfo, roomWarnings, roomAuditIDHeader
}

const (
	roomInfo uint8 = 1 << iota
	roomWarnings
	roomAuditIDHeader
)

// room returns ctx's values layer when its slot for key is free and its
// room for that value (bit) is unused, marking the room used; nil
// otherwise. The caller builds the value in the room and then fills the
// slot with it.
func room(ctx context.Context, key any, bit uint8) *values {
	v := slots(ctx, key)
	if v == nil || v.roomUsed&bit != 0 {
		return nil
	}
	v.roomUsed |= bit
	return v
}

const (
	hasAuditID uint8 = 1 << iota
	hasReceived
	hasSLIExcluded
)

type valuesKey struct{}

// Value answers the keys of the slots that are set, and passes every other
// lookup on. The audit ID and the timestamp are answered by pointer, so
// that a lookup does not allocate (the accessors read both forms).
func (v *values) Value(key any) any {
	switch key.(type) {
	case traceKey:
		return v.trace
	case requestInfoKey:
		if v.info != nil {
			return v.info
		}
	case userKey:
		if v.user != nil {
			return v.user
		}
	case warningsKey:
		if v.warnings != nil {
			return v.warnings
		}
	case auditAnnotationsKeyType:
		if v.annotations != nil {
			return v.annotations
		}
	case auditIDKey:
		if v.has&hasAuditID != 0 {
			return &v.auditID
		}
	case receivedTimestampKey:
		if v.has&hasReceived != 0 {
			return &v.received
		}
	case sliExcludedKey:
		if v.has&hasSLIExcluded != 0 {
			return &v.sliExcluded
		}
	case valuesKey:
		return v
	}
	return v.Context.Value(key)
}

// slots returns the values layer of ctx when key has no value in ctx yet,
// so that its slot may be filled; nil otherwise.
func slots(ctx context.Context, key any) *values {
	v, ok := ctx.Value(valuesKey{}).(*values)
	if !ok || ctx.Value(key) != nil {
		return nil
	}
	return v
}

// RequestWithContext returns r with ctx: r itself when ctx is r's context
// (a setter of this package filled a slot), else r.WithContext(ctx).
func RequestWithContext(r *http.Request, ctx context.Context) *http.Request {
	if ctx == r.Context() {
		return r
	}
	return r.WithContext(ctx)
}
