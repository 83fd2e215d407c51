package rest

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// fillLarge creates n Environments whose owners are long enough that the
// namespace's list passes the compression threshold.
func fillLarge(t *testing.T, e *testEnv, n int) {
	t.Helper()
	owner := strings.Repeat("o", 1200)
	for i := range n {
		e.create(t, "big", "env-"+strconv.Itoa(i), nil, owner)
	}
}

// gunzip decodes a gzip body, failing the test on anything else.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("body is not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	return out
}

func TestResponseCompression(t *testing.T) {
	e := newEnv(t, nil)
	fillLarge(t, e, 120) // about 150 KB of list
	list := envBase + "/namespaces/big/environments"
	plain := e.do(t, "GET", list, "", "Accept-Encoding", "identity")
	if plain.code != 200 || len(plain.body) <= gzipThreshold {
		t.Fatalf("plain list: %d, %d bytes, want 200 and more than %d", plain.code, len(plain.body), gzipThreshold)
	}
	if plain.header.Get("Content-Encoding") != "" || plain.header.Get("Content-Length") != strconv.Itoa(len(plain.body)) {
		t.Fatalf("plain list headers: %v", plain.header)
	}

	t.Run("large_list_gzipped", func(t *testing.T) {
		for _, ae := range []string{"gzip", "deflate, gzip", " br ,gzip , deflate"} {
			r := e.do(t, "GET", list, "", "Accept-Encoding", ae)
			if r.code != 200 || r.header.Get("Content-Encoding") != "gzip" || r.header.Get("Vary") != "Accept-Encoding" || r.header.Get("Content-Length") != "" {
				t.Fatalf("Accept-Encoding %q: %d, headers %v", ae, r.code, r.header)
			}
			if len(r.body)*4 > len(plain.body) {
				t.Errorf("gzipped %d bytes of %d: expected at least 4× smaller", len(r.body), len(plain.body))
			}
			if got := gunzip(t, r.body); !bytes.Equal(got, plain.body) {
				t.Fatalf("gunzipped body differs from the plain one (%d vs %d bytes)", len(got), len(plain.body))
			}
		}
	})
	t.Run("go_client_transparent", func(t *testing.T) {
		// Go's transport (client-go's) asks for gzip itself and decompresses.
		resp, err := e.srv.Client().Get(e.srv.URL + list)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !resp.Uncompressed || !bytes.Equal(b, plain.body) {
			t.Fatalf("uncompressed by the transport: %v, body equal: %v", resp.Uncompressed, bytes.Equal(b, plain.body))
		}
	})
	t.Run("not_accepted", func(t *testing.T) {
		for _, ae := range []string{"", "identity", "gzip;q=0", "deflate, br", "gzipx"} {
			req, _ := http.NewRequest("GET", e.srv.URL+list, nil)
			req.Header.Set("Accept-Encoding", ae) // set (even empty): the transport adds nothing
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(b, plain.body) || resp.ContentLength != int64(len(b)) {
				t.Fatalf("Accept-Encoding %q: encoding %q, length %d, body equal %v", ae, resp.Header.Get("Content-Encoding"), resp.ContentLength, bytes.Equal(b, plain.body))
			}
		}
	})
	t.Run("small_not_gzipped", func(t *testing.T) {
		for _, path := range []string{list + "?limit=5", list + "/env-0"} {
			r := e.do(t, "GET", path, "", "Accept-Encoding", "gzip")
			if r.code != 200 || r.header.Get("Content-Encoding") != "" || r.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
				t.Fatalf("%s: %d, headers %v", path, r.code, r.header)
			}
			r.object(t)
		}
	})
	t.Run("table_and_yaml", func(t *testing.T) {
		for _, accept := range []string{"application/json;as=Table;v=v1;g=meta.k8s.io", "application/yaml"} {
			want := e.do(t, "GET", list+"?includeObject=Object", "", "Accept", accept, "Accept-Encoding", "identity")
			r := e.do(t, "GET", list+"?includeObject=Object", "", "Accept", accept, "Accept-Encoding", "gzip")
			if want.code != 200 || r.code != 200 || r.header.Get("Content-Encoding") != "gzip" || r.header.Get("Content-Type") != want.header.Get("Content-Type") {
				t.Fatalf("%s: %d/%d, headers %v", accept, want.code, r.code, r.header)
			}
			if got := gunzip(t, r.body); !bytes.Equal(got, want.body) {
				t.Fatalf("%s: gunzipped body differs", accept)
			}
		}
	})
	t.Run("disabled", func(t *testing.T) {
		off := newEnv(t, func(c *Config) { c.DisableResponseCompression = true })
		fillLarge(t, off, 120)
		r := off.do(t, "GET", list, "", "Accept-Encoding", "gzip")
		if r.code != 200 || r.header.Get("Content-Encoding") != "" || len(r.body) <= gzipThreshold || r.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
			t.Fatalf("compression off: %d, %d bytes, headers %v", r.code, len(r.body), r.header)
		}
	})
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"gzip": true, "gzip, deflate": true, "deflate,gzip": true, " gzip ": true, "br, gzip, zstd": true,
		"": false, "identity": false, "gzip;q=1": false, "x-gzip": false, "GZIP": false, "deflate": false,
	} {
		if got := acceptsGzip(v); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", v, got, want)
		}
	}
}
