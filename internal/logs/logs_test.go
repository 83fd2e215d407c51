package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
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
	log, _, err := New(Config{Format: "json", Verbosity: 3}, zapcore.AddSync(&buf))
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
		info["url"] != "https://x" || !strings.Contains(info["caller"].(string), "logs_test.go:") {
		t.Errorf("info line %v", info)
	}
	if http["v"] != float64(3) || http["verb"] != "LIST" || http["resp"] != float64(200) {
		t.Errorf("V(3) line %v", http)
	}
	if _, has := failed["v"]; has || failed["err"] != "disk full" || failed["logger"] != "storage" {
		t.Errorf("error line %v", failed)
	}
	if _, _, err := New(Config{Format: "xml"}, zapcore.AddSync(&buf)); err == nil || !strings.Contains(err.Error(), `"xml" is not one of text, json`) {
		t.Errorf("bad format: %v", err)
	}
}

// TestVModule: --vmodule raises one file's verbosity.
func TestVModule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vmodule string
		shown   bool
	}{{"logs_test=5", true}, {"logs_*=5", true}, {"other=5", false}, {"logs_test=4", false}} {
		var buf bytes.Buffer
		log, _, err := New(Config{VModule: tc.vmodule}, zapcore.AddSync(&buf))
		if err != nil {
			t.Fatal(err)
		}
		log.Check(V(5), "detail").Write()
		if got := strings.Contains(buf.String(), "detail"); got != tc.shown {
			t.Errorf("--vmodule=%s: shown %v, want %v: %q", tc.vmodule, got, tc.shown, buf.String())
		}
	}
	if _, _, err := New(Config{VModule: "x"}, zapcore.AddSync(&bytes.Buffer{})); err == nil {
		t.Error("a vmodule without =N was accepted")
	}
}
