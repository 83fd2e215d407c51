package annex_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
)

// TestHandshakeOffTheServingGoroutine: the listener that handshakes each
// connection on a goroutine of its own (handshake.go) serves as net/http's
// own would: HTTP/2 and HTTP/1.1 by ALPN, a 400 to plain HTTP, and a
// client that never finishes its handshake holds up nobody else.
func TestHandshakeOffTheServingGoroutine(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	host := strings.TrimPrefix(srv.URL, "https://")

	t.Run("alpn", func(t *testing.T) {
		for _, proto := range []string{"h2", "http/1.1"} {
			rawTLS(t, srv, proto) // fails unless negotiated
		}
		resp, err := srv.Client().Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			t.Fatalf("/healthz: %d over HTTP/%d, want 200 over HTTP/2", resp.StatusCode, resp.ProtoMajor)
		}
	})

	t.Run("plain_http_gets_400", func(t *testing.T) {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP: %d, want 400", resp.StatusCode)
		}
	})

	t.Run("a_stalled_handshake_blocks_nobody", func(t *testing.T) {
		stalled, err := net.Dial("tcp", host) // connects, never says hello
		if err != nil {
			t.Fatal(err)
		}
		defer stalled.Close()
		c := srv.Client()
		c.Timeout = 10 * time.Second
		c.Transport.(*http.Transport).DisableKeepAlives = true // a new connection, accepted after the stalled one
		if code, _ := do(t, c, http.MethodGet, srv.URL+"/healthz", ""); code != 200 {
			t.Fatalf("/healthz beside a stalled handshake: %d", code)
		}
	})
}
