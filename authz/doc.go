// Package authz decides whether an authenticated user may do what a request
// asks: the [Authorizer] interface, the union of named authorizers, the
// built-in always-allow paths and privileged groups, and the authorization
// filter that answers 403.
//
// # Authorizers
//
// An [Authorizer] looks at [Attributes] (the user, and the verb, resource or
// path from the request info) and returns Allow, Deny or NoOpinion with a
// reason. [NewUnion] asks named authorizers in order; the first Allow or Deny
// wins, and when all abstain the request is refused with every reason.
// [New] builds what Kubernetes' delegated authorization builds, without the
// SubjectAccessReview webhook a later version adds:
//
//	kubernetes.io/always-allow-groups  system:masters
//	kubernetes.io/always-allow-paths   /healthz, /readyz, /livez
//	your authorizers                   (webhook, RBAC, ...)
//
// # The filter
//
//	authorize, err := authz.WithAuthorization(authz.FilterConfig{Authorizer: a})
//	handler = authorize(handler)
//
// [WithAuthorization] runs after authentication and the request-info
// resolver, reading both from the context. Allow proceeds. Deny or NoOpinion
// is a 403 Status with Kubernetes' exact message:
//
//	{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
//	 "message":"pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"ns\"",
//	 "reason":"Forbidden","details":{"kind":"pods"},"code":403}
//
// An authorizer error without Allow is a 500 whose plain-text body is the one
// Kubernetes writes (`Internal Server Error: "<uri>": <error>`), because
// failing closed on a broken webhook must not look like a policy decision.
//
// # Caveats
//
// The package does not import authn or any other stage; it reads the user
// through package filters. Audit annotations are recorded by whoever sets
// [FilterConfig].OnDecision. Selectors travel as raw strings in
// [Attributes]; authorizers that narrow by them parse them themselves.
package authz
