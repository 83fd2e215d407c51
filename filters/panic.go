// This file holds the panic recovery filter.

package filters

import (
	"errors"
	"net/http"
	"runtime/debug"
)

// PanicRecoveryConfig configures WithPanicRecovery. The zero value recovers
// and answers, and reports nothing.
type PanicRecoveryConfig struct {
	// OnPanic, when not nil, is called with every recovered panic other than
	// http.ErrAbortHandler and the stack of the goroutine that panicked. It
	// is the place to log: the root package passes a function that writes to
	// its *zap.Logger, so this package stays free of logging libraries.
	OnPanic func(r *http.Request, recovered any, stack []byte)
	// OnAbort, when not nil, is called when a handler aborted the request
	// with http.ErrAbortHandler (a timeout after the response started, a
	// client gone): Kubernetes counts these in apiserver_request_aborts_total.
	OnAbort func(r *http.Request)
}

// WithPanicRecovery returns the filter that recovers panics of the handlers
// inside it, as Kubernetes' WithPanicRecovery does:
//
//   - http.ErrAbortHandler is re-raised, so net/http drops the connection
//     (HTTP/2: resets the stream) without logging.
//   - Any other panic is answered with 500, text/plain,
//     "This request caused apiserver to panic. Look in the logs for details."
//     and reported to OnPanic. If the response had already started, the
//     500 can no longer be sent; the request is aborted instead, so the
//     client sees a broken response rather than a truncated one.
//
// Kubernetes re-panics after writing the 500 (utilruntime.ReallyCrash);
// annex does not, so the connection survives and net/http logs nothing.
func WithPanicRecovery(cfg PanicRecoveryConfig) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rw := WrapResponseWriter(w)
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if isAbort(v) {
					if cfg.OnAbort != nil {
						cfg.OnAbort(r)
					}
					panic(http.ErrAbortHandler)
				}
				if cfg.OnPanic != nil {
					cfg.OnPanic(r, v, debug.Stack())
				}
				if rw.WroteHeader() {
					panic(http.ErrAbortHandler)
				}
				http.Error(rw, "This request caused apiserver to panic. Look in the logs for details.", http.StatusInternalServerError)
			}()
			next.ServeHTTP(rw, r)
		})
	}
}

func isAbort(v any) bool {
	err, ok := v.(error)
	return ok && errors.Is(err, http.ErrAbortHandler)
}
