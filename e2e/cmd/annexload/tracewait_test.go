package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/trace"
	"strings"
	"testing"
)

// TestTracewaitFindsTheBystander traces an HTTP/2 server whose two
// connections carry 120 and 600 requests, and checks that tracewait picks
// the one with 120 (the fewest above --min) and shows its slowest requests.
func TestTracewaitFindsTheBystander(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := func() *http.Client {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		tr.ForceAttemptHTTP2 = true
		return &http.Client{Transport: tr}
	}
	get := func(c *http.Client, n int) {
		for range n {
			resp, err := c.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("HTTP/%d, want HTTP/2", resp.ProtoMajor)
			}
		}
	}
	flooder, bystander := client(), client()
	get(flooder, 1) // both connections open before the trace
	get(bystander, 1)

	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	get(flooder, 600)
	get(bystander, 120)
	trace.Stop()

	tr, err := readTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	tr.report(&out, 100, 3, 0)
	got := out.String()
	for _, want := range []string{": 600 requests", ": 120 requests", "\n120 requests, mean: life "} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\nrequest at "); n != 3 {
		t.Errorf("%d slowest requests shown, want 3:\n%s", n, got)
	}
}
