// This file holds the small filters that only set headers: Cache-Control,
// Audit-Id, Strict-Transport-Security and CORS.

package filters

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/annexapi/annex/internal/uid"
)

// CacheControlConfig configures WithCacheControl.
type CacheControlConfig struct {
	// Value is the Cache-Control sent; "" means "no-cache, private".
	Value string
}

// WithCacheControl returns the filter that sets Cache-Control (by default
// "no-cache, private", as Kubernetes) on every response whose handler sets
// none, so no proxy caches API answers.
func WithCacheControl(cfg CacheControlConfig) func(http.Handler) http.Handler {
	value := cfg.Value
	if value == "" {
		value = "no-cache, private"
	}
	// One value slice for every response, as flowcontrol shares its
	// header values: its capacity equals its length, so an append copies,
	// and Set and Del replace it.
	values := []string{value}[:1:1]
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			if _, ok := h["Cache-Control"]; !ok {
				h["Cache-Control"] = values
			}
			next.ServeHTTP(w, r)
		})
	}
}

// AuditIDHeader is the header that carries the audit ID, in canonical form
// (Kubernetes spells it "Audit-ID").
const AuditIDHeader = "Audit-Id"

// AuditIDConfig configures WithAuditID.
type AuditIDConfig struct {
	// NewID returns a fresh ID for a request that brings none; nil means a
	// random UUID (version 4).
	NewID func() string
}

// WithAuditID returns the filter that gives each request its audit ID (read
// it with AuditIDFrom): the request's Audit-Id header, kept verbatim, or a
// new one. The ID is echoed in the response's Audit-Id header unless that is
// already set, so a request proxied by kube-aggregator keeps one ID end to
// end. This is Kubernetes' WithAuditInit.
func WithAuditID(cfg AuditIDConfig) func(http.Handler) http.Handler {
	newID := cfg.NewID
	if newID == nil {
		newID = NewUUID
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get(AuditIDHeader)
			if id == "" {
				id = newID()
			}
			if h := w.Header(); h.Get(AuditIDHeader) == "" {
				// The header's value lives in the request's values layer
				// when there is one, capped so that an append copies.
				if v, ok := r.Context().Value(valuesKey{}).(*values); ok && v.roomUsed&roomAuditIDHeader == 0 {
					v.roomUsed |= roomAuditIDHeader
					v.auditIDHeader[0] = id
					h[AuditIDHeader] = v.auditIDHeader[:1:1]
				} else {
					h.Set(AuditIDHeader, id)
				}
			}
			next.ServeHTTP(w, RequestWithContext(r, ContextWithAuditID(r.Context(), id)))
		})
	}
}

// NewUUID returns a random (version 4) UUID in its 36-character text form.
func NewUUID() string { return uid.New() }

// HSTSConfig configures WithHSTS.
type HSTSConfig struct {
	// Directives are joined with "; " into Strict-Transport-Security, e.g.
	// {"max-age=31536000", "includeSubDomains", "preload"}. None means the
	// filter does nothing.
	Directives []string
}

// WithHSTS returns the filter that sets Strict-Transport-Security to the
// directives unless the header is already set (Kubernetes'
// --strict-transport-security-directives).
func WithHSTS(cfg HSTSConfig) func(http.Handler) http.Handler {
	value := strings.Join(cfg.Directives, "; ")
	return func(next http.Handler) http.Handler {
		if value == "" {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := w.Header()["Strict-Transport-Security"]; !ok {
				w.Header().Set("Strict-Transport-Security", value)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// CORSConfig configures WithCORS. Nil lists mean Kubernetes' defaults.
type CORSConfig struct {
	// AllowedOrigins are regular expressions (Go syntax, unanchored, as in
	// Kubernetes' --cors-allowed-origins) matched against the Origin
	// header. None means the filter does nothing.
	AllowedOrigins []string
	// AllowedMethods nil means POST, GET, OPTIONS, PUT, DELETE, PATCH.
	AllowedMethods []string
	// AllowedHeaders nil means Content-Type, Content-Length,
	// Accept-Encoding, X-CSRF-Token, Authorization, X-Requested-With,
	// If-Modified-Since.
	AllowedHeaders []string
	// ExposedHeaders nil means Date.
	ExposedHeaders []string
	// DisallowCredentials sends Access-Control-Allow-Credentials: false
	// instead of Kubernetes' true.
	DisallowCredentials bool
}

// WithCORS returns the filter that answers CORS as Kubernetes' WithCORS: when
// the Origin header matches one of AllowedOrigins it sets
// Access-Control-Allow-Origin (the origin), -Allow-Methods, -Allow-Headers,
// -Expose-Headers and -Allow-Credentials, and answers an OPTIONS request
// (preflight) with 204 itself, before authentication. Other requests pass
// untouched. It fails with ErrInvalidConfig when an origin does not compile.
func WithCORS(cfg CORSConfig) (func(http.Handler) http.Handler, error) {
	origins := make([]*regexp.Regexp, 0, len(cfg.AllowedOrigins))
	for _, o := range cfg.AllowedOrigins {
		re, err := regexp.Compile(o)
		if err != nil {
			return nil, fmt.Errorf("%w: CORS allowed origin %q: %v", ErrInvalidConfig, o, err)
		}
		origins = append(origins, re)
	}
	orDefault := func(v, def []string) string {
		if v == nil {
			v = def
		}
		return strings.Join(v, ", ")
	}
	methods := orDefault(cfg.AllowedMethods, []string{"POST", "GET", "OPTIONS", "PUT", "DELETE", "PATCH"})
	headers := orDefault(cfg.AllowedHeaders, []string{"Content-Type", "Content-Length", "Accept-Encoding",
		"X-CSRF-Token", "Authorization", "X-Requested-With", "If-Modified-Since"})
	exposed := orDefault(cfg.ExposedHeaders, []string{"Date"})
	credentials := "true"
	if cfg.DisallowCredentials {
		credentials = "false"
	}
	return func(next http.Handler) http.Handler {
		if len(origins) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin == "" || !matchAny(origins, origin) {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", methods)
			h.Set("Access-Control-Allow-Headers", headers)
			h.Set("Access-Control-Expose-Headers", exposed)
			h.Set("Access-Control-Allow-Credentials", credentials)
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
