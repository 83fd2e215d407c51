// This file tests, from inside the package, what needs a shorter readiness
// deadline than NewServer's 30s.

package annextest

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/rest"
)

func TestNewServerTimeoutNamesLastReadyzAnswer(t *testing.T) {
	t.Parallel()
	b := annex.Builder{
		Resources: []rest.Resource{{Group: "test.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}},
		Serving:   annex.Serving{ReadyChecks: []healthz.Check{healthz.NamedCheck("never-ready", func(*http.Request) error { return errors.New("not yet") })}},
	}
	start := time.Now()
	srv, err := newServer(b, 500*time.Millisecond)
	if err == nil {
		srv.Close()
		t.Fatal("newServer succeeded with a ready check that never passes")
	}
	for _, want := range []string{"not ready after 500ms", "last /readyz: 500", "[-]never-ready failed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("newServer took %s to give up after a 500ms deadline", took)
	}
}
