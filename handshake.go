// This file holds the handshaking listener: each connection's TLS handshake
// runs on a short-lived goroutine of its own, before the http.Server sees
// the connection.
//
// net/http handshakes on the connection's serving goroutine, and for HTTP/2
// that goroutine then serves the connection for its whole life: the
// handshake's deep stack (key exchange, certificate parsing and chain
// verification) stays allocated to every open connection, since a parked
// goroutine's stack shrinks only when it uses less than a quarter of it.
// An idle watch on its own connection paid that stack for as long as it
// was open. Here the handshake's stack is freed when it ends, and the
// serving goroutine starts small.

package annex

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"
)

// handshakeListener accepts connections from its inner listener, runs their
// TLS handshakes concurrently and returns from Accept the *tls.Conn of each
// handshake that succeeded, as tls.NewListener's would be once net/http
// handshook it.
type handshakeListener struct {
	net.Listener
	cfg     *tls.Config
	timeout time.Duration // the handshake's deadline; zero: none
	log     *log.Logger   // net/http's ErrorLog: handshake errors, in its words

	start sync.Once
	conns chan net.Conn // handshaken connections
	errc  chan error    // the inner listener's Accept errors
	done  chan struct{} // closed by Close
	close sync.Once
}

func newHandshakeListener(inner net.Listener, cfg *tls.Config, timeout time.Duration, errorLog *log.Logger) *handshakeListener {
	return &handshakeListener{Listener: inner, cfg: cfg, timeout: timeout, log: errorLog,
		conns: make(chan net.Conn), errc: make(chan error), done: make(chan struct{})}
}

// Accept returns the next connection whose handshake succeeded.
func (l *handshakeListener) Accept() (net.Conn, error) {
	l.start.Do(func() { go l.acceptLoop() })
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes the inner listener; handshakes under way end at their
// deadline or with their client, and their connections are closed.
func (l *handshakeListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *handshakeListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errc <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // net/http retries a temporary error, and closes us on any other
		}
		go l.handshake(c)
	}
}

// handshake completes c's handshake as net/http's would, and hands it to
// Accept.
func (l *handshakeListener) handshake(c net.Conn) {
	tc := tls.Server(c, l.cfg)
	ctx := context.Background()
	if l.timeout > 0 {
		_ = c.SetDeadline(time.Now().Add(l.timeout))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		reason := err.Error()
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			reason = "client sent an HTTP request to an HTTPS server"
		}
		_ = c.Close()
		if l.log != nil {
			l.log.Print(fmt.Sprintf("http: TLS handshake error from %s: %v", c.RemoteAddr(), reason))
		}
		return
	}
	if l.timeout > 0 {
		_ = c.SetDeadline(time.Time{})
	}
	select {
	case l.conns <- tc:
	case <-l.done:
		_ = tc.Close()
	}
}

// looksLikeHTTP reports whether a TLS record header looks like the start of
// an HTTP request (net/http's tlsRecordHeaderLooksLikeHTTP).
func looksLikeHTTP(hdr [5]byte) bool {
	for _, m := range [][]byte{[]byte("GET /"), []byte("HEAD "), []byte("POST "), []byte("PUT /"), []byte("OPTIO")} {
		if bytes.Equal(hdr[:], m) {
			return true
		}
	}
	return false
}
