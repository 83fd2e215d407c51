package healthz

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	bad := NamedCheck("storage", func(*http.Request) error { return errors.New("disk on fire") })
	shutdown := NewFlag("shutdown", "process is shutting down")
	shutdown.Set()
	tests := []struct {
		name     string
		checks   []Check
		path     string
		wantCode int
		wantBody string
	}{
		{"all_pass_plain", []Check{PingCheck()}, "/readyz", 200, "ok"},
		{"all_pass_verbose", []Check{PingCheck(), NamedCheck("log", func(*http.Request) error { return nil })}, "/readyz?verbose", 200,
			"[+]ping ok\n[+]log ok\nreadyz check passed\n"},
		{"failure_withholds_reason", []Check{PingCheck(), bad}, "/readyz", 500,
			"[+]ping ok\n[-]storage failed: reason withheld\nreadyz check failed\n"},
		{"exclude_failing_check", []Check{PingCheck(), bad}, "/readyz?verbose&exclude=storage", 200,
			"[+]ping ok\n[+]storage excluded: ok\nreadyz check passed\n"},
		{"exclude_unknown_warns", []Check{PingCheck()}, "/readyz?verbose&exclude=nope", 200,
			"[+]ping ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n"},
		{"single_check_ok", []Check{PingCheck(), bad}, "/readyz/ping", 200, "ok"},
		{"single_check_failing", []Check{PingCheck(), bad}, "/readyz/storage", 500, "internal server error: disk on fire"},
		{"single_check_unknown", []Check{PingCheck()}, "/readyz/nope", 404, "404 page not found\n"},
		{"flag_fails_once_set", []Check{shutdown}, "/readyz", 500, "[-]shutdown failed: reason withheld\nreadyz check failed\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := New("readyz", tc.checks...)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
				t.Fatalf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
			if tc.wantCode != 404 && rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("missing nosniff header")
			}
		})
	}
}

func TestNewRejectsDuplicateNames(t *testing.T) {
	t.Parallel()
	if _, err := New("healthz", PingCheck(), PingCheck()); err == nil {
		t.Fatal("want an error for a repeated check name")
	}
}

func TestOnFailureSeesReason(t *testing.T) {
	t.Parallel()
	h, err := New("livez", NamedCheck("x", func(*http.Request) error { return errors.New("why") }))
	if err != nil {
		t.Fatal(err)
	}
	var got error
	h.OnFailure = func(_ *http.Request, _ string, err error) { got = err }
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/livez", nil))
	if got == nil || got.Error() != "why" {
		t.Fatalf("OnFailure got %v", got)
	}
}

type notedReady struct{ note string }

func (notedReady) Ready(context.Context) error { return nil }
func (n notedReady) Note() string              { return n.note }

func TestReadyCheckNote(t *testing.T) {
	h, err := New("readyz", ReadyCheck("cluster-admission", notedReady{"not served by the cluster: mutatingadmissionpolicies"}), ReadyCheck("plain", notedReady{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz?verbose", nil))
	want := "[+]cluster-admission ok: not served by the cluster: mutatingadmissionpolicies\n[+]plain ok\nreadyz check passed\n"
	if rec.Code != 200 || rec.Body.String() != want {
		t.Errorf("got %d %q, want 200 %q", rec.Code, rec.Body.String(), want)
	}
}
