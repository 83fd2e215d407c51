// This file holds the Authorizer contract: the Decision, the Attributes a
// decision is made on, and the Func adapter.

package authz

import (
	"context"
	"strconv"

	"github.com/annexapi/annex/filters"
)

// Decision is what an authorizer says about a request.
type Decision int

// The decisions, with Kubernetes' values.
const (
	// DecisionDeny refuses the request; no later authorizer is asked.
	DecisionDeny Decision = iota
	// DecisionAllow permits the request; no later authorizer is asked.
	DecisionAllow
	// DecisionNoOpinion leaves the request to the next authorizer; when
	// every one has none, the request is refused.
	DecisionNoOpinion
)

// String returns "Deny", "Allow" or "NoOpinion".
func (d Decision) String() string {
	switch d {
	case DecisionDeny:
		return "Deny"
	case DecisionAllow:
		return "Allow"
	case DecisionNoOpinion:
		return "NoOpinion"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// Attributes is what an authorization decision is made on: who asks for
// what. It is a value; authorizers must not keep or modify the User.
type Attributes struct {
	// User is the authenticated (possibly impersonated) user; nil when
	// authentication did not run.
	User *filters.User
	// Verb is get, list, watch, create, update, patch, delete,
	// deletecollection (resource requests), a lower-case HTTP method
	// (non-resource requests), or a special verb such as impersonate.
	Verb string
	// IsResourceRequest is false for paths outside the API (health,
	// discovery, version).
	IsResourceRequest bool
	// Path is the URL path; authorizers look at it for non-resource requests.
	Path string
	// The resource a resource request is for.
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// FieldSelector and LabelSelector are the raw selectors of list, watch
	// and deletecollection, for authorizers that narrow by them.
	FieldSelector string
	LabelSelector string
}

// AttributesFrom returns the attributes of a request from its user and
// request info (either may be nil).
func AttributesFrom(user *filters.User, info *filters.RequestInfo) Attributes {
	a := Attributes{User: user}
	if info == nil {
		return a
	}
	a.Verb = info.Verb
	a.IsResourceRequest = info.IsResourceRequest
	a.Path = info.Path
	a.APIGroup = info.APIGroup
	a.APIVersion = info.APIVersion
	a.Namespace = info.Namespace
	a.Resource = info.Resource
	a.Subresource = info.Subresource
	a.Name = info.Name
	a.FieldSelector = info.FieldSelector
	a.LabelSelector = info.LabelSelector
	return a
}

// Authorizer decides whether a request may proceed.
//
// Authorize returns a Decision, a reason for humans (appended to the 403
// message, so it must not leak what the user may not know), and an error when
// it could not decide properly (a webhook was unreachable). The filter checks
// the decision before the error: Allow with an error still allows; anything
// else with an error is a 500.
//
// Concurrency: Authorize is called from many goroutines at once; it must not
// modify a.User. ctx carries the request's deadline and values.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AuthorizerFunc adapts a function to an Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f(ctx, a).
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

var _ Authorizer = AuthorizerFunc(nil)
