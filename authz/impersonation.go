// This file holds the impersonation filter: a user asks to act as another
// with Impersonate-* headers, each part of the new identity authorized
// separately as verb "impersonate", as Kubernetes does.

package authz

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// The impersonation headers.
const (
	ImpersonateUserHeader        = "Impersonate-User"
	ImpersonateGroupHeader       = "Impersonate-Group"
	ImpersonateUIDHeader         = "Impersonate-Uid"
	ImpersonateExtraHeaderPrefix = "Impersonate-Extra-"
	impersonatePrefix            = "Impersonate-"
	impersonateVerb              = "impersonate"
	authenticationGroup          = "authentication.k8s.io"
	anonymousUser                = "system:anonymous"
	authenticatedGroup           = "system:authenticated"
	unauthenticatedGroup         = "system:unauthenticated"
)

// ImpersonationConfig configures WithImpersonation.
type ImpersonationConfig struct {
	// Authorizer decides each "impersonate" check. Required; usually the
	// same authorizer as the authorization filter's.
	Authorizer Authorizer
	// AllowUnknownHeaders lets requests carry Impersonate-* headers other
	// than User, Group, Uid and Extra-*, which are then ignored (and
	// deleted). Zero means such a request is a 400: a misspelt header must
	// not silently leave the requester's own identity in force.
	AllowUnknownHeaders bool
	// OnImpersonation is called once a request's impersonation is allowed,
	// before the next handler, with the authenticated user and the one it
	// now acts as, e.g. to record audit's impersonatedUser. nil means none.
	OnImpersonation func(r *http.Request, original, impersonated *filters.User)
}

// WithImpersonation returns the impersonation filter. It runs after
// authentication (and audit) and before priority and fairness and
// authorization, reading the authenticated user from the context.
//
// A request without Impersonate-* headers passes unchanged. Otherwise every
// requested item is authorized, with the authenticated user, as verb
// "impersonate" on: users (name = user name), or serviceaccounts (namespace
// and name) for a user name system:serviceaccount:<ns>:<name>; groups (name
// = group); userextras in authentication.k8s.io (subresource = extra key,
// name = value); uids in authentication.k8s.io (name = UID). Any refusal,
// or an authorizer error, is a 403 naming the refused item. Groups, extra
// or a UID without Impersonate-User is a 400.
//
// When all are allowed the context's user (filters.ContextWithUser) becomes the
// impersonated one, with system:authenticated added (system:unauthenticated
// for system:anonymous) and, for a service account without requested
// groups, the service-account groups; the original user is kept with
// filters.ContextWithImpersonator; every Impersonate-* header is deleted.
func WithImpersonation(cfg ImpersonationConfig) (func(http.Handler) http.Handler, error) {
	if cfg.Authorizer == nil {
		return nil, ErrImpersonation
	}
	authz, allowUnknown, onImp := cfg.Authorizer, cfg.AllowUnknownHeaders, cfg.OnImpersonation
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hasImpersonationHeaders(r.Header) {
				next.ServeHTTP(w, r)
				return
			}
			ctx := r.Context()
			requestor, ok := filters.UserFrom(ctx)
			if !ok {
				internalErrorText(w, r, "no user found for request") // Kubernetes' words
				return
			}
			imp, checks, err := parseImpersonation(r.Header, requestor, allowUnknown)
			if err != nil {
				filters.WriteStatus(w, meta.NewBadRequest(err.Error()))
				return
			}
			if imp == nil { // nothing to impersonate: drop the ignored headers
				deleteImpersonationHeaders(r.Header)
				next.ServeHTTP(w, r)
				return
			}
			for _, a := range checks {
				d, reason, err := authz.Authorize(ctx, a)
				if err != nil || d != DecisionAllow {
					filters.WriteStatus(w, ForbiddenStatus(a, reason))
					return
				}
			}
			deleteImpersonationHeaders(r.Header)
			if onImp != nil {
				onImp(r, requestor, imp)
			}
			ctx = filters.ContextWithImpersonator(filters.ContextWithUser(ctx, imp), requestor)
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}, nil
}

// isImpersonationHeader reports whether k starts with Impersonate-, in any
// case (a header map built by hand need not be canonical).
func isImpersonationHeader(k string) bool {
	return len(k) >= len(impersonatePrefix) && strings.EqualFold(k[:len(impersonatePrefix)], impersonatePrefix)
}

func deleteImpersonationHeaders(h http.Header) {
	for k := range h {
		if isImpersonationHeader(k) {
			delete(h, k)
		}
	}
}

func hasImpersonationHeaders(h http.Header) bool {
	for k := range h {
		if isImpersonationHeader(k) {
			return true
		}
	}
	return false
}

// parseImpersonation reads the headers into the impersonated user and the
// checks that must all allow it.
func parseImpersonation(h http.Header, requestor *filters.User, allowUnknown bool) (*filters.User, []Attributes, error) {
	var (
		userName, uid string
		groups        []string
		hasGroups     bool
		extra         map[string][]string
		checks        []Attributes
		described     []string
	)
	check := func(a Attributes) {
		a.User, a.Verb, a.IsResourceRequest = requestor, impersonateVerb, true
		checks = append(checks, a)
		what := a.Resource
		if a.Subresource != "" {
			what += "/" + a.Subresource
		}
		if a.Namespace != "" {
			what += " " + a.Namespace + "/" + a.Name
		} else {
			what += " " + a.Name
		}
		described = append(described, what)
	}
	for k, vs := range h {
		switch {
		case strings.EqualFold(k, ImpersonateUserHeader):
			if len(vs) > 0 {
				userName = vs[0]
			}
		case strings.EqualFold(k, ImpersonateUIDHeader):
			if len(vs) > 0 {
				uid = vs[0]
			}
		case strings.EqualFold(k, ImpersonateGroupHeader):
			groups = append(groups, vs...)
			hasGroups = hasGroups || len(vs) > 0
		case len(k) >= len(ImpersonateExtraHeaderPrefix) && strings.EqualFold(k[:len(ImpersonateExtraHeaderPrefix)], ImpersonateExtraHeaderPrefix):
			key := strings.ToLower(k[len(ImpersonateExtraHeaderPrefix):])
			if u, err := url.PathUnescape(key); err == nil {
				key = u
			}
			if extra == nil {
				extra = map[string][]string{}
			}
			extra[key] = append(extra[key], vs...)
		case isImpersonationHeader(k):
			// Only an Impersonate-* header that names nothing is refused:
			// User-Agent, Accept and the rest are none of our business.
			if !allowUnknown {
				return nil, nil, fmt.Errorf("unknown impersonation header %q", k)
			}
		}
	}
	saNamespace, saName, isSA := splitServiceAccount(userName)
	switch {
	case userName == "":
	case isSA:
		check(Attributes{Resource: "serviceaccounts", Namespace: saNamespace, Name: saName})
	default:
		check(Attributes{Resource: "users", Name: userName})
	}
	for _, g := range groups {
		check(Attributes{Resource: "groups", Name: g})
	}
	for _, key := range sortedKeys(extra) {
		for _, v := range extra[key] {
			check(Attributes{APIGroup: authenticationGroup, Resource: "userextras", Subresource: key, Name: v})
		}
	}
	if uid != "" {
		check(Attributes{APIGroup: authenticationGroup, Resource: "uids", Name: uid})
	}
	if userName == "" {
		if len(checks) == 0 {
			return nil, nil, nil // only ignored unknown headers
		}
		return nil, nil, fmt.Errorf("requested %v without impersonating a user", described)
	}
	if isSA && !hasGroups {
		groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace}
	}
	groups = append([]string(nil), groups...)
	if userName != anonymousUser {
		if !slices.Contains(groups, authenticatedGroup) && !slices.Contains(groups, unauthenticatedGroup) {
			groups = append(groups, authenticatedGroup)
		}
	} else if !slices.Contains(groups, unauthenticatedGroup) {
		groups = append(groups, unauthenticatedGroup)
	}
	return &filters.User{Name: userName, UID: uid, Groups: groups, Extra: extra}, checks, nil
}

func sortedKeys(m map[string][]string) []string { return slices.Sorted(maps.Keys(m)) }

// splitServiceAccount splits system:serviceaccount:<ns>:<name> as
// Kubernetes' serviceaccount.SplitUsername: exactly two parts, a valid
// namespace (DNS-1123 label) and name (DNS-1123 subdomain). Anything else is
// an ordinary user name.
func splitServiceAccount(user string) (ns, name string, ok bool) {
	rest, found := strings.CutPrefix(user, "system:serviceaccount:")
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 2 {
		return "", "", false
	}
	ns, name = parts[0], parts[1]
	if len(meta.IsDNS1123Label(ns)) > 0 || len(meta.IsDNS1123Subdomain(name)) > 0 {
		return "", "", false
	}
	return ns, name, true
}
