// This file holds the OIDC/JWT token authenticator: ID tokens signed by an
// issuer's keys (found through OpenID discovery and its JWKS), verified with
// go-jose, mapped to a user by configurable claims and prefixes.
//
// go-jose (github.com/go-jose/go-jose/v4) does the JOSE work: compact JWS
// parsing with an algorithm allow-list, signature verification against a
// JWK, and the registered-claim checks. Writing that by hand is how
// algorithm-confusion bugs happen.

package authn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/annexapi/annex/filters"
)

// OIDCConfig configures NewOIDC, with the meaning of kube-apiserver's
// --oidc-* flags.
type OIDCConfig struct {
	// IssuerURL is the issuer (an https URL); tokens whose iss differs are
	// not-ok, not errors, so other token authenticators may try. Required.
	IssuerURL string
	// DiscoveryURL overrides where the discovery document is read. Empty
	// means IssuerURL + "/.well-known/openid-configuration".
	DiscoveryURL string
	// CAData verifies the issuer's TLS certificate. Empty means the system
	// roots. Ignored when HTTPClient is set.
	CAData []byte
	// HTTPClient reaches the issuer. nil means a client with CAData, a 10s
	// timeout, and no redirects followed.
	HTTPClient *http.Client
	// Audiences: the token's aud must contain one (the client ID). Required.
	Audiences []string
	// UsernameClaim is the claim the user name comes from. Empty means
	// "sub". For "email", email_verified must be true when present.
	UsernameClaim string
	// UsernamePrefix is prepended to the user name. Empty means none.
	UsernamePrefix string
	// GroupsClaim is the claim (a string or a list of strings) groups come
	// from. Empty means no groups.
	GroupsClaim string
	// GroupsPrefix is prepended to every group. Empty means none.
	GroupsPrefix string
	// UIDClaim is the claim the UID comes from. Empty means none.
	UIDClaim string
	// RequiredClaims must be present in the token with these string values.
	RequiredClaims map[string]string
	// SigningAlgorithms are accepted. Empty means RS256 (Kubernetes' default).
	SigningAlgorithms []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// oidcRetry is how long a failed discovery or unknown key waits before the
// issuer is asked again.
const oidcRetry = 10 * time.Second

// OIDC authenticates JWTs from one issuer.
type OIDC struct {
	cfg    OIDCConfig
	client *http.Client
	algs   []jose.SignatureAlgorithm
	now    func() time.Time

	// mu guards keys, fetched and lastErr.
	mu      sync.Mutex
	keys    *jose.JSONWebKeySet
	fetched time.Time
	lastErr error
}

var _ TokenAuthenticator = (*OIDC)(nil)

// NewOIDC returns the OIDC authenticator for cfg. It does not contact the
// issuer: discovery happens on first use, or in Init.
func NewOIDC(cfg OIDCConfig) (*OIDC, error) {
	if !strings.HasPrefix(cfg.IssuerURL, "https://") {
		return nil, fmt.Errorf("%w: issuer URL %q must be https", ErrOIDC, cfg.IssuerURL)
	}
	if len(cfg.Audiences) == 0 {
		return nil, fmt.Errorf("%w: no audience (client ID)", ErrOIDC)
	}
	o := &OIDC{cfg: cfg, client: cfg.HTTPClient, now: cfg.Now}
	if o.cfg.UsernameClaim == "" {
		o.cfg.UsernameClaim = "sub"
	}
	if o.now == nil {
		o.now = time.Now
	}
	algs := cfg.SigningAlgorithms
	if len(algs) == 0 {
		algs = []string{string(jose.RS256)}
	}
	for _, a := range algs {
		if a == "none" || strings.HasPrefix(a, "HS") {
			return nil, fmt.Errorf("%w: signing algorithm %q not allowed", ErrOIDC, a)
		}
		o.algs = append(o.algs, jose.SignatureAlgorithm(a))
	}
	if o.client == nil {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if len(cfg.CAData) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(cfg.CAData) {
				return nil, fmt.Errorf("%w: no certificate in CA data", ErrOIDC)
			}
			tc.RootCAs = pool
		}
		o.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return o, nil
}

// Init performs discovery and fetches the keys now, e.g. at start-up to log
// a misconfiguration early. Ready reports the same.
func (o *OIDC) Init(ctx context.Context) error {
	_, err := o.keySet(ctx, "", true)
	return err
}

// Ready returns nil once the issuer's keys have been fetched, else the last
// error.
func (o *OIDC) Ready(ctx context.Context) error {
	o.mu.Lock()
	ok, err := o.keys != nil, o.lastErr
	o.mu.Unlock()
	if ok {
		return nil
	}
	if err == nil {
		return o.Init(ctx)
	}
	return err
}

// keySet returns the issuer's keys, fetching them when there are none yet,
// or when kid is unknown and the last fetch is older than oidcRetry.
func (o *OIDC) keySet(ctx context.Context, kid string, force bool) (*jose.JSONWebKeySet, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	stale := o.keys == nil || (kid != "" && len(o.keys.Key(kid)) == 0)
	if !stale && !force {
		return o.keys, nil
	}
	if !force && !o.fetched.IsZero() && now.Sub(o.fetched) < oidcRetry {
		if o.keys == nil {
			return nil, o.lastErr
		}
		return o.keys, nil
	}
	o.fetched = now
	keys, err := o.fetch(ctx)
	if err != nil {
		o.lastErr = err
		if o.keys != nil {
			return o.keys, nil
		}
		return nil, err
	}
	o.keys, o.lastErr = keys, nil
	return keys, nil
}

func (o *OIDC) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	disc := o.cfg.DiscoveryURL
	if disc == "" {
		disc = strings.TrimSuffix(o.cfg.IssuerURL, "/") + "/.well-known/openid-configuration"
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := o.getJSON(ctx, disc, &doc); err != nil {
		return nil, err
	}
	if doc.Issuer != o.cfg.IssuerURL {
		return nil, fmt.Errorf("%w: discovery names issuer %q, want %q", ErrOIDC, doc.Issuer, o.cfg.IssuerURL)
	}
	if !strings.HasPrefix(doc.JWKSURI, "https://") {
		return nil, fmt.Errorf("%w: jwks_uri %q must be https", ErrOIDC, doc.JWKSURI)
	}
	var set jose.JSONWebKeySet
	if err := o.getJSON(ctx, doc.JWKSURI, &set); err != nil {
		return nil, err
	}
	return &set, nil
}

func (o *OIDC) getJSON(ctx context.Context, url string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOIDC, err)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOIDC, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET %s: %s", ErrOIDC, url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("%w: GET %s: %v", ErrOIDC, url, err)
	}
	return nil
}

// AuthenticateToken verifies a JWT from the configured issuer. A token that
// is not a compact JWS, or names another issuer, is not-ok; one that names
// this issuer but fails verification or claim mapping is an error.
func (o *OIDC) AuthenticateToken(ctx context.Context, token string) (*filters.User, bool, error) {
	if strings.HasPrefix(strings.TrimSpace(token), "{") || strings.Count(token, ".") != 2 {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token, o.algs)
	if err != nil {
		return nil, false, nil // not a JWT we could verify: let others try
	}
	var peek struct {
		Issuer string `json:"iss"`
	}
	if tok.UnsafeClaimsWithoutVerification(&peek) != nil || peek.Issuer != o.cfg.IssuerURL {
		return nil, false, nil
	}
	kid := ""
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	keys, err := o.keySet(ctx, kid, false)
	if err != nil {
		return nil, false, err
	}
	var candidates []jose.JSONWebKey
	if kid != "" {
		candidates = keys.Key(kid)
	} else {
		candidates = keys.Keys
	}
	var (
		std  jwt.Claims
		raw  map[string]any
		verr error = fmt.Errorf("%w: no key with id %q", ErrOIDC, kid)
	)
	for _, k := range candidates {
		if verr = tok.Claims(k.Key, &std, &raw); verr == nil {
			break
		}
	}
	if verr != nil {
		return nil, false, fmt.Errorf("%w: verifying token: %v", ErrOIDC, verr)
	}
	if std.Expiry == nil {
		return nil, false, fmt.Errorf("%w: token has no exp", ErrOIDC)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: o.cfg.IssuerURL, AnyAudience: o.cfg.Audiences, Time: o.now()}, 0); err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrOIDC, err)
	}
	return o.mapClaims(raw)
}

func (o *OIDC) mapClaims(raw map[string]any) (*filters.User, bool, error) {
	for k, want := range o.cfg.RequiredClaims {
		if got, ok := raw[k].(string); !ok || got != want {
			return nil, false, fmt.Errorf("%w: required claim %s is not %q", ErrOIDC, k, want)
		}
	}
	name, ok := raw[o.cfg.UsernameClaim].(string)
	if !ok || name == "" {
		return nil, false, fmt.Errorf("%w: claim %q not present or not a string", ErrOIDC, o.cfg.UsernameClaim)
	}
	if o.cfg.UsernameClaim == "email" {
		if v, present := raw["email_verified"]; present {
			if b, ok := v.(bool); !ok || !b {
				return nil, false, fmt.Errorf("%w: email not verified", ErrOIDC)
			}
		}
	}
	u := &filters.User{Name: o.cfg.UsernamePrefix + name}
	if o.cfg.UIDClaim != "" {
		if uid, ok := raw[o.cfg.UIDClaim].(string); ok {
			u.UID = uid
		} else if raw[o.cfg.UIDClaim] != nil {
			return nil, false, fmt.Errorf("%w: claim %q is not a string", ErrOIDC, o.cfg.UIDClaim)
		}
	}
	if o.cfg.GroupsClaim != "" {
		switch g := raw[o.cfg.GroupsClaim].(type) {
		case nil:
		case string:
			u.Groups = []string{o.cfg.GroupsPrefix + g}
		case []any:
			for _, v := range g {
				s, ok := v.(string)
				if !ok {
					return nil, false, fmt.Errorf("%w: claim %q is not a list of strings", ErrOIDC, o.cfg.GroupsClaim)
				}
				u.Groups = append(u.Groups, o.cfg.GroupsPrefix+s)
			}
		default:
			return nil, false, fmt.Errorf("%w: claim %q is not a string or a list of strings", ErrOIDC, o.cfg.GroupsClaim)
		}
	}
	u.Groups = slices.Clip(u.Groups)
	return u, true, nil
}
