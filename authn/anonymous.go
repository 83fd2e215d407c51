// This file holds the anonymous authenticator.

package authn

import (
	"net/http"

	"github.com/annexapi/annex/filters"
)

// StandaloneAnonymousPaths returns the paths a standalone server lets
// anonymous users reach: the health endpoints, which load balancers and
// kubelet probes call without credentials.
func StandaloneAnonymousPaths() []string { return []string{"/healthz", "/livez", "/readyz"} }

// AnonymousConfig configures NewAnonymous.
type AnonymousConfig struct {
	// Paths limits anonymous authentication to requests whose URL path is
	// exactly one of these (no prefixes, as Kubernetes' anonymous
	// conditions). Empty means every path.
	Paths []string
}

// Anonymous authenticates every request it applies to as AnonymousUser in
// UnauthenticatedGroup. Put it last, behind FailOnError.
type Anonymous struct {
	paths map[string]bool
}

var _ Authenticator = (*Anonymous)(nil)

// NewAnonymous returns the anonymous authenticator for cfg.
func NewAnonymous(cfg AnonymousConfig) *Anonymous {
	a := &Anonymous{}
	if len(cfg.Paths) > 0 {
		a.paths = make(map[string]bool, len(cfg.Paths))
		for _, p := range cfg.Paths {
			a.paths[p] = true
		}
	}
	return a
}

// Authenticate returns a new anonymous user, or not-ok for a path outside
// the configured ones.
func (a *Anonymous) Authenticate(r *http.Request) (*filters.User, bool, error) {
	if a.paths != nil && !a.paths[r.URL.Path] {
		return nil, false, nil
	}
	return &filters.User{Name: AnonymousUser, Groups: []string{UnauthenticatedGroup}}, true, nil
}
