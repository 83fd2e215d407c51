// This file holds the package's sentinel errors.

package authz

import "errors"

// Errors of authorization; callers test with errors.Is.
var (
	// ErrNoAuthorizer is returned by WithAuthorization when it is given no
	// authorizer.
	ErrNoAuthorizer = errors.New("authz: no authorizer configured")
	// ErrInvalidName is returned by NewUnion when an authorizer's name is
	// empty or repeated, or its Authorizer is nil.
	ErrInvalidName = errors.New("authz: invalid authorizer name")
	// ErrInvalidPath is returned by NewAlwaysAllowPaths when a path has a *
	// anywhere but at its end.
	ErrInvalidPath = errors.New("authz: only a trailing * is allowed in a path")
	// ErrNoUser is returned by the privileged-groups authorizer when the
	// attributes carry no user (authentication did not run: the chain is
	// misordered). The filters answer it with a 500 in Kubernetes' words
	// ("no user on request." from the authorizer, "no user found for
	// request" from impersonation).
	ErrNoUser = errors.New("authz: no user on the request")
	// ErrWebhook is returned (with NoOpinion) when a SubjectAccessReview
	// cannot be made or its answer is contradictory; the filter answers 500.
	ErrWebhook = errors.New("authz: subject access review failed")
	// ErrRBAC is returned by the RBAC loader for a document it cannot use.
	ErrRBAC = errors.New("authz: invalid RBAC document")
	// ErrImpersonation is returned by WithImpersonation when it is given no
	// authorizer.
	ErrImpersonation = errors.New("authz: impersonation needs an authorizer")
	// ErrNoRequestInfo is returned (as a 500) by the filter when no request
	// info is in the context: the chain is misordered.
	ErrNoRequestInfo = errors.New("no RequestInfo found in the context")
)
