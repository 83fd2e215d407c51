// This file holds the authorization filter: it asks the authorizer about
// each request and answers 403 (or 500) exactly as Kubernetes does.

package authz

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// The audit annotations Kubernetes records for an authorization decision;
// FilterConfig.OnDecision receives what goes into them.
const (
	DecisionAnnotationKey = "authorization.k8s.io/decision"
	ReasonAnnotationKey   = "authorization.k8s.io/reason"
)

// FilterConfig configures WithAuthorization.
type FilterConfig struct {
	// Authorizer decides. Required: there is no "authorization disabled"
	// mode; use an AuthorizerFunc that allows everything if that is meant.
	Authorizer Authorizer
	// OnDecision is called for each request once the authorizer answered,
	// before the request proceeds or the refusal is written, e.g. to record
	// the audit annotations (decision "allow" or "forbid", the reason, or
	// "internal error" when err is not nil and d is not Allow). nil means
	// nothing is called.
	OnDecision func(r *http.Request, d Decision, reason string, err error)
	// Metrics records apiserver_authorization_decisions_total; nil records
	// nothing.
	Metrics *Metrics
}

// WithAuthorization returns the authorization filter. It reads the user and
// the request info from the context, so it runs after authentication (and
// impersonation) and the request-info resolver.
//
// Allow calls the next handler, even if the authorizer also returned an
// error. Deny or NoOpinion without error is a 403 Status (ForbiddenStatus).
// Anything else with an error, or no request info in the context, is a 500
// with Kubernetes' plain-text body `Internal Server Error: "<uri>": <err>`.
func WithAuthorization(cfg FilterConfig) (func(http.Handler) http.Handler, error) {
	if cfg.Authorizer == nil {
		return nil, ErrNoAuthorizer
	}
	authz, onDecision, m := cfg.Authorizer, cfg.OnDecision, cfg.Metrics
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			info, ok := filters.RequestInfoFrom(ctx)
			if !ok {
				internalError(w, r, ErrNoRequestInfo)
				return
			}
			user, _ := filters.UserFrom(ctx)
			attrs := AttributesFrom(user, info)
			d, reason, err := authz.Authorize(ctx, attrs)
			if onDecision != nil {
				onDecision(r, d, reason, err)
			}
			m.decision(d == DecisionAllow)
			if d == DecisionAllow {
				next.ServeHTTP(w, r)
				return
			}
			if err != nil {
				internalError(w, r, err)
				return
			}
			filters.WriteStatus(w, ForbiddenStatus(attrs, reason))
		})
	}, nil
}

// sanitizer keeps messages from looking like HTML; quotes are fine.
func sanitize(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;").Replace(s)
}

// internalError writes the plain-text 500 Kubernetes' authorization filter
// writes (responsewriters.InternalError) for an authorizer's error. A
// missing user is worded as Kubernetes' privileged-groups authorizer words
// it.
func internalError(w http.ResponseWriter, r *http.Request, err error) {
	msg := err.Error()
	if errors.Is(err, ErrNoUser) {
		msg = "no user on request."
	}
	internalErrorText(w, r, msg)
}

// internalErrorText writes the plain-text 500 with msg.
func internalErrorText(w http.ResponseWriter, r *http.Request, msg string) {
	http.Error(w, sanitize(fmt.Sprintf("Internal Server Error: %q: %s", r.RequestURI, msg)), http.StatusInternalServerError)
}

// ForbiddenMessage returns what a refused request was refused for, as
// Kubernetes words it:
//
//	User "alice" cannot list resource "environments" in API group "platform.example.com" in the namespace "ns"
//	User "alice" cannot get resource "nodes/status" in API group "" at the cluster scope
//	User "alice" cannot get path "/metrics"
func ForbiddenMessage(a Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	if !a.IsResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, resource, a.APIGroup)
}

// ForbiddenStatus returns the 403 Status for a refused request: the
// ForbiddenMessage (HTML-escaped), ": reason" when there is a reason, behind
// the prefix meta.NewForbidden gives (`res.group "name" is forbidden: `), with
// details {group, kind: resource, name}.
func ForbiddenStatus(a Attributes, reason string) *meta.Status {
	msg := sanitize(ForbiddenMessage(a))
	if reason != "" {
		msg += ": " + reason
	}
	return meta.NewForbidden(meta.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, msg)
}
