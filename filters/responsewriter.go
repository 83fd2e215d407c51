// This file holds ResponseWriter, the one wrapper that records what a
// handler answered (status code, bytes) for metrics, logs and audit.

package filters

import "net/http"

// ResponseWriter wraps an http.ResponseWriter and records the status code
// and the number of body bytes written. Flush, Hijack, deadlines and the rest
// of http.ResponseController's features reach the wrapped writer through
// Unwrap. It is not safe for concurrent writes, like any ResponseWriter.
type ResponseWriter struct {
	w           http.ResponseWriter
	status      int
	written     int64
	wroteHeader bool
}

var _ http.ResponseWriter = (*ResponseWriter)(nil)

// WrapResponseWriter returns w itself when it is already a *ResponseWriter,
// so every stage that needs the status shares one wrapper, and a new
// *ResponseWriter around w otherwise.
func WrapResponseWriter(w http.ResponseWriter) *ResponseWriter {
	if rw, ok := w.(*ResponseWriter); ok {
		return rw
	}
	return &ResponseWriter{w: w}
}

// Header returns the wrapped writer's header map.
func (rw *ResponseWriter) Header() http.Header { return rw.w.Header() }

// WriteHeader records code unless it is informational (1xx other than 101),
// which a handler may send before the final status.
func (rw *ResponseWriter) WriteHeader(code int) {
	if !rw.wroteHeader && (code >= 200 || code == http.StatusSwitchingProtocols) {
		rw.status, rw.wroteHeader = code, true
	}
	rw.w.WriteHeader(code)
}

// Write records an implicit 200 and the bytes written.
func (rw *ResponseWriter) Write(p []byte) (int, error) {
	if !rw.wroteHeader {
		rw.status, rw.wroteHeader = http.StatusOK, true
	}
	n, err := rw.w.Write(p)
	rw.written += int64(n)
	return n, err
}

// FlushError flushes the wrapped writer; a flush sends the headers, so it
// records an implicit 200 as Write does. http.NewResponseController calls it.
func (rw *ResponseWriter) FlushError() error {
	if !rw.wroteHeader {
		rw.status, rw.wroteHeader = http.StatusOK, true
	}
	return http.NewResponseController(rw.w).Flush()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (rw *ResponseWriter) Unwrap() http.ResponseWriter { return rw.w }

// Status returns the status code sent, or 0 when nothing was sent yet.
func (rw *ResponseWriter) Status() int { return rw.status }

// BytesWritten returns the number of body bytes written.
func (rw *ResponseWriter) BytesWritten() int64 { return rw.written }

// WroteHeader reports whether the response has started (status sent).
func (rw *ResponseWriter) WroteHeader() bool { return rw.wroteHeader }

// Flush is FlushError for code that still asserts http.Flusher.
func (rw *ResponseWriter) Flush() { _ = rw.FlushError() }
