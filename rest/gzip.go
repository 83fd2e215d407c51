// This file holds response compression, as k8s.io/apiserver's
// deferredResponseWriter does it (feature gate APIResponseCompression, on by
// default): a response body larger than 128 KiB, to a client whose
// Accept-Encoding lists gzip (every Go client, client-go and kubectl among
// them, sends "gzip" unless told not to), is gzipped at the fastest level,
// with Content-Encoding: gzip and Vary: Accept-Encoding and no
// Content-Length. Smaller bodies, and every body when Config turns
// compression off, go out as they are, with their Content-Length.

package rest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// gzipThreshold is the size above which a body is compressed: kube's
// defaultGzipThresholdBytes.
const gzipThreshold = 128 << 10

// acceptsGzip reports whether an Accept-Encoding header value lists gzip,
// read as kube reads it: a comma-separated element that is "gzip" once
// trimmed (an element with parameters, such as "gzip;q=0", is not).
func acceptsGzip(v string) bool {
	for v != "" {
		var tok string
		tok, v, _ = strings.Cut(v, ",")
		if strings.TrimSpace(tok) == "gzip" {
			return true
		}
	}
	return false
}

// gzipWriters pools gzip writers at the fastest level (kube's
// defaultGzipContentEncodingLevel, 1): a writer holds hundreds of KiB of
// tables, too much to make per response.
type gzipWriters struct{ pool sync.Pool }

func (g *gzipWriters) get(w io.Writer) *gzip.Writer {
	if z, ok := g.pool.Get().(*gzip.Writer); ok {
		z.Reset(w)
		return z
	}
	z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
	return z
}

// startBody writes the status line and headers of a JSON body of n bytes
// and returns where to write the body and what to call once it is written:
// w itself with the Content-Length, or, when gz (the client accepts gzip
// and compression is on: output.gzip) and n is above the threshold, a gzip
// writer onto w. The Content-Type is set by the caller.
func (h *handler) startBody(w http.ResponseWriter, gz bool, code, n int) (io.Writer, func()) {
	hd := w.Header()
	if !gz || n <= gzipThreshold {
		hd.Set("Content-Length", strconv.Itoa(n))
		w.WriteHeader(code)
		return w, func() {}
	}
	hd.Del("Content-Length")
	hd.Set("Content-Encoding", "gzip")
	hd.Add("Vary", "Accept-Encoding")
	w.WriteHeader(code)
	z := h.gzips.get(w)
	return z, func() {
		_ = z.Close() // writes the trailer; a failure means the client is gone
		z.Reset(nil)
		h.gzips.pool.Put(z)
	}
}
