// This file holds New, the standard composition of authenticators.

package authn

import "time"

// Config configures New.
type Config struct {
	// ClientCA enables x509 client certificate authentication against the
	// pool it provides. nil means no x509 authentication.
	ClientCA CAProvider
	// Authenticators are tried after x509, in order (bearer tokens and the
	// like).
	Authenticators []Authenticator
	// Anonymous, when set, authenticates requests that presented no
	// credential as AnonymousUser, on the paths it allows. nil means no
	// anonymous access: unlike Kubernetes, whose delegated authentication
	// enables anonymous for every path by default, annex is closed unless
	// asked (CIS 1.2.1). Standalone mode sets Paths to
	// StandaloneAnonymousPaths().
	Anonymous *AnonymousConfig
	// Now returns the time certificates are verified at; nil means time.Now.
	Now func() time.Time
}

// New returns the authenticator Kubernetes' delegated authentication builds:
// the credential authenticators in a Union (x509 first), wrapped to add
// AuthenticatedGroup, then, if anonymous is on, anonymous behind
// FailOnError, so that a rejected credential is a 401 and never anonymous.
func New(cfg Config) (Authenticator, error) {
	var auths []Authenticator
	if cfg.ClientCA != nil {
		x, err := NewX509(X509Config{CA: cfg.ClientCA, Now: cfg.Now})
		if err != nil {
			return nil, err
		}
		auths = append(auths, x)
	}
	for _, a := range cfg.Authenticators {
		if a != nil {
			auths = append(auths, a)
		}
	}
	if len(auths) == 0 && cfg.Anonymous == nil {
		return nil, ErrNoAuthenticator
	}
	var a Authenticator = WithAuthenticatedGroup(Union(auths...))
	if cfg.Anonymous != nil {
		a = FailOnError(a, NewAnonymous(*cfg.Anonymous))
	}
	return a, nil
}
