// This file holds the authentication filter: it puts the authenticated user
// into the request context or answers 401, exactly as Kubernetes does.

package authn

import (
	"net/http"
	"strings"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// The front-proxy headers the filter always deletes after authentication, so
// nothing downstream (a handler, an audit sink, a proxied request) can read a
// spoofed identity from them.
const (
	headerRemoteUser        = "X-Remote-User"
	headerRemoteUID         = "X-Remote-Uid"
	headerRemoteGroup       = "X-Remote-Group"
	headerRemoteExtraPrefix = "X-Remote-Extra-"
)

// FilterConfig configures WithAuthentication.
type FilterConfig struct {
	// Authenticator decides who sent each request. Required: there is no
	// "authentication disabled" mode.
	Authenticator Authenticator
	// OnFailure is called for each request answered 401, before the answer
	// is written, with the authenticator's error (nil when no credential was
	// accepted and none was rejected). FailureMessage(r) gives the message
	// Kubernetes audits. nil means nothing is called.
	OnFailure func(r *http.Request, err error)
	// OnSuccess is called for each authenticated request before the next
	// handler runs. nil means nothing is called.
	OnSuccess func(r *http.Request, u *filters.User)
	// ClearHeaders are further header names deleted after authentication,
	// whatever its outcome: custom front-proxy user, UID and group headers.
	// X-Remote-User, X-Remote-Uid and X-Remote-Group are always deleted, and
	// Authorization after a success.
	ClearHeaders []string
	// ClearHeaderPrefixes are further header prefixes (case-insensitive)
	// deleted after authentication, whatever its outcome: custom front-proxy
	// extra prefixes. X-Remote-Extra- is always deleted.
	ClearHeaderPrefixes []string
	// RequestHeaders, when set, provides the current front-proxy header
	// names (which the delegated configuration may change at run time); the
	// headers it names are deleted after authentication too. nil means only
	// the headers above.
	RequestHeaders RequestHeaderNamesProvider
	// Metrics records authentication_attempts and
	// authentication_duration_seconds by result (success, failure, error).
	// nil records nothing.
	Metrics *Metrics
}

// WithAuthentication returns the authentication filter.
//
// After authentication, whatever its outcome, it deletes the front-proxy
// identity headers. On success it deletes Authorization, adds the user to the context (filters.ContextWithUser) and
// calls the next handler; an anonymous user on HTTP/2 also gets
// "Connection: close", so the connection serves only this request. On
// failure it answers 401 with the Status Kubernetes writes, and over HTTP/2
// with "Connection: close" (the mitigation of CVE-2023-44487 Kubernetes
// applies to unauthenticated clients).
func WithAuthentication(cfg FilterConfig) (func(http.Handler) http.Handler, error) {
	if cfg.Authenticator == nil {
		return nil, ErrNoAuthenticator
	}
	clearHeaders := append([]string{headerRemoteUser, headerRemoteUID, headerRemoteGroup}, cfg.ClearHeaders...)
	for i, h := range clearHeaders {
		clearHeaders[i] = http.CanonicalHeaderKey(h)
	}
	prefixes := append([]string{headerRemoteExtraPrefix}, cfg.ClearHeaderPrefixes...)
	auth, onFailure, onSuccess, rh, m := cfg.Authenticator, cfg.OnFailure, cfg.OnSuccess, cfg.RequestHeaders, cfg.Metrics
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			u, ok, err := auth.Authenticate(r)
			if m != nil {
				switch {
				case err != nil:
					m.attempt("error", time.Since(start))
				case !ok || u == nil:
					m.attempt("failure", time.Since(start))
				default:
					m.attempt("success", time.Since(start))
				}
			}
			// Whatever the outcome, nothing after this point may read a
			// front-proxy identity header: not a handler, an audit sink, a webhook, or a
			// request proxied onwards.
			for k := range r.Header {
				if matchesAny(k, clearHeaders) || hasAnyPrefix(k, prefixes) {
					delete(r.Header, k)
				}
			}
			if rh != nil {
				if n := rh.RequestHeaderNames(); n != nil {
					ClearRequestHeaders(r.Header, n)
				}
			}
			if err != nil || !ok || u == nil {
				if onFailure != nil {
					onFailure(r, err)
				}
				if r.ProtoMajor == 2 {
					w.Header().Set("Connection", "close")
				}
				filters.WriteStatus(w, meta.NewUnauthorized("Unauthorized"))
				return
			}
			r.Header.Del("Authorization")
			if r.ProtoMajor == 2 && isAnonymous(u) {
				w.Header().Set("Connection", "close")
			}
			if onSuccess != nil {
				onSuccess(r, u)
			}
			next.ServeHTTP(w, filters.RequestWithContext(r, filters.ContextWithUser(r.Context(), u)))
		})
	}, nil
}

func isAnonymous(u *filters.User) bool {
	if u.Name == AnonymousUser {
		return true
	}
	for _, g := range u.Groups {
		if g == UnauthenticatedGroup {
			return true
		}
	}
	return false
}

// FailureMessage returns the message Kubernetes records in the audit event of
// a failed authentication: "Authentication failed, attempted: basic, bearer,
// access_token, x509" (the kinds of credential the request carried) or
// "Authentication failed, no credentials provided".
func FailureMessage(r *http.Request) string {
	var kinds []string
	if _, _, ok := r.BasicAuth(); ok {
		kinds = append(kinds, "basic")
	}
	parts := strings.Split(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if len(parts) > 1 && strings.ToLower(parts[0]) == "bearer" {
		kinds = append(kinds, "bearer")
	}
	if strings.TrimSpace(r.URL.Query().Get("access_token")) != "" {
		kinds = append(kinds, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		kinds = append(kinds, "x509")
	}
	if len(kinds) == 0 {
		return "Authentication failed, no credentials provided"
	}
	return "Authentication failed, attempted: " + strings.Join(kinds, ", ")
}
