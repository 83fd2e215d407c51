// This file holds the timeout filter: it answers 504 when a non-long-running
// request's context ends before its handler has answered, and aborts a
// response that had started, without a goroutine per request.

package filters

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/annexapi/annex/meta"
)

// RequestTimeoutConfig configures WithRequestTimeout. The zero value is
// Kubernetes' WithTimeoutForNonLongRunningRequests with no reporting.
type RequestTimeoutConfig struct {
	// LongRunning tells which requests are left alone; nil means
	// DefaultLongRunning (watch, /debug/pprof/).
	LongRunning LongRunningFunc
	// OnTimeout, when not nil, is called once a request timed out, after
	// the 504 was written or the abort decided (Kubernetes counts these in
	// apiserver_request_terminations_total). It may run on another
	// goroutine than the request's.
	OnTimeout func(r *http.Request)
	// OnPostTimeout, when not nil, is called when the handler of a request
	// that had already been answered with 504 or aborted finally returns,
	// with what it panicked with or nil (apiserver_request_post_timeout_total).
	OnPostTimeout func(r *http.Request, recovered any)
}

// TimeoutMessage is the message of the 504 a timed-out request gets.
const TimeoutMessage = "request did not complete within the allotted timeout"

// WithRequestTimeout returns the filter that ends each non-long-running
// request when its context is done (its deadline from WithRequestDeadline
// passed, or the client left), whether or not the handler noticed:
//
//   - if the handler has written nothing yet, it answers 504 with a Timeout
//     Status, message "Timeout: request did not complete within the allotted
//     timeout", with a Content-Length so the client has the whole answer at
//     once;
//   - if the response had started, it sets the connection's write deadline
//     to now (http.ResponseController: HTTP/2 resets the stream, HTTP/1
//     writes fail) and, when the handler returns, aborts the response (panics
//     with http.ErrAbortHandler), so the client cannot take a truncated body
//     for a whole one.
//
// From then on the handler's writes fail with http.ErrHandlerTimeout (even
// one made the instant its context ends, before the filter acted). The
// handler runs on the request's goroutine and is expected to return soon
// after its context is done: until it does, an HTTP/1 client of a started
// response, and an HTTP/2 client of a 504, wait for the end of the body. The
// filter acts at the deadline from a function registered with
// context.AfterFunc, so no goroutine exists unless a request does time out.
// A request whose context ended before its handler returned counts as timed
// out: the filter answers 504 if nothing was written and aborts otherwise,
// and a panic of the handler then goes to OnPostTimeout. The handler's headers are kept in a map of their own until
// its first write, so the 504 never races a header the handler sets: a
// filter that adds headers while the handler runs (WithWarningRecorder) must
// sit inside this one.
//
// Kubernetes encodes its 504 body without kind, apiVersion and Content-Type;
// annex writes it like every other Status, which client-go decodes to the
// same reason (Timeout) and message.
func WithRequestTimeout(cfg RequestTimeoutConfig) func(http.Handler) http.Handler {
	longRunning := cfg.LongRunning
	if longRunning == nil {
		longRunning = DefaultLongRunning
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if ctx.Done() == nil || longRunning(r, requestInfo(r)) {
				next.ServeHTTP(w, r)
				return
			}
			tw := &timeoutWriter{w: w, header: copyHeader(w.Header()), r: r, ctx: ctx, onTimeout: cfg.OnTimeout}
			tw.stop = context.AfterFunc(ctx, tw.expire)
			defer tw.finish(cfg.OnPostTimeout)
			next.ServeHTTP(tw, r)
		})
	}
}

// copyHeader is the handler's header map: a map of its own, whose values
// start as src's slices, capped at their length so that an append (Add)
// makes a new slice rather than write into src's. Header.Clone would copy
// the values too, one allocation more per request; the slices are shared
// anyway once the first write copies the map back (sendHeaderLocked), and
// Set and Del replace a slice rather than change it.
func copyHeader(src http.Header) http.Header {
	h := make(http.Header, len(src))
	for k, v := range src {
		h[k] = v[:len(v):len(v)]
	}
	return h
}

// timeoutWriter is the writer the handler of a request under
// WithRequestTimeout sees: headers go to a private map until the first write,
// and once the request timed out every write fails.
type timeoutWriter struct {
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context
	// header is the handler's header map, copied to w's on the first write.
	// Only the handler touches it.
	header    http.Header
	onTimeout func(*http.Request)
	// stop unregisters expire.
	stop func() bool

	// mu guards the fields below and every use of w by the handler before
	// its response started, by expire and by finish. Body writes after the
	// response started are made without it, so a write blocked on a slow
	// client never keeps expire from setting the write deadline that
	// unblocks it.
	mu          sync.Mutex
	timedOut    bool // the handler's writes fail from now on
	abort       bool // the response had started when the request timed out
	wroteHeader bool
	hijacked    bool
}

var _ http.ResponseWriter = (*timeoutWriter)(nil)

func (tw *timeoutWriter) Header() http.Header {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return http.Header{}
	}
	return tw.header
}

// sendHeaderLocked makes w's header map equal to the handler's.
func (tw *timeoutWriter) sendHeaderLocked() {
	dst := tw.w.Header()
	for k := range dst {
		if _, ok := tw.header[k]; !ok {
			delete(dst, k)
		}
	}
	for k, v := range tw.header {
		dst[k] = v
	}
}

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	answered := tw.checkLocked()
	if !tw.timedOut && !tw.wroteHeader && !tw.hijacked {
		tw.sendHeaderLocked()
		if code >= 200 || code == http.StatusSwitchingProtocols {
			tw.wroteHeader = true
		}
		tw.w.WriteHeader(code)
	}
	tw.mu.Unlock()
	tw.answered(answered)
}

// start makes sure the response has started, and reports the error a write
// must return instead, if any.
func (tw *timeoutWriter) start() error {
	tw.mu.Lock()
	answered := tw.checkLocked()
	var err error
	switch {
	case tw.timedOut:
		err = http.ErrHandlerTimeout
	case tw.hijacked:
		err = http.ErrHijacked
	case !tw.wroteHeader:
		tw.sendHeaderLocked()
		tw.wroteHeader = true
		tw.w.WriteHeader(http.StatusOK)
	}
	tw.mu.Unlock()
	tw.answered(answered)
	return err
}

// checkLocked times the request out when its context is done, even before
// expire has run, so a handler that saw its context end cannot race the
// timeout with a write. It reports whether it acted.
func (tw *timeoutWriter) checkLocked() bool {
	if !tw.timedOut && tw.ctx.Err() != nil {
		return tw.timeOutLocked()
	}
	return false
}

// answered reports a timeout this goroutine acted on, outside the lock.
func (tw *timeoutWriter) answered(acted bool) {
	if acted && tw.onTimeout != nil {
		tw.onTimeout(tw.r)
	}
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	if err := tw.start(); err != nil {
		return 0, err
	}
	return tw.w.Write(p)
}

// FlushError is what http.NewResponseController(w).Flush() calls.
func (tw *timeoutWriter) FlushError() error {
	if err := tw.start(); err != nil {
		return err
	}
	return http.NewResponseController(tw.w).Flush()
}

// Flush is FlushError for code that still asserts http.Flusher.
func (tw *timeoutWriter) Flush() { _ = tw.FlushError() }

// Hijack is what http.NewResponseController(w).Hijack() calls.
func (tw *timeoutWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	tw.mu.Lock()
	answered := tw.checkLocked()
	var conn net.Conn
	var brw *bufio.ReadWriter
	err := http.ErrHandlerTimeout
	if !tw.timedOut {
		if conn, brw, err = http.NewResponseController(tw.w).Hijack(); err == nil {
			tw.hijacked = true
		}
	}
	tw.mu.Unlock()
	tw.answered(answered)
	return conn, brw, err
}

// Unwrap returns the wrapped writer, for http.ResponseController's other
// features (deadlines, full duplex).
func (tw *timeoutWriter) Unwrap() http.ResponseWriter { return tw.w }

// expire runs, on a goroutine of its own, when the request's context is
// done while the handler may still be running.
func (tw *timeoutWriter) expire() {
	tw.mu.Lock()
	answered := tw.timeOutLocked()
	tw.mu.Unlock()
	tw.answered(answered)
}

// timeOutLocked ends the handler's access to the response, once: it answers
// 504 when nothing was written, or cuts a started response off with a write
// deadline in the past (HTTP/2 resets the stream, HTTP/1 writes fail) and
// marks it for abort. It reports whether it acted.
func (tw *timeoutWriter) timeOutLocked() bool {
	if tw.timedOut {
		return false
	}
	tw.timedOut = true
	switch {
	case tw.hijacked:
	case tw.wroteHeader:
		tw.abort = true
		_ = http.NewResponseController(tw.w).SetWriteDeadline(time.Now())
	default:
		writeTimeout(tw.w)
		_ = http.NewResponseController(tw.w).Flush()
	}
	return true
}

// finish runs, deferred, when the handler returns or panics. If the context
// ended first, the request timed out, however far the handler got: whichever
// of expire and finish takes the lock first answers, and a handler's panic
// after that has nobody left to answer, so it goes to OnPostTimeout.
func (tw *timeoutWriter) finish(onPostTimeout func(*http.Request, any)) {
	if tw.stop() {
		return // the context was not done: whatever happened, stands
	}
	v := recover()
	tw.mu.Lock()
	answered := tw.timeOutLocked()
	abort := tw.abort
	tw.mu.Unlock()
	tw.answered(answered)
	if onPostTimeout != nil {
		onPostTimeout(tw.r, v)
	}
	if abort {
		panic(http.ErrAbortHandler)
	}
}

// writeTimeout writes the 504 Timeout Status with a Content-Length, so a
// client has the whole answer even while the handler is still running.
func writeTimeout(w http.ResponseWriter) {
	s := meta.NewTimeout(TimeoutMessage, 0)
	body, _ := json.Marshal(s) // a Status has only strings and numbers
	body = append(body, '\n')
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	WriteStatus(w, s)
}
