package filters

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// cancelled returns a request whose context is already done, as after its
// deadline.
func cancelled(method, url string) *http.Request {
	r := httptest.NewRequest(method, url, nil)
	ctx, cancel := context.WithCancel(r.Context())
	cancel()
	return r.WithContext(ctx)
}

// protocols are the two ways a client reaches a server; the timeout acts on
// each differently (HTTP/2 resets a stream, HTTP/1 drops the connection).
var protocols = []string{"http1", "http2"}

// serve serves h over proto and returns the server; its Client speaks proto.
func serve(t *testing.T, proto string, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if proto == "http2" {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// cancellable is a filter that gives each request a context the test ends
// by a function it receives on the returned channel: a deadline passing at
// the moment the test chooses.
func cancellable() (func(http.Handler) http.Handler, <-chan context.CancelFunc) {
	cancels := make(chan context.CancelFunc, 1)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			cancels <- cancel
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}, cancels
}

func TestRequestTimeoutAnswers504(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			post := make(chan any, 1)
			lateWrite := make(chan error, 1)
			timedOut := make(chan struct{})
			h := WithRequestTimeout(RequestTimeoutConfig{
				OnTimeout:     func(*http.Request) { close(timedOut) },
				OnPostTimeout: func(_ *http.Request, v any) { post <- v },
			})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// A handler that ignores its context until released.
				w.Header().Set("X-Early", "1")
				<-release
				w.Header().Set("X-Late", "1")
				_, err := w.Write([]byte("late"))
				lateWrite <- err
			}))
			h = WithRequestDeadline(RequestDeadlineConfig{})(h)
			srv := serve(t, proto, WithAuditID(AuditIDConfig{})(h))
			req, _ := http.NewRequest("GET", srv.URL+"/api/v1/pods?timeout=50ms", nil)
			req.Header.Set("Audit-Id", "abc")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			<-timedOut
			if proto == "http1" {
				// The 504 is whole (Content-Length) while the handler still
				// runs.
				body, err := io.ReadAll(resp.Body)
				if err != nil || string(body) != timeoutBody {
					t.Errorf("body %q %v, want %s", body, err, timeoutBody)
				}
			}
			close(release)
			if err := <-lateWrite; !errors.Is(err, http.ErrHandlerTimeout) {
				t.Errorf("late write error = %v, want http.ErrHandlerTimeout", err)
			}
			if v := <-post; v != nil {
				t.Errorf("post-timeout result = %v, want nil", v)
			}
			if proto == "http2" {
				body, err := io.ReadAll(resp.Body)
				if err != nil || string(body) != timeoutBody {
					t.Errorf("body %q %v, want %s", body, err, timeoutBody)
				}
			}
			if resp.StatusCode != 504 {
				t.Fatalf("code = %d, want 504", resp.StatusCode)
			}
			hd := resp.Header
			if hd.Get("Audit-Id") != "abc" || hd.Get("X-Early") != "" || hd.Get("X-Late") != "" ||
				hd.Get("Content-Type") != "application/json" || resp.ContentLength != int64(len(timeoutBody)) {
				t.Errorf("headers = %v, length %d", hd, resp.ContentLength)
			}
		})
	}
}

const timeoutBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","code":504}` + "\n"

func TestRequestTimeoutAbortsStartedResponse(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			cancelFilter, cancels := cancellable()
			lateWrite := make(chan error, 1)
			h := cancelFilter(WithRequestTimeout(RequestTimeoutConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("partial\n"))
				_ = http.NewResponseController(w).Flush()
				<-r.Context().Done() // a list that notices its deadline mid-way
				_, err := w.Write([]byte("rest\n"))
				lateWrite <- err
			})))
			srv := serve(t, proto, h)
			resp, err := srv.Client().Get(srv.URL + "/api/v1/pods")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			buf := make([]byte, len("partial\n"))
			if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "partial\n" {
				t.Fatalf("read %q %v", buf, err)
			}
			(<-cancels)()
			if err := <-lateWrite; !errors.Is(err, http.ErrHandlerTimeout) {
				t.Errorf("write after the deadline = %v, want http.ErrHandlerTimeout", err)
			}
			rest, err := io.ReadAll(resp.Body)
			if err == nil {
				t.Fatalf("the truncated body ended cleanly (%q after partial): want a broken response", rest)
			}
			if resp.StatusCode != 200 {
				t.Errorf("code = %d", resp.StatusCode)
			}
		})
	}
}

// TestRequestTimeoutAbortsInProcess checks the abort without a network: the
// filter panics with http.ErrAbortHandler once the handler returns.
func TestRequestTimeoutAbortsInProcess(t *testing.T) {
	t.Parallel()
	h := WithRequestTimeout(RequestTimeoutConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("partial"))
		<-r.Context().Done()
	}))
	r := httptest.NewRequest("GET", "/api/v1/pods", nil)
	ctx, cancel := context.WithCancel(r.Context())
	w := &cancelOnWrite{ResponseRecorder: httptest.NewRecorder(), cancel: cancel}
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", v)
		}
		if w.Body.String() != "partial" {
			t.Errorf("body = %q", w.Body)
		}
	}()
	h.ServeHTTP(w, r.WithContext(ctx))
	t.Error("ServeHTTP returned instead of aborting")
}

// cancelOnWrite ends the request's context once the handler wrote.
type cancelOnWrite struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	defer c.cancel()
	return c.ResponseRecorder.Write(p)
}

func TestRequestTimeoutPassesThrough(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		url  string
	}{
		{"watch_is_exempt", "/api/v1/pods?watch=1"},
		{"done_request_that_finishes", "/api/v1/pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := WithRequestTimeout(RequestTimeoutConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-From", "handler")
				w.Header().Del("Cache-Control")
				w.WriteHeader(201)
				_, _ = io.WriteString(w, "made")
			}))
			w := httptest.NewRecorder()
			w.Header().Set("Cache-Control", "no-cache, private")
			r := httptest.NewRequest("GET", tt.url, nil)
			ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
			defer cancel()
			r = r.WithContext(ctx)
			if tt.name == "watch_is_exempt" {
				r = cancelled("GET", tt.url) // would time out at once if not exempt
			}
			h.ServeHTTP(w, r)
			if w.Code != 201 || w.Body.String() != "made" || w.Header().Get("X-From") != "handler" {
				t.Errorf("got %d %q %v", w.Code, w.Body, w.Header())
			}
			if _, ok := w.Header()["Cache-Control"]; ok {
				t.Errorf("a header the handler deleted was sent: %v", w.Header())
			}
		})
	}
}

// TestRequestTimeoutPanicKeepsHandlerStack: the handler runs on the request's
// goroutine, so a panic reaches WithPanicRecovery with the handler's frames.
func TestRequestTimeoutPanicKeepsHandlerStack(t *testing.T) {
	t.Parallel()
	var got any
	var stack []byte
	h := WithPanicRecovery(PanicRecoveryConfig{OnPanic: func(_ *http.Request, v any, s []byte) { got, stack = v, s }})(
		WithRequestTimeout(RequestTimeoutConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			panicInHandler()
		})))
	r := httptest.NewRequest("GET", "/api/v1/pods", nil)
	ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
	defer cancel()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(ctx))
	if got != "in handler" || !strings.Contains(string(stack), "panicInHandler") {
		t.Errorf("got %v, stack:\n%s", got, stack)
	}
	if w.Code != 500 {
		t.Errorf("code = %d, want 500", w.Code)
	}
}

func panicInHandler() { panic("in handler") }

// TestRequestTimeoutPanicAfterTimeout: a handler that panics once its
// request was answered with 504 is reported to OnPostTimeout, not answered
// twice.
func TestRequestTimeoutPanicAfterTimeout(t *testing.T) {
	t.Parallel()
	var post any
	h := WithRequestTimeout(RequestTimeoutConfig{OnPostTimeout: func(_ *http.Request, v any) { post = v }})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			panic("late")
		}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, cancelled("GET", "/api/v1/pods"))
	if w.Code != 504 || w.Body.String() != timeoutBody || post != "late" {
		t.Errorf("got %d %q, post-timeout %v", w.Code, w.Body, post)
	}
}

func TestWarningsInsideTimeout(t *testing.T) {
	t.Parallel()
	// The recorder writes into the timeout writer's private map, concurrently
	// with the timeout writing its 504: run with -race to see it is safe.
	release := make(chan struct{})
	done := make(chan struct{})
	h := WithRequestTimeout(RequestTimeoutConfig{OnTimeout: func(*http.Request) { close(done) }})(
		WithWarningRecorder(WarningRecorderConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			AddWarning(r.Context(), "early")
			<-release
			AddWarning(r.Context(), "late")
		})))
	w := httptest.NewRecorder()
	go func() { <-done; close(release) }()
	h.ServeHTTP(w, cancelled("GET", "/api/v1/pods"))
	if w.Code != 504 || len(w.Header().Values("Warning")) != 0 {
		t.Errorf("got %d, warnings %q", w.Code, w.Header().Values("Warning"))
	}

	h = WithRequestTimeout(RequestTimeoutConfig{})(
		WithWarningRecorder(WarningRecorderConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			AddWarning(r.Context(), "kept")
			_, _ = io.WriteString(w, "{}")
			AddWarning(r.Context(), "too late")
		})))
	w = httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v1/pods", nil)
	ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
	defer cancel()
	h.ServeHTTP(w, r.WithContext(ctx))
	if got := w.Result().Header.Values("Warning"); len(got) != 1 || got[0] != `299 - "kept"` {
		t.Errorf("warnings = %q", got)
	}
}

// TestTimeoutWriterConcurrentHeaderAccess exercises the timeout racing a
// handler that keeps writing, for the race detector.
func TestTimeoutWriterConcurrentHeaderAccess(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := WithRequestTimeout(RequestTimeoutConfig{})(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					for i := 0; r.Context().Err() == nil || i < 100; i++ {
						w.Header().Set("X-I", "v")
						if _, err := w.Write([]byte("x")); err != nil {
							return
						}
					}
				}))
			r := httptest.NewRequest("GET", "/api/v1/pods", nil)
			ctx, cancel := context.WithTimeout(r.Context(), time.Millisecond)
			defer cancel()
			w := httptest.NewRecorder()
			func() {
				defer func() {
					if v := recover(); v != nil && v != http.ErrAbortHandler {
						t.Errorf("panic %v", v)
					}
				}()
				h.ServeHTTP(w, r.WithContext(ctx))
			}()
			if w.Code != 200 && w.Code != 504 {
				t.Errorf("code %d", w.Code)
			}
		}()
	}
	wg.Wait()
}

// TestRequestTimeoutRunsHandlerInline: the handler runs on the request's
// goroutine (the old filter started one per request): its stack shows the
// caller of ServeHTTP.
func TestRequestTimeoutRunsHandlerInline(t *testing.T) {
	t.Parallel()
	var stack string
	h := WithRequestTimeout(RequestTimeoutConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64<<10)
		stack = string(buf[:runtime.Stack(buf, false)])
		w.WriteHeader(200)
	}))
	r := httptest.NewRequest("GET", "/api/v1/pods", nil)
	ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
	defer cancel()
	h.ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
	if !strings.Contains(stack, "TestRequestTimeoutRunsHandlerInline") {
		t.Fatalf("handler ran on another goroutine:\n%s", stack)
	}
}

// TestTimeoutWriterHeaderIsItsOwn checks that the handler's header map under
// the timeout starts as the outer one and that what the handler adds, even
// with Add to a value the outer map holds, stays out of the outer map until
// the response starts: a 504 answered meanwhile must not carry it.
func TestTimeoutWriterHeaderIsItsOwn(t *testing.T) {
	outer := httptest.NewRecorder()
	// Room in the value's backing array: an append in place would show
	// in the outer map's slice.
	outer.Header()["Vary"] = append(make([]string, 0, 4), "Accept")
	outer.Header().Set("Audit-Id", "a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := httptest.NewRequest(http.MethodGet, "/apis/g/v/things/x", nil).WithContext(ctx)
	var seenVary, seenAudit []string
	h := WithRequestTimeout(RequestTimeoutConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenVary, seenAudit = w.Header()["Vary"], w.Header()["Audit-Id"]
		w.Header().Add("Vary", "Accept-Encoding")
		w.Header().Set("X-Handler", "1")
		w.Header().Del("Audit-Id")
		if got := outer.Header()["Vary"]; len(got) != 1 || got[:2][1] != "" {
			t.Errorf("outer Vary while the handler runs = %q (backing %q), want [Accept] untouched", got, got[:2])
		}
		if outer.Header().Get("X-Handler") != "" || outer.Header().Get("Audit-Id") != "a" {
			t.Errorf("outer header changed before the response started: %v", outer.Header())
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	h.ServeHTTP(outer, r)
	if len(seenVary) != 1 || seenVary[0] != "Accept" || len(seenAudit) != 1 || seenAudit[0] != "a" {
		t.Errorf("handler saw Vary %q Audit-Id %q, want [Accept] [a]", seenVary, seenAudit)
	}
	got := outer.Result().Header
	if v := got.Values("Vary"); len(v) != 2 || v[1] != "Accept-Encoding" {
		t.Errorf("Vary sent = %q, want [Accept Accept-Encoding]", v)
	}
	if got.Get("X-Handler") != "1" || got.Get("Audit-Id") != "" {
		t.Errorf("sent header = %v, want X-Handler and no Audit-Id", got)
	}
}
