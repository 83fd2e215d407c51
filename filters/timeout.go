// This file holds the timeout filter: it answers 504 when a non-long-running
// request's context ends before its handler has answered.

package filters

import (
	"bufio"
	"net"
	"net/http"
	"runtime/debug"
	"sync"

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
	// apiserver_request_terminations_total).
	OnTimeout func(r *http.Request)
	// OnPostTimeout, when not nil, is called from another goroutine when
	// the handler of a timed-out request finally returns, with what it
	// panicked with or nil (apiserver_request_post_timeout_total).
	OnPostTimeout func(r *http.Request, recovered any)
}

// TimeoutMessage is the message of the 504 a timed-out request gets.
const TimeoutMessage = "request did not complete within the allotted timeout"

// WithRequestTimeout returns the filter that runs each non-long-running
// request's handler in its own goroutine and, when the request's context is
// done first (its deadline from WithRequestDeadline passed, or the client
// left):
//
//   - if the handler has written nothing yet, answers 504 with a Timeout
//     Status, message "Timeout: request did not complete within the allotted
//     timeout";
//   - if the response had started, aborts it (panics with
//     http.ErrAbortHandler: HTTP/1 closes the connection, HTTP/2 resets the
//     stream), so the client cannot take a truncated body for a whole one.
//
// After that the handler's writes fail with http.ErrHandlerTimeout. The
// handler's headers are buffered until its first write, which is why filters
// that add headers while the handler runs (WithWarningRecorder) must sit
// inside this one. A panic in the handler is re-raised in the serving
// goroutine, with the handler's stack, for WithPanicRecovery to see.
//
// Kubernetes encodes its 504 body without kind, apiVersion and Content-Type;
// annex writes it with WriteStatus like every other Status, which client-go
// decodes to the same reason (Timeout) and message.
func WithRequestTimeout(cfg RequestTimeoutConfig) func(http.Handler) http.Handler {
	longRunning := cfg.LongRunning
	if longRunning == nil {
		longRunning = DefaultLongRunning
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			done := r.Context().Done()
			if done == nil || longRunning(r, requestInfo(r)) {
				next.ServeHTTP(w, r)
				return
			}
			tw := &timeoutWriter{w: w, header: w.Header().Clone()}
			result := make(chan handlerResult, 1)
			inner := r.Clone(r.Context())
			go func() {
				var res handlerResult
				defer func() {
					if v := recover(); v != nil {
						res.panicked = true
						if isAbort(v) {
							res.value = http.ErrAbortHandler
						} else if hp, ok := v.(*handlerPanic); ok {
							res.value = hp
						} else {
							res.value = &handlerPanic{value: v, stack: debug.Stack()}
						}
					}
					result <- res
				}()
				next.ServeHTTP(tw, inner)
			}()

			select {
			case res := <-result:
				if res.panicked {
					panic(res.value)
				}
			case <-done:
				abort := tw.timeout()
				if cfg.OnTimeout != nil {
					cfg.OnTimeout(r)
				}
				go func() {
					res := <-result
					if cfg.OnPostTimeout != nil {
						var v any
						if res.panicked {
							v = res.value
							if hp, ok := v.(*handlerPanic); ok {
								v = hp.value
							}
						}
						cfg.OnPostTimeout(r, v)
					}
				}()
				if abort {
					panic(http.ErrAbortHandler)
				}
			}
		})
	}
}

type handlerResult struct {
	panicked bool
	value    any
}

// timeoutWriter is the writer the handler of a request under
// WithRequestTimeout sees: headers go to a private map until the first write,
// and once the request timed out every write fails.
type timeoutWriter struct {
	w http.ResponseWriter
	// header is the handler's header map, copied to w's on the first write.
	// Only the handler's goroutine touches it.
	header http.Header

	// mu guards the fields below and every use of w after construction.
	mu          sync.Mutex
	timedOut    bool
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
	defer tw.mu.Unlock()
	if tw.timedOut || tw.wroteHeader || tw.hijacked {
		return
	}
	tw.sendHeaderLocked()
	if code >= 200 || code == http.StatusSwitchingProtocols {
		tw.wroteHeader = true
	}
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if tw.hijacked {
		return 0, http.ErrHijacked
	}
	if !tw.wroteHeader {
		tw.sendHeaderLocked()
		tw.wroteHeader = true
	}
	return tw.w.Write(p)
}

// FlushError is what http.NewResponseController(w).Flush() calls.
func (tw *timeoutWriter) FlushError() error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return http.ErrHandlerTimeout
	}
	if tw.hijacked {
		return http.ErrHijacked
	}
	if !tw.wroteHeader {
		tw.sendHeaderLocked()
		tw.wroteHeader = true
	}
	return http.NewResponseController(tw.w).Flush()
}

// Flush is FlushError for code that still asserts http.Flusher.
func (tw *timeoutWriter) Flush() { _ = tw.FlushError() }

// Hijack is what http.NewResponseController(w).Hijack() calls.
func (tw *timeoutWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return nil, nil, http.ErrHandlerTimeout
	}
	conn, brw, err := http.NewResponseController(tw.w).Hijack()
	if err == nil {
		tw.hijacked = true
	}
	return conn, brw, err
}

// Unwrap returns the wrapped writer, for http.ResponseController's other
// features (deadlines, full duplex).
func (tw *timeoutWriter) Unwrap() http.ResponseWriter { return tw.w }

// timeout ends the handler's access to the response and writes the 504 when
// nothing was written; it reports whether the response must be aborted
// instead.
func (tw *timeoutWriter) timeout() (abort bool) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.timedOut = true
	if tw.wroteHeader || tw.hijacked {
		return !tw.hijacked
	}
	WriteStatus(tw.w, meta.NewTimeout(TimeoutMessage, 0))
	return false
}
