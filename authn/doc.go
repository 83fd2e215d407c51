// Package authn finds out who sent a request: the [Authenticator] interface,
// its compositions, the front-proxy (request-header), x509 client
// certificate, bearer token (token file, TokenReview webhook, OIDC) and
// anonymous authenticators, the delegated configuration read from the
// cluster, and the authentication filter that answers 401.
//
// # Authenticators
//
// An [Authenticator] looks at a request and returns a user (ok), nothing it
// recognizes (not ok, the next authenticator may), or an error (a credential
// it recognizes but rejects). [Union] tries several and keeps the first user;
// [FailOnError] stops at the first error; [WithAuthenticatedGroup] adds
// system:authenticated. [New] builds the composition Kubernetes' delegated
// authentication uses:
//
//	FailOnError(WithAuthenticatedGroup(Union(x509, tokens...)), anonymous)
//
// so a request that presents an invalid credential is a 401, never
// anonymous, and anonymous applies only to requests without credentials.
// With [Config].RequestHeader set, the front-proxy authenticator comes first
// in the union; with [Config].Tokens, a [BearerToken] comes after x509.
//
// # Two modes
//
// Standalone (no cluster): x509 against --client-ca-file, a [TokenFile]
// (--token-auth-file) and [OIDC] as Tokens, anonymous on the health paths.
//
// Delegated (behind kube-aggregator): a [Delegated] reads
// kube-system/extension-apiserver-authentication through package kubeclient
// and keeps its CAs and header names current; its providers feed
// [RequestHeaderConfig] and ClientCA, and a [TokenCache] in front of a
// [TokenReviewer] checks bearer tokens with the cluster:
//
//	d, _ := authn.NewDelegated(authn.DelegatedConfig{Client: kc})
//	tr, _ := authn.NewTokenReview(authn.TokenReviewConfig{Client: kc})
//	a, _ := authn.New(authn.Config{
//		RequestHeader: &authn.RequestHeaderConfig{CA: d.RequestHeaderCA(), Names: d},
//		ClientCA:      d.ClientCA(),
//		Tokens:        []authn.TokenAuthenticator{authn.NewTokenCache(tr, authn.TokenCacheConfig{})},
//	})
//	// run d.Start(ctx); add d.Ready to /readyz
//
// # Front proxy
//
// [RequestHeader] trusts X-Remote-User and friends only from a client
// certificate that verifies against the request-header CA (never the client
// CA: [New] refuses a shared CA with [ErrSharedCA]) and whose CN is in the
// allowed names when that list is non-empty. It takes the first non-empty
// user header, every non-empty group, extra keys lower-cased and
// %-unescaped, and deletes every header its settings name whatever the
// outcome.
//
// # Tokens
//
// [TokenCache] keys entries by an HMAC of the token, keeps accepted and
// rejected answers for their own TTLs (10s by default, as delegated
// authentication), never caches errors, and shares one lookup among
// concurrent callers. A cluster that cannot be reached fails closed: the
// request is a 401. [OIDC] verifies JWTs with github.com/go-jose/go-jose/v4
// (a well-kept JOSE library: algorithm allow-lists and signature checks are
// where hand-written JWT code goes wrong) against the keys found through
// OpenID discovery, re-fetching them (at most every 10s) for an unknown key
// ID.
//
// # Client certificates
//
// The TLS layer requests client certificates without verifying them
// (certs.ServerTLSConfig). [X509] verifies them per request against the pool
// a [CAProvider] returns at that moment (certs.CABundle reloads a file), so a
// rotated CA takes effect without a restart and an unverifiable certificate
// is a 401 with a logged reason, not a failed handshake. A verified chain is
// remembered per CA pool until its first expiry, so a busy client costs one
// signature verification rather than one per request (about 3µs instead of
// 115µs per request on the development machine).
//
// # Anonymous access
//
// Kubernetes' delegated authentication enables anonymous access for every
// path by default. annex does not: [Config].Anonymous is nil unless set, and
// standalone mode sets it to [StandaloneAnonymousPaths] (/healthz, /livez,
// /readyz) only. /version stays authenticated: kube-apiserver exposes it to
// anonymous users through RBAC (system:public-info-viewer), which a
// standalone server does not have; kubectl sends credentials anyway.
//
// # The filter
//
//	authenticate, err := authn.WithAuthentication(authn.FilterConfig{Authenticator: a})
//	handler = authenticate(handler)
//
// [WithAuthentication] puts the user into the context with filters.ContextWithUser,
// deletes every front-proxy identity header (X-Remote-User, X-Remote-Uid,
// X-Remote-Group, X-Remote-Extra-*, and the configured ones) whatever the
// outcome, and Authorization after a success, so no later stage trusts a
// spoofed identity, and answers failures with Kubernetes' exact 401 Status:
//
//	{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}
//
// HTTP/2 requests that fail, or succeed only as anonymous, get
// "Connection: close": one request per connection for clients without
// credentials (Kubernetes' mitigation of CVE-2023-44487).
//
// # Caveats
//
// The package does not import authz or any other stage; audit and metrics
// hook in through [FilterConfig] callbacks. Authenticators run per request,
// never per connection: front-proxy identity must not be cached on a
// connection (CVE-2018-1002105).
package authn
