package version

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandlerCompletes: zero fields come from the build, gitVersion starts
// with the Kubernetes release and major/minor follow it; given fields stay.
func TestHandlerCompletes(t *testing.T) {
	for _, tc := range []struct {
		in               Info
		prefix, maj, min string
	}{
		{Info{}, Kubernetes + "+", "1", strings.Split(Kubernetes, ".")[1]},
		{Info{GitVersion: "v2.7.1"}, "v2.7.1", "2", "7"},
	} {
		rec := httptest.NewRecorder()
		tc.in.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/version", nil))
		var got Info
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.GitVersion, tc.prefix) || got.Major != tc.maj || got.Minor != tc.min || got.GoVersion == "" || got.Platform == "" {
			t.Errorf("%+v -> %+v", tc.in, got)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	if got := buildMetadata("v0.4.2+dirty/x"); got != "v0.4.2-dirty-x" {
		t.Errorf("buildMetadata = %q", got)
	}
}
