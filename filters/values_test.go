package filters

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// TestValuesLayer: the values a request's stages set once take the slots of
// the layer ContextWithTrace puts in (the setters return the context they
// were given, and RequestWithContext then skips the request copy); a second
// value gets a layer of its own and is found first; without the layer, each
// value is a layer as before.
func TestValuesLayer(t *testing.T) {
	tr := &Trace{}
	base := ContextWithTrace(context.Background(), tr)
	at := time.Date(2026, 11, 26, 1, 2, 3, 4, time.UTC)
	alice, bob := &User{Name: "alice"}, &User{Name: "bob"}
	info := &RequestInfo{Verb: "get"}
	rec := WarningRecorderFunc(func(string) {})

	ctx := base
	for _, set := range []func(context.Context) context.Context{
		func(c context.Context) context.Context { return ContextWithAuditID(c, "id-1") },
		func(c context.Context) context.Context { return ContextWithReceivedTimestamp(c, at) },
		func(c context.Context) context.Context { return ContextWithRequestInfo(c, info) },
		func(c context.Context) context.Context { return ContextWithWarningRecorder(c, rec) },
		func(c context.Context) context.Context { return ContextWithUser(c, alice) },
	} {
		if next := set(ctx); next != ctx {
			t.Fatalf("a first value added a layer instead of filling its slot")
		}
	}
	if TraceFrom(ctx) != tr || AuditIDFrom(ctx) != "id-1" {
		t.Fatalf("trace %p, audit ID %q", TraceFrom(ctx), AuditIDFrom(ctx))
	}
	if got, ok := ReceivedTimestampFrom(ctx); !ok || !got.Equal(at) {
		t.Fatalf("received %v %v", got, ok)
	}
	if got, ok := RequestInfoFrom(ctx); !ok || got != info {
		t.Fatalf("request info %v %v", got, ok)
	}
	if _, ok := WarningRecorderFrom(ctx); !ok {
		t.Fatal("no warning recorder")
	}
	if next := ContextWithAuditAnnotationRecorder(ctx, AuditAnnotationRecorderFunc(func(k, v string) {})); next != ctx {
		t.Fatal("the audit recorder added a layer instead of filling its slot")
	}
	if _, ok := AuditAnnotationRecorderFrom(ctx); !ok {
		t.Fatal("no audit annotation recorder")
	}
	sli, acc := ContextWithSLIExcluded(ctx)
	AddSLIExcluded(sli, time.Second)
	if sli != ctx || acc.Load() != int64(time.Second) {
		t.Fatalf("SLI accumulator: same context %v, %v", sli == ctx, time.Duration(acc.Load()))
	}
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	if RequestWithContext(r, ctx) != r {
		t.Fatal("RequestWithContext copied the request for its own context")
	}

	// Impersonation: a second user is a layer above the slot.
	imp := ContextWithUser(ctx, bob)
	if imp == ctx {
		t.Fatal("a second user filled the slot again")
	}
	if u, _ := UserFrom(imp); u != bob {
		t.Fatalf("impersonated context: %v", u)
	}
	if u, _ := UserFrom(ctx); u != alice {
		t.Fatalf("original context: %v", u)
	}
	if RequestWithContext(r, imp) == r || RequestWithContext(r, imp).Context() != imp {
		t.Fatal("RequestWithContext kept the request for another context")
	}
	// A value already in a layer below is not shadowed by a slot of a layer above.
	under := ContextWithAuditID(context.Background(), "outer")
	over := ContextWithTrace(under, tr)
	if again := ContextWithAuditID(over, "inner"); again == over || AuditIDFrom(again) != "inner" || AuditIDFrom(over) != "outer" {
		t.Fatalf("audit IDs: %q over %q", AuditIDFrom(again), AuditIDFrom(over))
	}

	// No layer: values are layers of their own, as before.
	plain := context.Background()
	if c := ContextWithUser(plain, alice); c == plain {
		t.Fatal("no values layer, yet no new context")
	} else if u, _ := UserFrom(c); u != alice {
		t.Fatalf("user %v", u)
	}
	if c := ContextWithReceivedTimestamp(plain, at); func() bool { got, ok := ReceivedTimestampFrom(c); return !ok || !got.Equal(at) }() {
		t.Fatal("received timestamp lost without a values layer")
	}
	fresh := ContextWithTrace(context.Background(), tr)
	if _, ok := ReceivedTimestampFrom(fresh); ok || AuditIDFrom(fresh) != "" {
		t.Fatal("empty slots answered")
	}
	if _, ok := UserFrom(fresh); ok {
		t.Fatal("an empty user slot answered")
	}
}
