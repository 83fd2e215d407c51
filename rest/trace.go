// This file reports the handler's steps (admission, storage) into the
// request's stage trace (filters.Trace), so that audit's stage-latencies
// annotation and the rejections metric name them like the stages before the
// handler. A request whose trace is not timed reads no clock here.

package rest

import (
	"context"
	"errors"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/storage"
)

// stepTimer times one handler step of a timed request; its zero value (an
// untimed request) records nothing.
type stepTimer struct {
	start time.Time
	// admitted is the admission time recorded before a storage step
	// started: an update's and a delete's admission run inside storage's
	// guaranteed update, and the storage step leaves them out.
	admitted time.Duration
}

// startStep starts timing a step when the request's trace times its stages
// (annex.ChainOptions.StageLatencies).
func startStep(ctx context.Context) stepTimer {
	if filters.TraceFrom(ctx).Start().IsZero() {
		return stepTimer{}
	}
	return stepTimer{start: time.Now()}
}

// startStorage starts timing a storage step.
func startStorage(ctx context.Context) stepTimer {
	st := startStep(ctx)
	if !st.start.IsZero() {
		st.admitted = stepTotal(ctx, filters.StepAdmission)
	}
	return st
}

// admitDone records an admission step, and its rejection when err is not
// nil.
func (st stepTimer) admitDone(ctx context.Context, err error) {
	if !st.start.IsZero() {
		filters.RecordStep(ctx, filters.StepAdmission, time.Since(st.start))
	}
	if err != nil {
		filters.RecordRejection(ctx, filters.StepAdmission)
	}
}

// storageDone records a storage step, less the admission that ran inside it,
// and a rejection for a conflict (409: the object exists, or changed).
func (st stepTimer) storageDone(ctx context.Context, err error) {
	if !st.start.IsZero() {
		d := time.Since(st.start) - (stepTotal(ctx, filters.StepAdmission) - st.admitted)
		filters.RecordStep(ctx, filters.StepStorage, max(d, 0))
	}
	if err != nil && (errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrAlreadyExists)) {
		filters.RecordRejection(ctx, filters.StepStorage)
	}
}

// stepTotal is the time recorded for the named step so far.
func stepTotal(ctx context.Context, name string) time.Duration {
	var total time.Duration
	for _, s := range filters.TraceFrom(ctx).Steps() {
		if s.Name == name {
			total += s.Duration
		}
	}
	return total
}
