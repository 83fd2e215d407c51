// This file hits every limit of README.md's "Limits" table from outside: a
// real server built by the Builder (package annextest), reached over TLS the
// way a client does, with the headers a real client sends. The header read
// timeout, 32s, is tested shortened, from inside (internal_test.go).

package annex_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/rest"
)

const widgetsPath = "/apis/test.annex.dev/v1/namespaces/default/widgets"

// asKubectl makes a request as kubectl does (User-Agent, Accept,
// Content-Type) and returns the status and body.
func asKubectl(t testing.TB, c *http.Client, method, url, contentType string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "kubectl/v1.34.0 (linux/amd64) kubernetes/abcdef0")
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, readAll(t, resp)
}

// status decodes a Status body.
func status(t testing.TB, body string) (code int, reason, message string) {
	t.Helper()
	var st struct {
		Kind    string `json:"kind"`
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status (%v): %.300s", err, body)
	}
	return st.Code, st.Reason, st.Message
}

// widgetOfSize is a widget named name whose JSON is n bytes long.
func widgetOfSize(name string, n int) string {
	head := `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":{"data":"`
	tail := `"}}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

func TestLimitRequestBody(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	url := srv.URL + widgetsPath
	const limit = 3 << 20
	tests := []struct {
		name string
		body func() io.Reader
	}{
		// Content-Length over the limit: refused before the body is read.
		{"content_length_over_limit", func() io.Reader { return strings.NewReader(widgetOfSize("big", limit+1)) }},
		// No Content-Length (chunked): refused once the limit is passed.
		{"chunked_over_limit", func() io.Reader { return io.MultiReader(strings.NewReader(widgetOfSize("big", limit+1))) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := asKubectl(t, srv.Client(), http.MethodPost, url, "application/json", tc.body())
			stCode, reason, msg := status(t, body)
			if code != 413 || stCode != 413 || reason != "RequestEntityTooLarge" || msg != "Request entity too large: limit is 3145728" {
				t.Errorf("got %d %s %q, want 413 RequestEntityTooLarge \"Request entity too large: limit is 3145728\"", code, reason, msg)
			}
		})
	}
	if code, body := asKubectl(t, srv.Client(), http.MethodGet, url+"/big", "", nil); code != 404 {
		t.Errorf("get after the refused creates: %d %s", code, body)
	}
}

func TestLimitObjectSizeOnBbolt(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	url := srv.URL + widgetsPath
	const limit = 1556480 // backend.DefaultMaxObjectSize
	for _, tc := range []struct {
		name  string
		query string
	}{{"create", ""}, {"dry_run_create", "?dryRun=All"}} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := asKubectl(t, srv.Client(), http.MethodPost, url+tc.query, "application/json", strings.NewReader(widgetOfSize("huge", 1_900_000)))
			_, reason, msg := status(t, body)
			if code != 413 || reason != "RequestEntityTooLarge" ||
				!strings.HasPrefix(msg, "Request entity too large: the object is 19") || !strings.HasSuffix(msg, fmt.Sprintf(" bytes, limit is %d", limit)) {
				t.Errorf("1.9 MB create: %d %s %q, want 413 naming the size and the limit %d", code, reason, msg, limit)
			}
		})
	}
	if code, body := asKubectl(t, srv.Client(), http.MethodGet, url+"/huge", "", nil); code != 404 {
		t.Errorf("get after the refused create: %d %.200s", code, body)
	}
	// Growing a stored object over the limit is refused and changes nothing.
	if code, body := asKubectl(t, srv.Client(), http.MethodPost, url, "application/json", strings.NewReader(widgetOfSize("grows", 200))); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	patch := `{"spec":{"data":"` + strings.Repeat("y", limit) + `"}}`
	code, body := asKubectl(t, srv.Client(), http.MethodPatch, url+"/grows", "application/merge-patch+json", strings.NewReader(patch))
	if _, reason, _ := status(t, body); code != 413 || reason != "RequestEntityTooLarge" {
		t.Errorf("patch over the limit: %d %.300s", code, body)
	}
	if code, body := asKubectl(t, srv.Client(), http.MethodGet, url+"/grows", "", nil); code != 200 || len(body) > 1000 {
		t.Errorf("get after the refused patch: %d, %d bytes", code, len(body))
	}
	// Just under the limit fits: the limit leaves room for what storage adds
	// (and for the server's metadata, managedFields included).
	if code, body := asKubectl(t, srv.Client(), http.MethodPost, url, "application/json", strings.NewReader(widgetOfSize("fits", limit-600))); code != 201 {
		t.Errorf("create under the limit: %d %.300s", code, body)
	}
}

// nested is an object with a value nested depth levels deep in spec,
// counting the object itself as the first level.
func nested(name string, depth int) string {
	// The object, then spec: two levels; the rest are arrays.
	return `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":{"v":` +
		strings.Repeat("[", depth-2) + "1" + strings.Repeat("]", depth-2) + "}}"
}

func TestLimitJSONDepth(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	url := srv.URL + widgetsPath
	if code, body := asKubectl(t, srv.Client(), http.MethodPost, url, "application/json", strings.NewReader(nested("deep", 10000))); code != 201 {
		t.Fatalf("create nested 10000 deep (the limit): %d %.300s", code, body)
	}
	tests := []struct {
		name, method, path, contentType, body string
		// wantMsg is in the message; the patch libraries word a document
		// too deep as an invalid patch.
		wantMsg string
	}{
		{"create", http.MethodPost, "", "application/json", nested("deeper", 10001), "exceeded max depth"},
		{"update", http.MethodPut, "/deep", "application/json", nested("deep", 10001), "exceeded max depth"},
		{"merge_patch", http.MethodPatch, "/deep", "application/merge-patch+json", nested("deep", 10001), "error decoding patch: invalid character '[' exceeded max depth"},
		{"json_patch", http.MethodPatch, "/deep", "application/json-patch+json",
			`[{"op":"add","path":"/spec/w","value":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}]`, ""},
		// A patch of modest depth applied deep inside the stored object:
		// the result is decoded again, and refused.
		{"json_patch_result", http.MethodPatch, "/deep", "application/json-patch+json",
			`[{"op":"add","path":"/spec/v` + strings.Repeat("/0", 9990) + `","value":[[[[[[[[[[]]]]]]]]]]}]`, "exceeded max depth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := asKubectl(t, srv.Client(), tc.method, url+tc.path, tc.contentType, strings.NewReader(tc.body))
			stCode, reason, msg := status(t, body)
			if code != 400 || stCode != 400 || reason != "BadRequest" || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("got %d %s %.300q, want 400 BadRequest containing %q", code, reason, msg, tc.wantMsg)
			}
		})
	}
	// The stored object is the one created, at the limit.
	code, body := asKubectl(t, srv.Client(), http.MethodGet, url+"/deep", "", nil)
	if code != 200 || !strings.Contains(body, `"generation":1,`) {
		t.Errorf("get after the refused writes: %d %.300s", code, body)
	}
}

func TestLimitJSONPatchOperations(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	url := srv.URL + widgetsPath
	if code, body := asKubectl(t, srv.Client(), http.MethodPost, url, "application/json", strings.NewReader(widgetOfSize("w", 200))); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	ops := func(n int) string {
		op := `{"op":"test","path":"/kind","value":"Widget"}`
		return "[" + strings.TrimSuffix(strings.Repeat(op+",", n), ",") + "]"
	}
	if code, body := asKubectl(t, srv.Client(), http.MethodPatch, url+"/w", "application/json-patch+json", strings.NewReader(ops(10000))); code != 200 {
		t.Errorf("10000 operations (the limit): %d %.300s", code, body)
	}
	code, body := asKubectl(t, srv.Client(), http.MethodPatch, url+"/w", "application/json-patch+json", strings.NewReader(ops(10001)))
	_, reason, msg := status(t, body)
	if code != 413 || reason != "RequestEntityTooLarge" || msg != "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001" {
		t.Errorf("10001 operations: %d %s %q, want 413 naming the limit", code, reason, msg)
	}
}

// rawTLS dials the server with HTTP/1.1 or h2 in ALPN, as the admin.
func rawTLS(t testing.TB, srv *annextest.Server, proto string) *tls.Conn {
	t.Helper()
	cfg := srv.TLSConfig()
	cfg.NextProtos = []string{proto}
	conn, err := tls.Dial("tcp", srv.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if got := conn.ConnectionState().NegotiatedProtocol; got != proto {
		t.Fatalf("negotiated %q, want %q", got, proto)
	}
	return conn
}

func TestLimitHeaderBytes(t *testing.T) {
	t.Parallel()
	srv := startServer(t, annex.Builder{})
	for _, tc := range []struct {
		name     string
		size     int
		wantCode int
	}{
		{"under_the_limit", 900 << 10, 200},
		// Go reads up to MaxHeaderBytes plus 4 KiB before it refuses.
		{"over_the_limit", 1<<20 + 4<<10, 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := rawTLS(t, srv, "http/1.1")
			req := "GET " + widgetsPath + " HTTP/1.1\r\nHost: localhost\r\nUser-Agent: kubectl/v1.34.0\r\nAccept: application/json\r\n" +
				"X-Padding: " + strings.Repeat("p", tc.size) + "\r\n\r\n"
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("%d bytes of headers: %s, want %d", tc.size, resp.Status, tc.wantCode)
			}
		})
	}
}

// http2Settings reads the server's first SETTINGS frame on a fresh h2
// connection and returns its values by identifier.
func http2Settings(t testing.TB, srv *annextest.Server) map[uint16]uint32 {
	t.Helper()
	conn := rawTLS(t, srv, "h2")
	// The client preface and an empty SETTINGS frame.
	if _, err := io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	for {
		var hdr [9]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			t.Fatal(err)
		}
		length := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		payload := make([]byte, length)
		if _, err := io.ReadFull(r, payload); err != nil {
			t.Fatal(err)
		}
		const typeSettings, flagAck = 0x4, 0x1
		if hdr[3] != typeSettings || hdr[4]&flagAck != 0 {
			continue
		}
		settings := map[uint16]uint32{}
		for i := 0; i+6 <= len(payload); i += 6 {
			settings[binary.BigEndian.Uint16(payload[i:])] = binary.BigEndian.Uint32(payload[i+2:])
		}
		return settings
	}
}

func TestLimitHTTP2StreamsPerConnection(t *testing.T) {
	t.Parallel()
	const maxConcurrentStreams = 0x3
	for _, tc := range []struct {
		name string
		set  int
		want uint32
	}{{"default_is_kubes", 0, 1000}, {"flag_value", 42, 42}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, annex.Builder{Limits: annex.Limits{HTTP2MaxStreamsPerConnection: tc.set}})
			if got := http2Settings(t, srv)[maxConcurrentStreams]; got != tc.want {
				t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want %d", got, tc.want)
			}
		})
	}

	// 300 watches, more than Go's default 250, on one connection: a client
	// that keeps to the server's limit (StrictMaxConcurrentRequests) gets
	// every one of them open at once.
	srv := startServer(t, annex.Builder{})
	tr := &http.Transport{TLSClientConfig: srv.TLSConfig(), ForceAttemptHTTP2: true, HTTP2: &http.HTTP2Config{StrictMaxConcurrentRequests: true}}
	var dials sync.Map
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := tls.Dialer{Config: tr.TLSClientConfig}
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			dials.Store(c, true)
		}
		return c, err
	}
	tr.TLSClientConfig.NextProtos = []string{"h2"}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	// One request first: concurrent first requests would each dial.
	if code, body := asKubectl(t, c, http.MethodGet, srv.URL+widgetsPath, "", nil); code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	const watches = 300
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	opened := make(chan error, watches)
	for i := range watches {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s%s?watch=true&timeoutSeconds=60&labelSelector=n%%3D%d", srv.URL, widgetsPath, i), nil)
			req.Header.Set("User-Agent", "kube-aggregator")
			req.Header.Set("Accept", "application/json")
			resp, err := c.Do(req)
			if err == nil {
				if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
					err = fmt.Errorf("watch: %s over %s", resp.Status, resp.Proto)
				}
				defer resp.Body.Close()
			}
			opened <- err
			if err == nil {
				<-ctx.Done()
			}
		})
	}
	deadline := time.After(30 * time.Second)
	for i := range watches {
		select {
		case err := <-opened:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatalf("%d of %d watches open after 30s: the connection's stream limit held the rest", i, watches)
		}
	}
	n := 0
	dials.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d connections dialed, want 1", n)
	}
	cancel()
	wg.Wait()
}

func TestLimitRequestTimeout(t *testing.T) {
	t.Parallel()
	// A computed resource whose Get blocks until the request's context ends.
	blocking := rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "sleepers", Kind: "Sleeper", Namespaced: true,
		Getter: rest.GetterFunc(func(ctx context.Context, _, _ string) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
		Lister: rest.ListerFunc(func(context.Context, string, rest.ListOptions) ([][]byte, error) { return nil, nil }),
	}
	srv := startServer(t, annex.Builder{Resources: []rest.Resource{widgets(), blocking}, Limits: annex.Limits{RequestTimeout: 500 * time.Millisecond}})
	url := srv.URL + "/apis/test.annex.dev/v1/namespaces/default/sleepers/s"
	for _, tc := range []struct {
		name, query string
		atLeast     time.Duration
	}{
		{"request_timeout", "", 500 * time.Millisecond},
		{"timeout_parameter_below_it", "?timeout=200ms", 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, body := asKubectl(t, srv.Client(), http.MethodGet, url+tc.query, "", nil)
			elapsed := time.Since(start)
			_, reason, msg := status(t, body)
			if code != 504 || reason != "Timeout" || msg != "Timeout: request did not complete within the allotted timeout" {
				t.Errorf("got %d %s %q, want 504 Timeout", code, reason, msg)
			}
			if elapsed < tc.atLeast || elapsed > 10*time.Second {
				t.Errorf("answered after %v, want about %v", elapsed, tc.atLeast)
			}
		})
	}
}

func TestLimitWatchTimeout(t *testing.T) {
	t.Parallel()
	const minTimeout = 300 * time.Millisecond
	srv := startServer(t, annex.Builder{Limits: annex.Limits{MinRequestTimeout: minTimeout}})
	for _, tc := range []struct {
		name, query     string
		atLeast, atMost time.Duration
	}{
		// kube's: a random duration in [min, 2*min).
		{"min_request_timeout", "", minTimeout, 2*minTimeout + 5*time.Second},
		{"timeout_seconds", "&timeoutSeconds=1", time.Second, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, body := asKubectl(t, srv.Client(), http.MethodGet, srv.URL+widgetsPath+"?watch=true"+tc.query, "", nil)
			elapsed := time.Since(start)
			if code != 200 || body != "" {
				t.Errorf("watch: %d %q, want 200 ending cleanly with no event", code, body)
			}
			if elapsed < tc.atLeast || elapsed > tc.atMost {
				t.Errorf("watch ended after %v, want within [%v, %v]", elapsed, tc.atLeast, tc.atMost)
			}
		})
	}
}
