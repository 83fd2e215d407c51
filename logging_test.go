package annex_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/annexapi/annex"
)

// TestRequestLogAndDebugFlagsV: at -v=3 every request is one kube httplog
// line; PUT /debug/flags/v changes the verbosity of the running server
// (behind authorization), as on kube's components.
func TestRequestLogAndDebugFlagsV(t *testing.T) {
	t.Parallel()
	var buf lockedBuf
	ts := startServer(t, annex.Builder{Observability: annex.Observability{Logging: annex.Logging{Format: "json", Verbosity: 2, Output: &buf}}})
	url := ts.URL
	if code, _ := do(t, ts.Client(), "GET", url+"/apis/test.annex.dev/v1/namespaces/a/widgets", ""); code != 200 {
		t.Fatalf("list: %d", code)
	}
	if strings.Contains(buf.String(), `"msg":"HTTP"`) {
		t.Fatal("a request was logged at -v=2")
	}
	if code, body := do(t, ts.AnonymousClient(), "PUT", url+"/debug/flags/v", "3"); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Fatalf("anonymous PUT /debug/flags/v: %d %s", code, body)
	}
	if code, body := do(t, ts.Client(), "PUT", url+"/debug/flags/v", "3"); code != 200 || body != "successfully set klog.logging.verbosity to 3" {
		t.Fatalf("PUT /debug/flags/v: %d %q", code, body)
	}
	if code, _ := do(t, ts.Client(), "GET", url+"/apis/test.annex.dev/v1/namespaces/a/widgets?limit=5", ""); code != 200 {
		t.Fatalf("list: %d", code)
	}
	var line map[string]any
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, `"msg":"HTTP"`) && strings.Contains(l, "limit=5") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line == nil || line["verb"] != "LIST" || line["URI"] != "/apis/test.annex.dev/v1/namespaces/a/widgets?limit=5" || line["resp"] != float64(200) ||
		line["v"] != float64(3) || line["audit-ID"] == "" || line["srcIP"] == "" || line["latency"] == nil {
		t.Fatalf("request line %v in %s", line, buf.String())
	}
	if code, body := do(t, ts.Client(), "PUT", url+"/debug/flags/v", "loud"); code != 400 || !strings.Contains(body, `invalid verbosity "loud"`) {
		t.Fatalf("bad level: %d %q", code, body)
	}
}

// lockedBuf is a bytes.Buffer safe for the server's goroutines.
type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
