// This file holds the built-in authorizers of delegated authorization:
// always-allow paths and privileged groups.

package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Names of the built-in authorizers in a union, as Kubernetes names them.
const (
	NameAlwaysAllowGroups = "kubernetes.io/always-allow-groups"
	NameAlwaysAllowPaths  = "kubernetes.io/always-allow-paths"
)

// DefaultPrivilegedGroup is the group allowed everything when no other is
// configured.
const DefaultPrivilegedGroup = "system:masters"

// DefaultAlwaysAllowPaths returns the non-resource paths delegated
// authorization allows for everyone: the health endpoints.
func DefaultAlwaysAllowPaths() []string { return []string{"/healthz", "/readyz", "/livez"} }

// AlwaysAllowPaths allows non-resource requests for configured paths and has
// no opinion on anything else.
type AlwaysAllowPaths struct {
	exact    map[string]bool
	prefixes []string
}

var _ Authorizer = (*AlwaysAllowPaths)(nil)

// NewAlwaysAllowPaths returns an authorizer for paths. A path matches
// exactly, or as a prefix when it ends in *; a leading / is optional, and "/"
// matches only the root. A * anywhere else is ErrInvalidPath.
func NewAlwaysAllowPaths(paths []string) (*AlwaysAllowPaths, error) {
	a := &AlwaysAllowPaths{exact: map[string]bool{}}
	for _, p := range paths {
		p = strings.TrimPrefix(p, "/")
		if p == "" {
			a.exact[""] = true
			continue
		}
		if strings.Contains(p[:len(p)-1], "*") {
			return nil, fmt.Errorf("%w: %q", ErrInvalidPath, p)
		}
		if strings.HasSuffix(p, "*") {
			a.prefixes = append(a.prefixes, p[:len(p)-1])
		} else {
			a.exact[p] = true
		}
	}
	return a, nil
}

// Authorize allows a non-resource request whose path matches.
func (a *AlwaysAllowPaths) Authorize(_ context.Context, attrs Attributes) (Decision, string, error) {
	if attrs.IsResourceRequest {
		return DecisionNoOpinion, "", nil
	}
	p := strings.TrimPrefix(attrs.Path, "/")
	if a.exact[p] {
		return DecisionAllow, "", nil
	}
	for _, prefix := range a.prefixes {
		if strings.HasPrefix(p, prefix) {
			return DecisionAllow, "", nil
		}
	}
	return DecisionNoOpinion, "", nil
}

// PrivilegedGroups allows every request of a user in one of its groups and
// has no opinion on others.
type PrivilegedGroups struct {
	groups []string
}

var _ Authorizer = (*PrivilegedGroups)(nil)

// NewPrivilegedGroups returns the authorizer for groups; none means
// DefaultPrivilegedGroup.
func NewPrivilegedGroups(groups ...string) *PrivilegedGroups {
	if len(groups) == 0 {
		groups = []string{DefaultPrivilegedGroup}
	}
	return &PrivilegedGroups{groups: slices.Clone(groups)}
}

// Authorize allows a user in a privileged group. Without a user it has no
// opinion and returns ErrNoUser, as Kubernetes does, which the filter turns
// into a 500: authorization without authentication is a misordered chain.
func (p *PrivilegedGroups) Authorize(_ context.Context, attrs Attributes) (Decision, string, error) {
	if attrs.User == nil {
		return DecisionNoOpinion, "Error", ErrNoUser
	}
	for _, g := range attrs.User.Groups {
		if slices.Contains(p.groups, g) {
			return DecisionAllow, "", nil
		}
	}
	return DecisionNoOpinion, "", nil
}
