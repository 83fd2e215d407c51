// This file holds New, the standard composition of authenticators.

package authn

import "time"

// Config configures New. Each field enables one kind of credential; the
// standalone mode sets ClientCA, Tokens (token file, OIDC) and Anonymous,
// the delegated mode RequestHeader, ClientCA and Tokens (TokenReview,
// cached).
type Config struct {
	// RequestHeader enables front-proxy authentication (tried first). nil
	// means none.
	RequestHeader *RequestHeaderConfig
	// ClientCA enables x509 client certificate authentication against the
	// pool it provides. nil means no x509 authentication.
	ClientCA CAProvider
	// AllowSharedCA lets RequestHeader.CA and ClientCA share a certificate.
	// Zero means New refuses with ErrSharedCA (when both providers can list
	// their certificates, or have equal pools at construction): a client
	// certificate of the cluster CA could otherwise assert any identity.
	AllowSharedCA bool
	// Tokens authenticate "Authorization: Bearer" tokens, tried in order
	// after x509 (token file, OIDC, a cached TokenReview). Empty means no
	// bearer tokens.
	Tokens []TokenAuthenticator
	// Authenticators are tried after the bearer tokens, in order.
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
// request-header, x509, bearer tokens and any others in a Union, wrapped to
// add AuthenticatedGroup, then, if anonymous is on, anonymous behind
// FailOnError, so that a rejected credential is a 401 and never anonymous.
func New(cfg Config) (Authenticator, error) {
	var auths []Authenticator
	if cfg.RequestHeader != nil {
		if !cfg.AllowSharedCA {
			if err := CheckDistinctCAs(cfg.ClientCA, cfg.RequestHeader.CA); err != nil {
				return nil, err
			}
		}
		rh := *cfg.RequestHeader
		if rh.Now == nil {
			rh.Now = cfg.Now
		}
		a, err := NewRequestHeader(rh)
		if err != nil {
			return nil, err
		}
		auths = append(auths, a)
	}
	if cfg.ClientCA != nil {
		x, err := NewX509(X509Config{CA: cfg.ClientCA, Now: cfg.Now})
		if err != nil {
			return nil, err
		}
		auths = append(auths, x)
	}
	if b := NewBearerToken(cfg.Tokens...); len(b.auths) > 0 {
		auths = append(auths, b)
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
