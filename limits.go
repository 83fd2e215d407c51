// This file holds the serving limits the Builder sets beyond its request
// filters: HTTP/2's streams per connection and flow-control windows
// (README.md, "Limits", lists them all).

package annex

import (
	"math"
	"net/http"
)

// defaultHTTP2MaxStreams is kube-apiserver's --http2-max-streams-per-connection:
// kube-aggregator carries every user's requests and watches to an
// aggregated server over a few connections, so Go's 250 is too few.
const defaultHTTP2MaxStreams = 1000

// http2StreamWindow is kube's per-stream receive window and largest frame:
// at least 99% of serialized objects are smaller than 256 KiB, so most
// writes fit one frame, and the per-connection window (this times the
// streams) stays bounded.
const http2StreamWindow = 256 << 10

// http2Config is the server's HTTP/2 configuration for maxStreams streams
// per connection (zero means 1000), sized as kube-apiserver's.
func http2Config(maxStreams int) *http.HTTP2Config {
	if maxStreams <= 0 {
		maxStreams = defaultHTTP2MaxStreams
	}
	return &http.HTTP2Config{
		MaxConcurrentStreams:          maxStreams,
		MaxReadFrameSize:              http2StreamWindow,
		MaxReceiveBufferPerStream:     http2StreamWindow,
		MaxReceiveBufferPerConnection: int(min(int64(http2StreamWindow)*int64(maxStreams), math.MaxInt32)),
	}
}
