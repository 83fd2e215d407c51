// Package authn finds out who sent a request: the [Authenticator] interface,
// its compositions, the x509 client certificate and anonymous authenticators,
// and the authentication filter that answers 401.
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
// [WithAuthentication] puts the user into the context with filters.WithUser,
// deletes Authorization and every front-proxy identity header (X-Remote-User,
// X-Remote-Uid, X-Remote-Group, X-Remote-Extra-*) so no later stage trusts a
// spoofed one, and answers failures with Kubernetes' exact 401 Status:
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
