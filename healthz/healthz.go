// This file holds the Check interface and the endpoint handler.

package healthz

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
)

// Check is one named health check. Check must be safe for concurrent use and
// return quickly; nil means healthy.
type Check interface {
	Name() string
	Check(r *http.Request) error
}

// CheckFunc adapts a function to a Check.
type CheckFunc struct {
	CheckName string
	Fn        func(r *http.Request) error
}

var _ Check = CheckFunc{}

// Name returns CheckName.
func (c CheckFunc) Name() string { return c.CheckName }

// Check calls Fn.
func (c CheckFunc) Check(r *http.Request) error { return c.Fn(r) }

// NamedCheck returns a Check called name that calls fn.
func NamedCheck(name string, fn func(r *http.Request) error) Check {
	return CheckFunc{CheckName: name, Fn: fn}
}

// PingCheck always passes.
func PingCheck() Check {
	return NamedCheck("ping", func(*http.Request) error { return nil })
}

// ReadinessChecker is what a storage backend or cache offers to say whether it
// can serve (storage.ReadinessChecker has this shape).
type ReadinessChecker interface {
	Ready(ctx context.Context) error
}

// ReadyCheck adapts a ReadinessChecker to a Check called name. When rc is
// also a Noter, so is the check.
func ReadyCheck(name string, rc ReadinessChecker) Check {
	c := CheckFunc{CheckName: name, Fn: func(r *http.Request) error { return rc.Ready(r.Context()) }}
	if n, ok := rc.(Noter); ok {
		return notedCheck{c, n}
	}
	return c
}

// Noter is an optional interface of a Check (or of the ReadinessChecker
// given to ReadyCheck): what a passing check has to say, such as a part
// that is ready because there is nothing to wait for. A verbose answer
// shows it after "ok": "[+]name ok: note". Empty means nothing.
type Noter interface {
	Note() string
}

type notedCheck struct {
	CheckFunc
	n Noter
}

func (c notedCheck) Note() string { return c.n.Note() }

// Flag is a check that fails once Set is called: the readyz "shutdown" check,
// which goes red first when the server starts shutting down.
type Flag struct {
	name string
	msg  string
	set  atomic.Bool
}

var _ Check = (*Flag)(nil)

// NewFlag returns a Flag check called name that fails with msg once Set.
func NewFlag(name, msg string) *Flag { return &Flag{name: name, msg: msg} }

// Set makes the check fail from now on.
func (f *Flag) Set() { f.set.Store(true) }

// Name returns the check's name.
func (f *Flag) Name() string { return f.name }

// Check fails once Set was called.
func (f *Flag) Check(*http.Request) error {
	if f.set.Load() {
		return fmt.Errorf("%s", f.msg)
	}
	return nil
}

// Handler serves one health endpoint and its per-check paths.
type Handler struct {
	// endpoint is "healthz", "livez" or "readyz".
	endpoint string
	checks   []Check
	// OnFailure, when set, is told each failing check and its error (the body
	// withholds the reason).
	OnFailure func(r *http.Request, check string, err error)
}

// New returns the handler for endpoint ("healthz", "livez", "readyz") running
// checks in order. Check names must be unique.
func New(endpoint string, checks ...Check) (*Handler, error) {
	seen := map[string]bool{}
	for _, c := range checks {
		if c.Name() == "" || seen[c.Name()] {
			return nil, fmt.Errorf("healthz: %s: check name %q is empty or repeated", endpoint, c.Name())
		}
		seen[c.Name()] = true
	}
	return &Handler{endpoint: endpoint, checks: slices.Clone(checks)}, nil
}

// Checks returns the names of the checks, in order.
func (h *Handler) Checks() []string {
	names := make([]string, len(h.checks))
	for i, c := range h.checks {
		names[i] = c.Name()
	}
	return names
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+h.endpoint), "/")
	if rest != "" {
		h.serveOne(w, r, rest)
		return
	}
	q := r.URL.Query()
	excluded := map[string]bool{}
	for _, e := range q["exclude"] {
		excluded[e] = true
	}
	var b strings.Builder
	failed := false
	for _, c := range h.checks {
		name := c.Name()
		if excluded[name] {
			delete(excluded, name)
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", name)
			continue
		}
		if err := c.Check(r); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", name)
			if h.OnFailure != nil {
				h.OnFailure(r, name, err)
			}
			continue
		}
		if n, ok := c.(Noter); ok && n.Note() != "" {
			fmt.Fprintf(&b, "[+]%s ok: %s\n", name, n.Note())
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", name)
	}
	if len(excluded) > 0 {
		var missing []string
		for name := range excluded {
			missing = append(missing, fmt.Sprintf("%q", name))
		}
		slices.Sort(missing)
		fmt.Fprintf(&b, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(missing, ","))
	}
	if failed {
		fmt.Fprintf(&b, "%s check failed\n", h.endpoint)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(b.String()))
		return
	}
	if _, verbose := q["verbose"]; verbose {
		fmt.Fprintf(&b, "%s check passed\n", h.endpoint)
		_, _ = w.Write([]byte(b.String()))
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (h *Handler) serveOne(w http.ResponseWriter, r *http.Request, name string) {
	for _, c := range h.checks {
		if c.Name() != name {
			continue
		}
		if err := c.Check(r); err != nil {
			if h.OnFailure != nil {
				h.OnFailure(r, name, err)
			}
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "internal server error: %v", err)
			return
		}
		_, _ = w.Write([]byte("ok"))
		return
	}
	http.NotFound(w, r)
}
