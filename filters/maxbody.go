// This file holds the request body limit.

package filters

import (
	"io"
	"net/http"
)

// DefaultMaxRequestBodyBytes is Kubernetes' MaxRequestBodyBytes: 3 MiB.
const DefaultMaxRequestBodyBytes = 3 << 20

// MaxRequestBodyConfig configures WithMaxRequestBody.
type MaxRequestBodyConfig struct {
	// MaxBytes is the largest body accepted; zero means
	// DefaultMaxRequestBodyBytes (3 MiB), negative means no limit.
	MaxBytes int64
}

// WithMaxRequestBody returns the filter that limits request bodies to
// MaxBytes. A request whose Content-Length is larger is answered at once with
// 413 RequestEntityTooLarge, message "Request entity too large: limit is N",
// the Status Kubernetes' handlers answer with. A body that turns out longer
// while it is read (chunked, or a lying Content-Length) yields its first N
// bytes and then a *RequestBodyTooLargeError, which matches
// ErrRequestBodyTooLarge and whose Status method gives the same 413 for the
// handler to write.
func WithMaxRequestBody(cfg MaxRequestBodyConfig) func(http.Handler) http.Handler {
	limit := cfg.MaxBytes
	if limit == 0 {
		limit = DefaultMaxRequestBodyBytes
	}
	return func(next http.Handler) http.Handler {
		if limit < 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > limit {
				WriteStatus(w, (&RequestBodyTooLargeError{Limit: limit}).Status())
				return
			}
			if r.Body != nil && r.Body != http.NoBody {
				r2 := *r
				r2.Body = &limitedBody{rc: r.Body, limit: limit, left: limit}
				r = &r2
			}
			next.ServeHTTP(w, r)
		})
	}
}

// limitedBody reads at most limit bytes; past them it fails with a
// *RequestBodyTooLargeError.
type limitedBody struct {
	rc    io.ReadCloser
	limit int64
	left  int64
	err   error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Ask for one byte more than allowed, to tell "exactly the limit" from
	// "over it".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		if err != nil {
			b.err = err
		}
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = &RequestBodyTooLargeError{Limit: b.limit}
	return n, b.err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
