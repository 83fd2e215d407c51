package annex

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// TestJSONLogsAsKube: --logging-format=json writes kube's fields (ts in
// milliseconds, caller, msg, v on info lines, err on errors) and -v picks
// the verbosity.
func TestJSONLogsAsKube(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, _, err := newLogger(Logging{Format: "json", Verbosity: 3}, zapcore.AddSync(&buf))
	if err != nil {
		t.Fatal(err)
	}
	log.Info("serving", zap.String("url", "https://x"))
	log.Check(V(3), "HTTP").Write(zap.String("verb", "LIST"), zap.Int("resp", 200))
	if ce := log.Check(V(4), "too verbose"); ce != nil {
		t.Fatal("V(4) enabled at -v=3")
	}
	log.Named("storage").Error("failed", zap.Error(errors.New("disk full")))
	lines := logLines(t, &buf)
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	info, http, failed := lines[0], lines[1], lines[2]
	if ts, ok := info["ts"].(float64); !ok || ts < 1.7e12 || info["msg"] != "serving" || info["v"] != float64(0) ||
		info["url"] != "https://x" || !strings.Contains(info["caller"].(string), "logging_test.go:") {
		t.Errorf("info line %v", info)
	}
	if http["v"] != float64(3) || http["verb"] != "LIST" || http["resp"] != float64(200) {
		t.Errorf("V(3) line %v", http)
	}
	if _, has := failed["v"]; has || failed["err"] != "disk full" || failed["logger"] != "storage" {
		t.Errorf("error line %v", failed)
	}
	if _, _, err := newLogger(Logging{Format: "xml"}, zapcore.AddSync(&buf)); err == nil || !strings.Contains(err.Error(), `"xml" is not one of text, json`) {
		t.Errorf("bad format: %v", err)
	}
}

// TestVModule: --vmodule raises one file's verbosity.
func TestVModule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vmodule string
		shown   bool
	}{{"logging_test=5", true}, {"logging_*=5", true}, {"other=5", false}, {"logging_test=4", false}} {
		var buf bytes.Buffer
		log, _, err := newLogger(Logging{VModule: tc.vmodule}, zapcore.AddSync(&buf))
		if err != nil {
			t.Fatal(err)
		}
		log.Check(V(5), "detail").Write()
		if got := strings.Contains(buf.String(), "detail"); got != tc.shown {
			t.Errorf("--vmodule=%s: shown %v, want %v: %q", tc.vmodule, got, tc.shown, buf.String())
		}
	}
	if _, _, err := newLogger(Logging{VModule: "x"}, zapcore.AddSync(&bytes.Buffer{})); err == nil {
		t.Error("a vmodule without =N was accepted")
	}
}

// TestRequestLogAndDebugFlagsV: at -v=3 every request is one kube httplog
// line; PUT /debug/flags/v changes the verbosity of the running server
// (behind authorization), as on kube's components.
func TestRequestLogAndDebugFlagsV(t *testing.T) {
	t.Parallel()
	var buf lockedBuf
	ts := startServer(t, Builder{Logging: Logging{Format: "json", Verbosity: 2, Output: &buf}})
	url := ts.srv.URL()
	if code, _ := do(t, ts.admin, "GET", url+"/apis/test.annex.dev/v1/namespaces/a/widgets", ""); code != 200 {
		t.Fatalf("list: %d", code)
	}
	if strings.Contains(buf.String(), `"msg":"HTTP"`) {
		t.Fatal("a request was logged at -v=2")
	}
	if code, body := do(t, ts.anon, "PUT", url+"/debug/flags/v", "3"); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Fatalf("anonymous PUT /debug/flags/v: %d %s", code, body)
	}
	if code, body := do(t, ts.admin, "PUT", url+"/debug/flags/v", "3"); code != 200 || body != "successfully set klog.logging.verbosity to 3" {
		t.Fatalf("PUT /debug/flags/v: %d %q", code, body)
	}
	if code, _ := do(t, ts.admin, "GET", url+"/apis/test.annex.dev/v1/namespaces/a/widgets?limit=5", ""); code != 200 {
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
	if code, body := do(t, ts.admin, "PUT", url+"/debug/flags/v", "loud"); code != 400 || !strings.Contains(body, `invalid verbosity "loud"`) {
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
