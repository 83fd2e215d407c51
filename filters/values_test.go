package filters

import (
	"context"
	"net/http"
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

// TestStartRequest checks that StartRequest gives what NewTrace,
// ContextWithTrace and WrapResponseWriter give: the trace in the context's
// values layer (whose slots the setters then fill without a layer of their
// own), a writer that records the status, and an existing *ResponseWriter
// kept as it is.
func TestStartRequest(t *testing.T) {
	stages := []string{"a", "b"}
	rec := httptest.NewRecorder()
	ctx, tr, rw := StartRequest(context.Background(), rec, stages, time.Time{})
	if TraceFrom(ctx) != tr || tr == nil {
		t.Fatalf("TraceFrom = %p, want the trace %p", TraceFrom(ctx), tr)
	}
	if got := ContextWithAuditID(ctx, "id"); got != ctx {
		t.Errorf("ContextWithAuditID added a layer over StartRequest's values layer")
	}
	if id := AuditIDFrom(ctx); id != "id" {
		t.Errorf("AuditIDFrom = %q, want id", id)
	}
	tr.Enter(0)
	tr.Enter(2)
	if !tr.HandlerReached() {
		t.Errorf("the trace of two stages did not record reaching the handler")
	}
	rw.WriteHeader(418)
	if rw.Status() != 418 || rec.Code != 418 {
		t.Errorf("status recorded %d, sent %d, want 418", rw.Status(), rec.Code)
	}
	if _, _, again := StartRequest(ctx, rw, stages, time.Time{}); again != rw {
		t.Errorf("StartRequest wrapped a *ResponseWriter again")
	}
}

// TestRoomInValuesLayer checks that the request info and the warning
// recorder built in the values layer's room behave as allocated ones: the
// handler finds them, warnings reach the response, a nested recorder gets
// one of its own (and its warnings), and every request its own room.
func TestRoomInValuesLayer(t *testing.T) {
	var infos []*RequestInfo
	ids := 0
	newID := func() string { ids++; return string(rune('0' + ids)) }
	h := WithAuditID(AuditIDConfig{NewID: newID})(WithRequestInfoResolver(RequestInfoResolver{})(
		WithWarningRecorder(WarningRecorderConfig{})(
			WithWarningRecorder(WarningRecorderConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				info, ok := RequestInfoFrom(r.Context())
				if !ok {
					t.Fatal("no request info")
				}
				infos = append(infos, info)
				AddWarning(r.Context(), "careful")
				w.WriteHeader(http.StatusOK)
			})))))
	for _, name := range []string{"a", "b"} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/apis/g/v/namespaces/ns/things/"+name, nil)
		ctx, _, _ := StartRequest(r.Context(), rec, nil, time.Time{})
		h.ServeHTTP(rec, r.WithContext(ctx))
		if got := rec.Header().Values("Warning"); len(got) != 1 || got[0] != `299 - "careful"` {
			t.Errorf("%s: Warning = %q, want one 299 careful", name, got)
		}
		if got, want := rec.Header().Values(AuditIDHeader), string(rune('0'+ids)); len(got) != 1 || got[0] != want {
			t.Errorf("%s: Audit-Id = %q, want [%s]", name, got, want)
		}
	}
	if len(infos) != 2 || infos[0] == infos[1] || infos[0].Name != "a" || infos[1].Name != "b" ||
		infos[0].Verb != "get" || infos[0].Namespace != "ns" || infos[0].Resource != "things" {
		t.Errorf("request infos = %+v, want a and b, each its own", infos)
	}
}
