// This file holds New, the standard composition of authorizers.

package authz

// Config configures New. Its zero value is delegated authorization without a
// webhook: system:masters and the health paths are allowed, nothing else.
type Config struct {
	// PrivilegedGroups are allowed every request. nil means
	// [DefaultPrivilegedGroup]; see NoPrivilegedGroups.
	PrivilegedGroups []string
	// NoPrivilegedGroups leaves the privileged-groups authorizer out.
	NoPrivilegedGroups bool
	// AlwaysAllowPaths are non-resource paths allowed for everyone (exact, or
	// a prefix when ending in *). nil means DefaultAlwaysAllowPaths(); see
	// NoAlwaysAllowPaths.
	AlwaysAllowPaths []string
	// NoAlwaysAllowPaths leaves the always-allow-paths authorizer out.
	NoAlwaysAllowPaths bool
	// Authorizers are asked after the built-in ones, in order (a
	// SubjectAccessReview webhook, RBAC, your own).
	Authorizers []NamedAuthorizer
}

// New returns the union Kubernetes' delegated authorization builds: the
// privileged groups (kubernetes.io/always-allow-groups), then the
// always-allowed paths (kubernetes.io/always-allow-paths), then
// cfg.Authorizers.
func New(cfg Config) (Authorizer, error) {
	var chain []NamedAuthorizer
	if !cfg.NoPrivilegedGroups {
		chain = append(chain, NamedAuthorizer{Name: NameAlwaysAllowGroups, Authorizer: NewPrivilegedGroups(cfg.PrivilegedGroups...)})
	}
	if !cfg.NoAlwaysAllowPaths {
		paths := cfg.AlwaysAllowPaths
		if paths == nil {
			paths = DefaultAlwaysAllowPaths()
		}
		p, err := NewAlwaysAllowPaths(paths)
		if err != nil {
			return nil, err
		}
		chain = append(chain, NamedAuthorizer{Name: NameAlwaysAllowPaths, Authorizer: p})
	}
	chain = append(chain, cfg.Authorizers...)
	return NewUnion(chain...)
}
