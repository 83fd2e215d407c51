package annex_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/rest"
)

// This file is the harness of the root's behaviour tests that run a server
// the way a user's test does, with package annextest, from outside the
// package.

// widgets is the resource a Builder without Resources gets in these tests
// (as annextest's servers need one).
func widgets() rest.Resource {
	return rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}
}

// do sends a request with the headers kubectl sends (Accept, User-Agent,
// Content-Type for a body) and returns the status and body.
func do(t testing.TB, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/annex-test")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// startServer runs b with annextest, with widgets when b declares no
// resource.
func startServer(t testing.TB, b annex.Builder) *annextest.Server {
	t.Helper()
	if b.Resources == nil {
		b.Resources = []rest.Resource{widgets()}
	}
	return annextest.Start(t, b)
}
