package filters

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/meta"
)

func decodeStatus(t *testing.T, body string) meta.Status {
	t.Helper()
	var s meta.Status
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("body %q is not a Status: %v", body, err)
	}
	return s
}

func TestLongRunning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		method string
		url    string
		f      LongRunningFunc
		want   bool
	}{
		{"watch_param", "GET", "/api/v1/pods?watch=true", nil, true},
		{"watch_path", "GET", "/api/v1/watch/pods", nil, true},
		{"list", "GET", "/api/v1/pods", nil, false},
		{"get", "GET", "/api/v1/namespaces/a/pods/b", nil, false},
		{"pprof", "GET", "/debug/pprof/profile", nil, true},
		{"pprof_index_is_not", "GET", "/debug/pprof", nil, false},
		{"basic_subresource", "GET", "/api/v1/namespaces/a/pods/b/log", BasicLongRunning([]string{"watch", "proxy"}, []string{"log", "exec"}), true},
		{"basic_proxy_verb", "GET", "/api/v1/proxy/namespaces/a/pods/b", BasicLongRunning([]string{"watch", "proxy"}, nil), true},
		{"basic_other", "GET", "/api/v1/namespaces/a/pods/b/status", BasicLongRunning([]string{"watch"}, []string{"log"}), false},
		{"basic_pprof", "GET", "/debug/pprof/heap", BasicLongRunning(nil, nil), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := IsLongRunning(httptest.NewRequest(tt.method, tt.url, nil), tt.f); got != tt.want {
				t.Errorf("IsLongRunning(%s) = %v, want %v", tt.url, got, tt.want)
			}
		})
	}
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	type report struct {
		value any
		stack []byte
	}
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		wantCode  int
		wantBody  string
		wantPanic bool // re-raised http.ErrAbortHandler
		reported  bool
		aborted   bool
	}{
		{"ok_passes", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "fine") }, 200, "fine", false, false, false},
		{"panic_is_500", func(w http.ResponseWriter, r *http.Request) { panic("boom") }, 500,
			"This request caused apiserver to panic. Look in the logs for details.\n", false, true, false},
		{"abort_is_silent", func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }, 0, "", true, false, true},
		{"panic_after_write_aborts", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "partial")
			panic("late")
		}, 200, "partial", true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []report
			aborted := false
			h := WithPanicRecovery(PanicRecoveryConfig{
				OnPanic: func(r *http.Request, v any, stack []byte) { got = append(got, report{v, stack}) },
				OnAbort: func(r *http.Request) { aborted = true },
			})(tt.handler)
			w := httptest.NewRecorder()
			panicked := func() (p bool) {
				defer func() {
					if v := recover(); v != nil {
						if v != http.ErrAbortHandler {
							t.Errorf("re-raised %v, want http.ErrAbortHandler", v)
						}
						p = true
					}
				}()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
				return false
			}()
			if panicked != tt.wantPanic {
				t.Errorf("re-raised = %v, want %v", panicked, tt.wantPanic)
			}
			if tt.wantCode != 0 && w.Code != tt.wantCode {
				t.Errorf("code = %d, want %d", w.Code, tt.wantCode)
			}
			if w.Body.String() != tt.wantBody {
				t.Errorf("body = %q, want %q", w.Body.String(), tt.wantBody)
			}
			if tt.wantCode == 500 && w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type = %q", w.Header().Get("Content-Type"))
			}
			if (len(got) == 1) != tt.reported {
				t.Errorf("reports = %v, want reported %v", got, tt.reported)
			}
			if tt.reported && (len(got[0].stack) == 0 || !strings.Contains(string(got[0].stack), "filters_test")) {
				t.Errorf("stack does not show the handler: %s", got[0].stack)
			}
			if aborted != tt.aborted {
				t.Errorf("OnAbort called = %v, want %v", aborted, tt.aborted)
			}
		})
	}
}

func TestRequestDeadline(t *testing.T) {
	t.Parallel()
	received := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name         string
		url          string
		max          time.Duration
		wantDeadline time.Duration // from received; 0 = none
		wantCode     int
		wantMessage  string
	}{
		{"default_60s", "/api/v1/pods", 0, 60 * time.Second, 200, ""},
		{"user_timeout", "/api/v1/pods?timeout=5s", 0, 5 * time.Second, 200, ""},
		{"user_timeout_over_max_is_max", "/api/v1/pods?timeout=5m", 0, 60 * time.Second, 200, ""},
		{"user_timeout_equal_max_is_max", "/api/v1/pods?timeout=60s", 0, 60 * time.Second, 200, ""},
		{"user_timeout_zero_is_max", "/api/v1/pods?timeout=0s", 0, 60 * time.Second, 200, ""},
		{"user_timeout_negative_is_max", "/api/v1/pods?timeout=-1s", 0, 60 * time.Second, 200, ""},
		{"custom_max", "/api/v1/pods", 10 * time.Second, 10 * time.Second, 200, ""},
		{"watch_exempt", "/api/v1/pods?watch=true&timeout=5s", 0, 0, 200, ""},
		{"bad_timeout", "/api/v1/pods?timeout=abc", 0, 0, 400,
			`invalid timeout specified in the request URL - time: invalid duration "abc"`},
		{"bad_timeout_non_resource", "/healthz?timeout=1", 0, 0, 400,
			`invalid timeout specified in the request URL - time: missing unit in duration "1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var deadline time.Time
			var hasDeadline, ran bool
			h := WithRequestDeadline(RequestDeadlineConfig{MaxTimeout: tt.max})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ran = true
				deadline, hasDeadline = r.Context().Deadline()
			}))
			r := httptest.NewRequest("GET", tt.url, nil)
			r = r.WithContext(ContextWithReceivedTimestamp(r.Context(), received))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d; body %s", w.Code, tt.wantCode, w.Body)
			}
			if tt.wantCode != 200 {
				if ran {
					t.Error("handler ran")
				}
				s := decodeStatus(t, w.Body.String())
				if s.Message != tt.wantMessage || s.Reason != meta.StatusReasonBadRequest || s.Code != 400 {
					t.Errorf("status = %+v, want message %q", s, tt.wantMessage)
				}
				return
			}
			if tt.wantDeadline == 0 {
				if hasDeadline {
					t.Errorf("deadline %v on a long-running request", deadline)
				}
				return
			}
			if !hasDeadline || !deadline.Equal(received.Add(tt.wantDeadline)) {
				t.Errorf("deadline = %v (%v), want %v", deadline, hasDeadline, received.Add(tt.wantDeadline))
			}
		})
	}
}

func TestRequestReceivedTimestamp(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var got time.Time
	var ok bool
	h := WithRequestReceivedTimestamp(RequestReceivedTimestampConfig{Now: func() time.Time { return at }})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, ok = ReceivedTimestampFrom(r.Context()) }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !ok || !got.Equal(at) {
		t.Errorf("got %v %v, want %v", got, ok, at)
	}
}

func TestMaxRequestBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		limit         int64
		body          string
		contentLength int64 // -1: unknown (chunked)
		wantCode      int
		wantMessage   string
		wantRead      string
		wantErr       bool
	}{
		{"under_limit", 10, "0123456789", 10, 200, "", "0123456789", false},
		{"content_length_over", 10, "0123456789a", 11, 413, "Request entity too large: limit is 10", "", false},
		{"chunked_over", 10, "0123456789a", -1, 200, "", "0123456789", true},
		{"chunked_at_limit", 10, "0123456789", -1, 200, "", "0123456789", false},
		{"lying_content_length", 10, strings.Repeat("x", 100), 5, 200, "", strings.Repeat("x", 10), true},
		{"no_limit", -1, strings.Repeat("x", 100), 100, 200, "", strings.Repeat("x", 100), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var read []byte
			var readErr error
			h := WithMaxRequestBody(MaxRequestBodyConfig{MaxBytes: tt.limit})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				read, readErr = io.ReadAll(r.Body)
				var tooLarge *RequestBodyTooLargeError
				if errors.As(readErr, &tooLarge) {
					WriteStatus(w, tooLarge.Status())
				}
			}))
			r := httptest.NewRequest("POST", "/api/v1/namespaces/a/pods", strings.NewReader(tt.body))
			r.ContentLength = tt.contentLength
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tt.wantCode == 413 {
				if w.Code != 413 {
					t.Fatalf("code = %d, want 413", w.Code)
				}
				s := decodeStatus(t, w.Body.String())
				if s.Message != tt.wantMessage || s.Reason != meta.StatusReasonRequestEntityTooLarge {
					t.Errorf("status = %+v", s)
				}
				return
			}
			if string(read) != tt.wantRead {
				t.Errorf("read %d bytes, want %d", len(read), len(tt.wantRead))
			}
			if tt.wantErr != errors.Is(readErr, ErrRequestBodyTooLarge) {
				t.Errorf("read error = %v, want too large: %v", readErr, tt.wantErr)
			}
			if tt.wantErr {
				s := decodeStatus(t, w.Body.String())
				if w.Code != 413 || s.Message != "Request entity too large: limit is 10" {
					t.Errorf("handler's answer: %d %+v", w.Code, s)
				}
			}
		})
	}
}

func TestMaxRequestBodyDefault(t *testing.T) {
	t.Parallel()
	h := WithMaxRequestBody(MaxRequestBodyConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest("POST", "/x", strings.NewReader(""))
	r.ContentLength = 3145729
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Request entity too large: limit is 3145728","reason":"RequestEntityTooLarge","code":413}` + "\n"
	if w.Code != 413 || w.Body.String() != want {
		t.Errorf("got %d %s, want 413 %s", w.Code, w.Body, want)
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	tests := []struct {
		name  string
		texts []string
		cfg   WarningRecorderConfig
		want  []string
	}{
		{"none", nil, WarningRecorderConfig{}, nil},
		{"one", []string{"deprecated"}, WarningRecorderConfig{}, []string{`299 - "deprecated"`}},
		{"escaping", []string{`say "hi" \o/`}, WarningRecorderConfig{}, []string{`299 - "say \"hi\" \\o/"`}},
		{"dedup_and_order", []string{"b", "a", "b", ""}, WarningRecorderConfig{}, []string{`299 - "b"`, `299 - "a"`}},
		{"control_chars_dropped", []string{"bad\nline", "ok"}, WarningRecorderConfig{}, []string{`299 - "ok"`}},
		{"invalid_utf8_dropped", []string{"bad\xff", "ok"}, WarningRecorderConfig{}, []string{`299 - "ok"`}},
		{"unicode_kept", []string{"héllo ✓"}, WarningRecorderConfig{}, []string{`299 - "héllo ✓"`}},
		{"truncate_all_once_over", []string{long("a", 10), long("b", 10), long("c", 10)},
			WarningRecorderConfig{MaxTotalRunes: 25, MaxItemRunes: 4},
			[]string{`299 - "aaaa"`, `299 - "bbbb"`, `299 - "cccc"`}},
		{"drop_after_truncated_total", []string{long("a", 10), long("b", 10), long("c", 10), "d", "e"},
			WarningRecorderConfig{MaxTotalRunes: 12, MaxItemRunes: 6},
			[]string{`299 - "aaaaaa"`, `299 - "bbbbbb"`}},
		{"k8s_limits", []string{long("a", 4000), long("é", 300)}, WarningRecorderConfig{},
			[]string{`299 - "` + long("a", 256) + `"`, `299 - "` + long("é", 256) + `"`}},
		{"k8s_limits_exact_total", []string{long("a", 4000), long("b", 96)}, WarningRecorderConfig{},
			[]string{`299 - "` + long("a", 4000) + `"`, `299 - "` + long("b", 96) + `"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := WithWarningRecorder(tt.cfg)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for _, text := range tt.texts {
					AddWarning(r.Context(), text)
				}
				w.WriteHeader(200)
			}))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			got := w.Result().Header.Values("Warning")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Warning headers:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestAddWarningWithoutRecorder(t *testing.T) {
	t.Parallel()
	AddWarning(context.Background(), "nobody listens") // must not panic
	var got []string
	ctx := ContextWithWarningRecorder(context.Background(), WarningRecorderFunc(func(s string) { got = append(got, s) }))
	AddWarning(ctx, "x")
	if len(got) != 1 || got[0] != "x" {
		t.Errorf("got %q", got)
	}
}

func TestCacheControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		preset string
		cfg    CacheControlConfig
		want   string
	}{
		{"default", "", CacheControlConfig{}, "no-cache, private"},
		{"kept_when_set", "public, max-age=60", CacheControlConfig{}, "public, max-age=60"},
		{"custom", "", CacheControlConfig{Value: "no-store"}, "no-store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := WithCacheControl(tt.cfg)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			w := httptest.NewRecorder()
			if tt.preset != "" {
				w.Header().Set("Cache-Control", tt.preset)
			}
			h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			if got := w.Header().Values("Cache-Control"); len(got) != 1 || got[0] != tt.want {
				t.Errorf("Cache-Control = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAuditID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reqID      string
		presetResp string
		wantCtx    string // "" = a generated UUID
		wantResp   string // "" = the generated one
	}{
		{"echo_request_id", "given-id", "", "given-id", "given-id"},
		{"long_id_kept_verbatim", strings.Repeat("x", 200), "", strings.Repeat("x", 200), strings.Repeat("x", 200)},
		{"generated", "", "", "", ""},
		{"response_header_kept", "given-id", "proxied-id", "given-id", "proxied-id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got string
			h := WithAuditID(AuditIDConfig{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = AuditIDFrom(r.Context()) }))
			r := httptest.NewRequest("GET", "/", nil)
			if tt.reqID != "" {
				r.Header.Set("Audit-ID", tt.reqID)
			}
			w := httptest.NewRecorder()
			if tt.presetResp != "" {
				w.Header().Set("Audit-Id", tt.presetResp)
			}
			h.ServeHTTP(w, r)
			resp := w.Header().Get("Audit-Id")
			if tt.wantCtx == "" {
				if !isUUIDv4(got) || resp != got {
					t.Errorf("generated id %q, response %q", got, resp)
				}
				return
			}
			if got != tt.wantCtx || resp != tt.wantResp {
				t.Errorf("context %q response %q, want %q %q", got, resp, tt.wantCtx, tt.wantResp)
			}
		})
	}
}

func isUUIDv4(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' || s[14] != '4' {
		return false
	}
	for i, c := range s {
		if i != 8 && i != 13 && i != 18 && i != 23 && !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return strings.ContainsRune("89ab", rune(s[19]))
}

func TestNewUUIDUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := NewUUID()
		if !isUUIDv4(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

func TestHSTS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		dirs   []string
		preset string
		want   string
	}{
		{"joined", []string{"max-age=31536000", "includeSubDomains", "preload"}, "", "max-age=31536000; includeSubDomains; preload"},
		{"disabled", nil, "", ""},
		{"kept_when_set", []string{"max-age=1"}, "max-age=2", "max-age=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := WithHSTS(HSTSConfig{Directives: tt.dirs})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			w := httptest.NewRecorder()
			if tt.preset != "" {
				w.Header().Set("Strict-Transport-Security", tt.preset)
			}
			h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			if got := w.Header().Get("Strict-Transport-Security"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		origins  []string
		method   string
		origin   string
		wantCode int
		wantCORS bool
		ranInner bool
	}{
		{"match_get", []string{`^https://ui\.example\.com$`}, "GET", "https://ui.example.com", 200, true, true},
		{"preflight_204", []string{`^https://ui\.example\.com$`}, "OPTIONS", "https://ui.example.com", 204, true, false},
		{"no_match", []string{`^https://ui\.example\.com$`}, "GET", "https://evil.com", 200, false, true},
		{"no_match_preflight_passes", []string{`^https://ui\.example\.com$`}, "OPTIONS", "https://evil.com", 200, false, true},
		{"no_origin", []string{`.*`}, "GET", "", 200, false, true},
		{"unanchored_as_k8s", []string{`example\.com`}, "GET", "https://example.com.evil.org", 200, true, true},
		{"disabled", nil, "OPTIONS", "https://ui.example.com", 200, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := WithCORS(CORSConfig{AllowedOrigins: tt.origins})
			if err != nil {
				t.Fatal(err)
			}
			ran := false
			h := f(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran = true }))
			r := httptest.NewRequest(tt.method, "/apis", nil)
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantCode || ran != tt.ranInner {
				t.Errorf("code %d ran %v, want %d %v", w.Code, ran, tt.wantCode, tt.ranInner)
			}
			want := map[string]string{
				"Access-Control-Allow-Origin":      tt.origin,
				"Access-Control-Allow-Methods":     "POST, GET, OPTIONS, PUT, DELETE, PATCH",
				"Access-Control-Allow-Headers":     "Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, Authorization, X-Requested-With, If-Modified-Since",
				"Access-Control-Expose-Headers":    "Date",
				"Access-Control-Allow-Credentials": "true",
			}
			for k, v := range want {
				got := w.Header().Get(k)
				if tt.wantCORS && got != v || !tt.wantCORS && got != "" {
					t.Errorf("%s = %q (want CORS %v)", k, got, tt.wantCORS)
				}
			}
		})
	}
	if _, err := WithCORS(CORSConfig{AllowedOrigins: []string{"("}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad regexp error = %v, want ErrInvalidConfig", err)
	}
}

func TestResponseWriterRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		handler     func(w http.ResponseWriter)
		wantStatus  int
		wantWritten int64
	}{
		{"nothing", func(w http.ResponseWriter) {}, 0, 0},
		{"implicit_200", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "hello") }, 200, 5},
		{"explicit", func(w http.ResponseWriter) { w.WriteHeader(404); _, _ = io.WriteString(w, "no") }, 404, 2},
		{"first_status_wins", func(w http.ResponseWriter) { w.WriteHeader(201); w.WriteHeader(500) }, 201, 0},
		{"informational_then_final", func(w http.ResponseWriter) { w.WriteHeader(103); w.WriteHeader(202) }, 202, 0},
		{"flush_sends_200", func(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }, 200, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rw := WrapResponseWriter(httptest.NewRecorder())
			if WrapResponseWriter(rw) != rw {
				t.Fatal("wrapping twice made a second wrapper")
			}
			tt.handler(rw)
			if rw.Status() != tt.wantStatus || rw.BytesWritten() != tt.wantWritten || rw.WroteHeader() != (tt.wantStatus != 0) {
				t.Errorf("status %d written %d, want %d %d", rw.Status(), rw.BytesWritten(), tt.wantStatus, tt.wantWritten)
			}
		})
	}
}

// TestFlushThroughAllWrappers streams over a real HTTP connection through
// every filter that wraps the writer: the client must see each event before
// the handler writes the next, which only happens when Flush reaches the
// connection.
func TestFlushThroughAllWrappers(t *testing.T) {
	t.Parallel()
	for _, long := range []bool{false, true} {
		name := "list_through_timeout_writer"
		url := "/api/v1/pods"
		if long {
			name, url = "watch_passthrough", "/api/v1/pods?watch=1"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ack := make(chan struct{})
			inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rc := http.NewResponseController(w)
				for i := range 3 {
					_, _ = io.WriteString(w, "event\n")
					if err := rc.Flush(); err != nil {
						t.Errorf("flush %d: %v", i, err)
						return
					}
					select {
					case <-ack:
					case <-time.After(2 * time.Second):
						t.Errorf("client did not see event %d: not flushed", i)
						return
					}
				}
			})
			var h http.Handler = inner
			cors, err := WithCORS(CORSConfig{AllowedOrigins: []string{".*"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []func(http.Handler) http.Handler{
				WithWarningRecorder(WarningRecorderConfig{}),
				cors,
				WithRequestTimeout(RequestTimeoutConfig{}),
				WithRequestDeadline(RequestDeadlineConfig{}),
				WithMaxRequestBody(MaxRequestBodyConfig{}),
				WithRequestInfoResolver(RequestInfoResolver{}),
				WithRequestReceivedTimestamp(RequestReceivedTimestampConfig{}),
				WithCacheControl(CacheControlConfig{}),
				WithHSTS(HSTSConfig{Directives: []string{"max-age=1"}}),
				WithPanicRecovery(PanicRecoveryConfig{}),
				WithAuditID(AuditIDConfig{}),
				func(next http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(WrapResponseWriter(w), r) })
				},
			} {
				h = f(h)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL + url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Header.Get("Cache-Control") != "no-cache, private" || resp.Header.Get("Audit-Id") == "" {
				t.Errorf("headers %v", resp.Header)
			}
			br := bufio.NewReader(resp.Body)
			for i := range 3 {
				line, err := br.ReadString('\n')
				if err != nil || line != "event\n" {
					t.Fatalf("event %d: %q %v", i, line, err)
				}
				select {
				case ack <- struct{}{}:
				case <-time.After(10 * time.Second):
					t.Fatalf("handler gave up waiting for event %d", i)
				}
			}
		})
	}
}
