// This file holds the connections to the kubelets: one kept-alive TLS
// connection per kubelet, each request written as net/http's Request.Write
// writes it (appendGet) and its answer read with http.ReadResponse, and
// nothing but the connection itself kept between scrapes. net/http's Transport keeps,
// for every idle connection, a goroutine blocked reading it, another
// waiting to write, and a 4 KiB buffer for each: at a thousand nodes,
// megabytes of stacks and buffers held through the whole resolution for a
// request that takes a millisecond of it. Here a connection is read only
// while its answer is parsed, into the parser's buffer.
//
// The request asks for no compression (net/http's Transport asked for gzip
// unasked, and a kubelet's /metrics/resource honours it): tens of KB a node
// per resolution on the wire rather than a few, and no gunzip in the
// scrape's CPU. It asks for the delimited protobuf format first
// (kubeletAccept).

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// kubeletIdleTimeout is how long an unused connection is kept (a node
// gone from the cluster); net/http's IdleConnTimeout was set to the same.
const kubeletIdleTimeout = 5 * time.Minute

// kubeletConns are the connections to the kubelets, by address. Safe for
// concurrent use; one request at a time per address (a scrape asks each
// kubelet once).
type kubeletConns struct {
	tls     *tls.Config
	timeout time.Duration
	now     func() time.Time

	mu   sync.Mutex
	idle map[string]idleConn
}

type idleConn struct {
	conn  *tls.Conn
	since time.Time
}

func newKubeletConns(tc *tls.Config, timeout time.Duration) *kubeletConns {
	return &kubeletConns{tls: tc, timeout: timeout, now: time.Now, idle: map[string]idleConn{}}
}

// kubeletRequest is one GET of a kubelet: the connection it was sent on,
// ready to be read.
type kubeletRequest struct {
	c      *kubeletConns
	addr   string
	path   string
	conn   *tls.Conn
	reused bool
	stop   func() bool // unregisters the context's AfterFunc
}

// send writes a GET of path to addr (with the bearer token when not "") on
// its idle connection, or a new one. The answer is read by read.
func (c *kubeletConns) send(ctx context.Context, addr, path, token string) (*kubeletRequest, error) {
	if r := c.sendKept(ctx, addr, path, token); r != nil {
		return r, nil
	}
	conn, err := c.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	r := &kubeletRequest{c: c, addr: addr, path: path, conn: conn}
	if err := r.write(ctx, appendGet(make([]byte, 0, 512), addr, path, token)); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// sendKept is send on addr's kept connection only, which never waits for
// a dial: nil when there is none, or when the write failed (the kubelet
// had closed it; it is closed here too), and send must dial.
func (c *kubeletConns) sendKept(ctx context.Context, addr, path, token string) *kubeletRequest {
	c.mu.Lock()
	ic, ok := c.idle[addr]
	delete(c.idle, addr)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	r := &kubeletRequest{c: c, addr: addr, path: path, conn: ic.conn, reused: true}
	if err := r.write(ctx, appendGet(make([]byte, 0, 512), addr, path, token)); err != nil {
		r.close()
		return nil
	}
	return r
}

// write writes the request raw. The timeout covers the whole request, as
// http.Client's did; the context's end interrupts it.
func (r *kubeletRequest) write(ctx context.Context, raw []byte) error {
	_ = r.conn.SetDeadline(r.c.now().Add(r.c.timeout))
	r.stop = context.AfterFunc(ctx, func() { _ = r.conn.SetDeadline(time.Unix(1, 0)) })
	_, err := r.conn.Write(raw)
	return err
}

// appendGet appends the GET of path from addr, with the bearer token when
// not "", as net/http's Request.Write writes it with the headers send
// sets (TestAppendGet holds the two to each other). A scrape writes one for
// every kubelet at once: an http.Request, its URL and header map and the
// buffer it was written to were a kilobyte and a half for each, alive
// until its answer was read.
func appendGet(b []byte, addr, path, token string) []byte {
	b = append(b, "GET "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, addr...)
	b = append(b, "\r\nUser-Agent: Go-http-client/1.1\r\nAccept: "+kubeletAccept+"\r\n"...)
	if token != "" {
		// As http.Header writes a value: trimmed, line breaks as spaces.
		b = append(b, "Authorization: "...)
		b = append(b, strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return ' '
			}
			return r
		}, textproto.TrimString("Bearer "+token))...)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

// dial opens a TLS connection to addr, verified for its host.
func (c *kubeletConns) dial(ctx context.Context, addr string) (*tls.Conn, error) {
	d := net.Dialer{Timeout: c.timeout}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	cfg := c.tls.Clone()
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		cfg.ServerName = host
	}
	conn := tls.Client(raw, cfg)
	hctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := conn.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

// read reads the answer through br (reset to the connection) and hands
// its body and header to body when the status is 200 OK; body must read
// the body to its end. The connection is kept for the next scrape when the answer allows.
func (r *kubeletRequest) read(br *bufio.Reader, body func(io.Reader, http.Header) error) error {
	br.Reset(r.conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		r.close()
		// A kept connection the kubelet closed (restarted, or timed out
		// idle) fails at once (EOF, reset): the GET is sent again on a new
		// one, as net/http retries an idempotent request. A timeout is not
		// retried.
		var ne net.Error
		if r.reused && !(errors.As(err, &ne) && ne.Timeout()) {
			return errStaleConn
		}
		return err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		r.close()
		return fmt.Errorf("GET %s: %s: %s", r.path, resp.Status, strings.TrimSpace(string(msg)))
	}
	err = body(resp.Body, resp.Header)
	// Reusable: the body was read to its end (a further read says EOF at
	// once), nothing follows it, and the kubelet did not ask to close.
	n, _ := resp.Body.Read(make([]byte, 1))
	if err != nil || n != 0 || resp.Close || br.Buffered() > 0 || r.reuse() != nil {
		r.close()
	}
	br.Reset(nil)
	return err
}

// errStaleConn: a kept connection the kubelet had closed; the request is
// sent again on a new one.
var errStaleConn = errors.New("kubelet closed the kept connection")

// reuse keeps the connection for the next request to its address.
func (r *kubeletRequest) reuse() error {
	if !r.stop() {
		return errors.New("cancelled") // the context ended: its deadline is set
	}
	if err := r.conn.SetDeadline(time.Time{}); err != nil {
		return err
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if old, ok := r.c.idle[r.addr]; ok {
		old.conn.Close()
	}
	r.c.idle[r.addr] = idleConn{r.conn, r.c.now()}
	return nil
}

func (r *kubeletRequest) close() {
	r.stop()
	r.conn.Close()
}

// closeIdle closes the connections unused for kubeletIdleTimeout.
func (c *kubeletConns) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, ic := range c.idle {
		if c.now().Sub(ic.since) > kubeletIdleTimeout {
			ic.conn.Close()
			delete(c.idle, addr)
		}
	}
}
