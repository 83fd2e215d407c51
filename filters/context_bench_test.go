package filters

import (
	"context"
	"testing"
	"time"
)

// sharedKey is the old scheme, one key type for every value, kept here as
// the reference the distinct key types are measured against.
type sharedKey int

// BenchmarkContextLookups is the lookups a request's stages make (the
// trace at every stage entry, the user, the request info) in a context of
// a request's depth: the values of this package with distinct key types
// ("distinct"), and the same number of values under one shared key type
// ("shared", the reference).
func BenchmarkContextLookups(b *testing.B) {
	b.Run("distinct", func(b *testing.B) {
		ctx := ContextWithTrace(context.Background(), &Trace{})
		ctx = ContextWithRequestInfo(ctx, &RequestInfo{})
		ctx = ContextWithAuditID(ctx, "id")
		ctx = ContextWithReceivedTimestamp(ctx, time.Now())
		ctx = ContextWithUser(ctx, &User{})
		ctx = ContextWithWarningRecorder(ctx, nil)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ctx = ContextWithImpersonator(ctx, &User{})
		for b.Loop() {
			for range 12 {
				_ = TraceFrom(ctx)
			}
			_, _ = UserFrom(ctx)
			_, _ = RequestInfoFrom(ctx)
		}
	})
	b.Run("shared", func(b *testing.B) {
		ctx := context.WithValue(context.Background(), sharedKey(6), &Trace{})
		for k := range 5 {
			ctx = context.WithValue(ctx, sharedKey(k), k)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ctx = context.WithValue(ctx, sharedKey(5), 5)
		for b.Loop() {
			for range 12 {
				_, _ = ctx.Value(sharedKey(6)).(*Trace)
			}
			_ = ctx.Value(sharedKey(1))
			_ = ctx.Value(sharedKey(0))
		}
	})
}
