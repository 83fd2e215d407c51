// This file assembles the front door: who a request comes from
// (authentication), who it acts as (impersonation) and what it may do
// (authorization), in standalone mode (local CA, token file, OIDC, RBAC files)
// or delegated mode (front proxy, TokenReview and SubjectAccessReview against
// the cluster, as a server behind kube-aggregator).

package annex

import (
	"net/http"
	"time"

	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/kubeclient"
)

// Delegation configures delegated authentication and authorization: the
// server trusts kube-aggregator's front proxy and asks the cluster about
// tokens and permissions. Field names follow kube-apiserver's flags.
type Delegation struct {
	// AuthenticationKubeconfig reaches the cluster for the
	// extension-apiserver-authentication ConfigMap and TokenReviews
	// (--authentication-kubeconfig). Empty means in-cluster configuration.
	AuthenticationKubeconfig string
	// AuthorizationKubeconfig reaches the cluster for SubjectAccessReviews
	// (--authorization-kubeconfig). Empty means in-cluster configuration.
	AuthorizationKubeconfig string
	// RequestHeader overrides the front proxy of the cluster's
	// extension-apiserver-authentication ConfigMap: its ClientCAFile the CA
	// the ConfigMap names (--requestheader-client-ca-file; empty means the
	// ConfigMap's), its Names the ConfigMap's --requestheader-* settings when
	// any list is set (all empty means the ConfigMap's). With SkipLookup it
	// is the whole front proxy, none when ClientCAFile is empty.
	RequestHeader RequestHeader
	// TokenCacheTTL is how long TokenReview answers are cached
	// (--authentication-token-webhook-cache-ttl). Zero means 10s.
	TokenCacheTTL time.Duration
	// AuthorizedTTL and UnauthorizedTTL are how long SubjectAccessReview
	// answers are cached. Zero means 10s each.
	AuthorizedTTL   time.Duration
	UnauthorizedTTL time.Duration
	// TolerateMissingRequestHeaderCA keeps /readyz passing when the cluster
	// has no front-proxy CA (no aggregation layer). Zero means not ready.
	TolerateMissingRequestHeaderCA bool
	// SkipLookup leaves the extension-apiserver-authentication ConfigMap
	// unread (--authentication-skip-lookup): client certificates verify
	// against Authentication.ClientCAFile only, and the front proxy is
	// RequestHeader (Kubernetes' defaults for empty header lists), or none
	// when its ClientCAFile is empty.
	// TokenReview and SubjectAccessReview still go to the cluster.
	SkipLookup bool
	// TolerateLookupFailure keeps /readyz passing when the ConfigMap cannot
	// be read (--authentication-tolerate-lookup-failure): client
	// certificates and the front proxy then authenticate nobody until it
	// can, and requests may be anonymous.
	TolerateLookupFailure bool
	// Kubeconfig reaches the cluster for the objects the server follows
	// (namespaces for NamespaceLifecycle, flowcontrol objects), as kube's
	// --kubeconfig. Empty means AuthenticationKubeconfig's client.
	Kubeconfig string
}

// frontDoor is what the stages of authentication, impersonation and
// authorization are built from.
type frontDoor struct {
	authenticator authn.Authenticator
	authorizer    authz.Authorizer
	// headerNames are the front-proxy header names the authentication filter
	// clears (nil: only the defaults).
	headerNames authn.RequestHeaderNamesProvider
	// advertised is the union of client CAs offered in the TLS handshake.
	advertised   authn.CAProvider
	authnMetrics *authn.Metrics
	authzMetrics *authz.Metrics
	// cluster reaches the kube-apiserver in delegated mode (nil otherwise).
	cluster *kubeclient.Client
	// onAuthnFailure, when set, is told of every request answered 401 (the
	// audit stage's FailedAuthentication).
	onAuthnFailure func(*http.Request)
}

// buildFrontDoor sets up authentication and authorization from c, adding the
// long-running parts (CA reloaders, the ConfigMap poller) to s.runners and
// their health to s.readyChecks. In standalone mode without a client CA file
// it generates the client CA and the admin certificate.
func (s *Server) buildFrontDoor(c *Builder, p *plan) (*frontDoor, error) {
	fd := &frontDoor{}
	var err error
	if fd.authnMetrics, err = authn.NewMetrics(c.Observability.Registerer); err != nil {
		return nil, err
	}
	if fd.authzMetrics, err = authz.NewMetrics(c.Observability.Registerer); err != nil {
		return nil, err
	}

	an := c.Authentication
	var cfg authn.Config
	cfg.Anonymous = &authn.AnonymousConfig{Paths: healthPaths()}
	var authorizers []authz.NamedAuthorizer
	switch {
	case p.clientCA != nil:
		cfg.ClientCA = p.clientCA
		s.runners = append(s.runners, p.clientCA.Start)
	case an.Delegation == nil && an.Authenticator == nil:
		if cfg.ClientCA, err = s.standaloneClientCA(c); err != nil {
			return nil, err
		}
	}

	if d := an.Delegation; d != nil {
		if err := s.delegate(d, p, &cfg, &authorizers, fd); err != nil {
			return nil, err
		}
	}
	if r := an.RequestHeader; r != nil {
		s.staticRequestHeader(*r, p, &cfg, fd)
	}
	if p.tokenFile != nil {
		cfg.Tokens = append(cfg.Tokens, p.tokenFile)
	}
	if o := p.oidc; o != nil {
		cfg.Tokens = append(cfg.Tokens, authn.NewTokenCache(o, authn.TokenCacheConfig{Metrics: fd.authnMetrics}))
		s.readyChecks = append(s.readyChecks, healthz.ReadyCheck("oidc", o))
	}
	if p.rbac != nil {
		authorizers = append(authorizers, authz.NamedAuthorizer{Name: authz.NameRBAC, Authorizer: p.rbac})
	}
	if an.Delegation == nil {
		// Authorizing on its own, the server grants what kube-apiserver's
		// bootstrap policy grants everyone: discovery, version and health,
		// and asking about oneself (kubectl auth can-i, auth whoami).
		bootstrap, err := authz.BootstrapRBAC()
		if err != nil {
			return nil, err
		}
		authorizers = append(authorizers, authz.NamedAuthorizer{Name: authz.NameBootstrapRBAC, Authorizer: bootstrap})
	}

	fd.authenticator = an.Authenticator
	if fd.authenticator == nil {
		if fd.authenticator, err = authn.New(cfg); err != nil {
			return nil, err
		}
	}
	var caProviders []authn.CAProvider
	if cfg.ClientCA != nil {
		caProviders = append(caProviders, cfg.ClientCA)
	}
	if cfg.RequestHeader != nil {
		caProviders = append(caProviders, cfg.RequestHeader.CA)
	}
	if len(caProviders) > 0 {
		fd.advertised = authn.UnionCA(caProviders...)
	}

	fd.authorizer = c.Authorization.Authorizer
	if fd.authorizer == nil {
		paths := c.Authorization.AlwaysAllowPaths
		if paths == nil {
			paths = healthPaths()
		}
		if fd.authorizer, err = authz.New(authz.Config{AlwaysAllowPaths: paths, Authorizers: authorizers}); err != nil {
			return nil, err
		}
	}
	return fd, nil
}

// standaloneClientCA generates (or reuses) the client CA and the admin
// client certificate (user "admin", group system:masters) in the data dir.
func (s *Server) standaloneClientCA(c *Builder) (authn.CAProvider, error) {
	certDir := c.certDir()
	ca, err := certs.EnsureCA(certs.CAConfig{Dir: certDir, Name: c.Name + "-client-ca"})
	if err != nil {
		return nil, err
	}
	admin, err := ca.EnsureClientCert(certs.ClientConfig{Dir: certDir, Name: "admin", User: "admin", Groups: []string{"system:masters"}})
	if err != nil {
		return nil, err
	}
	b, err := certs.NewCABundle(ca.CertFile, certs.ReloadConfig{})
	if err != nil {
		return nil, err
	}
	s.admin = admin
	return b, nil
}

// delegate configures the front proxy (from the cluster, or from files when
// the lookup is skipped), TokenReview and SubjectAccessReview against the
// cluster, with the clients validate made.
func (s *Server) delegate(d *Delegation, p *plan, cfg *authn.Config, authorizers *[]authz.NamedAuthorizer, fd *frontDoor) error {
	authnClient, authzClient := p.authnClient, p.authzClient
	fd.cluster = p.clusterClient
	if d.SkipLookup {
		if d.RequestHeader.ClientCAFile != "" {
			s.staticRequestHeader(d.RequestHeader, p, cfg, fd)
		}
	} else if err := s.lookupCluster(d, p, cfg, fd); err != nil {
		return err
	}
	return s.delegateReviews(d, authnClient, authzClient, cfg, authorizers, fd)
}

// lookupCluster configures the client CA and the front proxy from the
// cluster's extension-apiserver-authentication ConfigMap, each overridden by
// the files and fields that are set.
func (s *Server) lookupCluster(d *Delegation, p *plan, cfg *authn.Config, fd *frontDoor) error {
	del, err := authn.NewDelegated(authn.DelegatedConfig{Client: p.authnClient, Logger: s.log.Named("delegation"),
		TolerateMissingRequestHeaderCA: d.TolerateMissingRequestHeaderCA})
	if err != nil {
		return err
	}
	s.runners = append(s.runners, del.Start)
	if !d.TolerateLookupFailure {
		s.readyChecks = append(s.readyChecks, healthz.ReadyCheck("delegated-authentication", del))
	}
	if cfg.ClientCA == nil {
		cfg.ClientCA = del.ClientCA()
	}
	var rhCA authn.CAProvider = del.RequestHeaderCA()
	if p.requestHeaderCA != nil {
		rhCA = p.requestHeaderCA
		s.runners = append(s.runners, p.requestHeaderCA.Start)
	}
	var names authn.RequestHeaderNamesProvider = del
	if n := d.RequestHeader.Names; len(n.AllowedNames)+len(n.UsernameHeaders)+len(n.GroupHeaders)+len(n.ExtraHeaderPrefixes)+len(n.UIDHeaders) > 0 {
		names = authn.StaticRequestHeaderNames(n)
	}
	cfg.RequestHeader = &authn.RequestHeaderConfig{CA: rhCA, Names: names}
	fd.headerNames = names
	return nil
}

// delegateReviews asks the cluster about bearer tokens (TokenReview, cached)
// and permissions (SubjectAccessReview, cached).
func (s *Server) delegateReviews(d *Delegation, authnClient, authzClient *kubeclient.Client, cfg *authn.Config, authorizers *[]authz.NamedAuthorizer, fd *frontDoor) error {
	tr, err := authn.NewTokenReview(authn.TokenReviewConfig{Client: authnClient, Metrics: fd.authnMetrics})
	if err != nil {
		return err
	}
	ttl := d.TokenCacheTTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	cfg.Tokens = append(cfg.Tokens, authn.NewTokenCache(tr, authn.TokenCacheConfig{SuccessTTL: ttl, FailureTTL: ttl, Metrics: fd.authnMetrics}))
	wh, err := authz.NewWebhook(authz.WebhookConfig{Client: authzClient, AllowTTL: d.AuthorizedTTL, DenyTTL: d.UnauthorizedTTL, Metrics: fd.authzMetrics})
	if err != nil {
		return err
	}
	*authorizers = append(*authorizers, authz.NamedAuthorizer{Name: authz.NameWebhook, Authorizer: wh})
	return nil
}

// fill sets the authentication, impersonation and authorization stages.
func (fd *frontDoor) fill(set func(name string, f Filter)) error {
	var onFailure func(*http.Request, error)
	if fd.onAuthnFailure != nil {
		onFailure = func(r *http.Request, _ error) { fd.onAuthnFailure(r) }
	}
	authnFilter, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: fd.authenticator, RequestHeaders: fd.headerNames,
		Metrics: fd.authnMetrics, OnFailure: onFailure})
	if err != nil {
		return err
	}
	// The audit stage, when on, records the impersonated user and the
	// authorization decision through package filters.
	impersonation, err := authz.WithImpersonation(authz.ImpersonationConfig{Authorizer: fd.authorizer,
		OnImpersonation: func(r *http.Request, _, imp *filters.User) { filters.RecordImpersonatedUser(r.Context(), imp) }})
	if err != nil {
		return err
	}
	authzFilter, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: fd.authorizer, Metrics: fd.authzMetrics,
		OnDecision: func(r *http.Request, d authz.Decision, reason string, err error) {
			filters.RecordAuthorizationDecision(r.Context(), d == authz.DecisionAllow, reason, err)
		}})
	if err != nil {
		return err
	}
	set(StageAuthentication, authnFilter)
	set(StageImpersonation, impersonation)
	set(StageAuthorization, authzFilter)
	return nil
}
