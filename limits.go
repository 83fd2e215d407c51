// This file holds the serving limits the Builder sets beyond its request
// filters: HTTP/2's streams per connection and flow-control windows, and
// the flags of the limits (README.md, "Limits", lists them all).

package annex

import (
	"flag"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
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

// addLimitFlags registers the flags of the limits, named and meaning as
// kube-apiserver's.
func (b *Builder) addLimitFlags(fs *flag.FlagSet) {
	if b.RequestTimeout <= 0 {
		b.RequestTimeout = 60 * time.Second
	}
	fs.DurationVar(&b.RequestTimeout, "request-timeout", b.RequestTimeout, "An optional field indicating the duration a handler must keep a request open before timing it out. This is the default request timeout for requests but may be overridden by flags such as --min-request-timeout for specific types of requests.")
	if b.MinRequestTimeout <= 0 {
		b.MinRequestTimeout = 1800 * time.Second
	}
	fs.Var((*secondsFlag)(&b.MinRequestTimeout), "min-request-timeout", "An optional field indicating the minimum number of seconds a handler must keep a request open before timing it out. Currently only honored by the watch request handler, which picks a randomized value above this number as the connection timeout, to spread out load.")
	if b.HTTP2MaxStreamsPerConnection == 0 {
		b.HTTP2MaxStreamsPerConnection = defaultHTTP2MaxStreams
	}
	fs.IntVar(&b.HTTP2MaxStreamsPerConnection, "http2-max-streams-per-connection", b.HTTP2MaxStreamsPerConnection, "The limit that the server gives to clients for the maximum number of streams in an HTTP/2 connection. Zero means 1000, kube-apiserver's default.")
}

// secondsFlag is a duration given as a whole number of seconds, as
// kube-apiserver's --min-request-timeout.
type secondsFlag time.Duration

func (s *secondsFlag) String() string {
	return strconv.FormatInt(int64(time.Duration(*s)/time.Second), 10)
}
func (s *secondsFlag) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("want a number of seconds: %w", err)
	}
	*s = secondsFlag(time.Duration(n) * time.Second)
	return nil
}
