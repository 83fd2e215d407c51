// This file holds the stage trace: the per-request record of which stages of
// the chain a request entered and when, the steps its handler reported
// (admission, storage), and so which stage answered it. The chain builder
// (annex.Chain) puts one into every request's context; the audit stage,
// metrics and logs read it. Rejection attribution and stage latencies come
// from this one record.

package filters

import (
	"context"
	"iter"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The steps a resource handler reports inside the chain (after its last
// stage), by these names, with RecordStep and RecordRejection.
const (
	// StepAdmission is mutating admission, schema validation and
	// validating admission (DESIGN.md 09–11).
	StepAdmission = "admission"
	// StepStorage is the storage call of a request (DESIGN.md 12).
	StepStorage = "storage"
)

// Step is a named part of the handler's work and the time it took.
type Step struct {
	Name     string
	Duration time.Duration
}

// inlineStages and inlineSteps size the arrays a Trace carries inline, so a
// chain of that many stages and a handler reporting that many steps cost one
// allocation per request. The Builder fills 16 stages (18 with audit and
// tracing) and the handler is entered last: 20 leaves room for a user stage.
const (
	inlineStages = 20
	inlineSteps  = 4
)

// Trace records one request's path through the chain: when it entered each
// stage, the steps its handler reported, and the step that rejected it, if
// any. The time spent in a stage is the time until the next stage was
// entered (the request path, not the response path).
//
// Enter is called by the chain on the request's goroutine; RecordStep and
// RecordRejection may be called from any goroutine; the readers are safe
// for concurrent use with all of them. Every method of a nil *Trace does
// nothing and returns zero values, so code may call TraceFrom(ctx).X without
// checking.
type Trace struct {
	start  time.Time
	stages []string // the chain's enabled stages in order; shared, read-only
	// entered[i] is when stage i was entered, in nanoseconds since start.
	// It is written once, before reached is raised past i.
	entered []int64
	// reached is one more than the index of the innermost stage entered;
	// len(stages)+1 once the handler was reached.
	reached atomic.Int32
	inline  [inlineStages]int64
	// timedFrom is the first stage timed (see TimeFrom).
	timedFrom int

	// mu guards the fields below.
	mu       sync.Mutex
	nsteps   int
	steps    [inlineSteps]Step
	more     []Step
	rejected string
}

// NewTrace returns the trace of a request that arrived at start and will walk
// through stages, the names of the chain's enabled stages in order. The
// chain keeps stages for all its requests; the trace does not modify it. A
// zero start means the stages are not timed (Enter reads no clock, Latencies
// yields only the handler's steps); which stage the request reached and
// which rejected it are known either way.
func NewTrace(stages []string, start time.Time) *Trace {
	t := &Trace{}
	t.init(stages, start)
	return t
}

// init makes t the new trace NewTrace returns.
func (t *Trace) init(stages []string, start time.Time) {
	t.start, t.stages = start, stages
	if n := len(stages) + 1; n <= inlineStages {
		t.entered = t.inline[:n]
	} else {
		t.entered = make([]int64, n)
	}
}

// Enter records that the request entered stage i (an index into the stages
// given to NewTrace), or, with i == len(stages), that it reached the handler.
// The chain calls it; stages are entered in order.
func (t *Trace) Enter(i int) {
	if t == nil || i < 0 || i >= len(t.entered) {
		return
	}
	if !t.start.IsZero() && i >= t.timedFrom {
		t.entered[i] = int64(time.Since(t.start))
	}
	t.reached.Store(int32(i + 1))
}

// TimeFrom leaves the stages before stage i untimed: entering them reads
// no clock and Latencies does not yield them. A chain whose only reader of
// latencies skips the outer stages (the audit annotation skips those before
// authentication, each a few microseconds) saves a clock read for each. It
// is called before the first Enter.
func (t *Trace) TimeFrom(i int) {
	if t != nil && i > 0 {
		t.timedFrom = i
	}
}

// Start returns when the request arrived, zero when the stages are not
// timed.
func (t *Trace) Start() time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.start
}

// Stage returns the innermost stage the request entered, "" when it entered
// none or reached the handler.
func (t *Trace) Stage() string {
	if t == nil {
		return ""
	}
	if n := int(t.reached.Load()); n > 0 && n <= len(t.stages) {
		return t.stages[n-1]
	}
	return ""
}

// HandlerReached reports whether the request got past every stage.
func (t *Trace) HandlerReached() bool {
	return t != nil && int(t.reached.Load()) == len(t.stages)+1
}

// RecordStep records that the handler spent d in the named step
// (StepAdmission, StepStorage, or its own names). A step recorded twice is
// listed twice.
func (t *Trace) RecordStep(name string, d time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.nsteps < inlineSteps {
		t.steps[t.nsteps] = Step{Name: name, Duration: d}
	} else {
		t.more = append(t.more, Step{Name: name, Duration: d})
	}
	t.nsteps++
	t.mu.Unlock()
}

// RecordRejection records that the named handler step (StepAdmission, say)
// answered the request with an error. The first recorded wins.
func (t *Trace) RecordRejection(step string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.rejected == "" {
		t.rejected = step
	}
	t.mu.Unlock()
}

// RejectedBy returns the stage or step that answered the request with status
// when status is an error (400 or more): the step recorded with
// RecordRejection, else, when the request never reached the handler, the
// innermost stage it entered. It returns "" otherwise (a success, or an error
// from the handler outside any named step).
func (t *Trace) RejectedBy(status int) string {
	if t == nil || status < 400 {
		return ""
	}
	t.mu.Lock()
	step := t.rejected
	t.mu.Unlock()
	if step != "" {
		return step
	}
	return t.Stage()
}

// Latencies yields each stage the request entered with the time spent in it
// (until the next stage was entered; for the innermost, until now) when the
// stages are timed (from the one TimeFrom names), then each step the
// handler recorded, in the order recorded.
func (t *Trace) Latencies() iter.Seq2[string, time.Duration] {
	return func(yield func(string, time.Duration) bool) {
		if t == nil {
			return
		}
		n := int(t.reached.Load())
		if t.start.IsZero() {
			n = 0
		}
		for i := t.timedFrom; i < n && i < len(t.stages); i++ {
			var end int64
			if i+1 < n {
				end = t.entered[i+1]
			} else {
				end = int64(time.Since(t.start))
			}
			if !yield(t.stages[i], time.Duration(end-t.entered[i])) {
				return
			}
		}
		var buf [inlineSteps]Step // the usual handler's steps: no copy to allocate
		for _, s := range t.appendSteps(buf[:0]) {
			if !yield(s.Name, s.Duration) {
				return
			}
		}
	}
}

// Steps returns a copy of the steps the handler recorded, in order.
func (t *Trace) Steps() []Step {
	if t == nil {
		return nil
	}
	return t.appendSteps(make([]Step, 0, t.nsteps))
}

// appendSteps appends the recorded steps to dst.
func (t *Trace) appendSteps(dst []Step) []Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	dst = append(dst, t.steps[:min(t.nsteps, inlineSteps)]...)
	return append(dst, t.more...)
}

// ContextWithTrace returns a copy of ctx carrying t, in the request's values
// layer: the values the stages then set once per request take its slots
// (see values). Chain calls it for every request.
func ContextWithTrace(ctx context.Context, t *Trace) context.Context {
	return &values{Context: ctx, trace: t}
}

// StartRequest is what a chain does first for each request, in one
// allocation instead of three: it returns ctx with a new trace of the
// request in it (NewTrace(stages, start) and ContextWithTrace), the trace,
// and w wrapped as WrapResponseWriter(w) would.
func StartRequest(ctx context.Context, w http.ResponseWriter, stages []string, start time.Time) (context.Context, *Trace, *ResponseWriter) {
	st := &requestStart{}
	st.trace.init(stages, start)
	st.values.Context, st.values.trace = ctx, &st.trace
	rw, ok := w.(*ResponseWriter)
	if !ok {
		st.rw.w = w
		rw = &st.rw
	}
	return &st.values, &st.trace, rw
}

// requestStart holds what StartRequest returns, allocated together.
type requestStart struct {
	values values
	trace  Trace
	rw     ResponseWriter
}

// TraceFrom returns the trace in ctx, or nil (whose methods do nothing).
func TraceFrom(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// RecordStep records a handler step in the trace of ctx, if any; see
// Trace.RecordStep. A handler times a step as
//
//	start := time.Now()
//	err := admit(ctx, obj)
//	filters.RecordStep(ctx, filters.StepAdmission, time.Since(start))
func RecordStep(ctx context.Context, name string, d time.Duration) {
	TraceFrom(ctx).RecordStep(name, d)
}

// RecordRejection records in the trace of ctx, if any, that the named
// handler step answered the request with an error; see
// Trace.RecordRejection.
func RecordRejection(ctx context.Context, step string) {
	TraceFrom(ctx).RecordRejection(step)
}
