// This file holds the request-scoped values stages hand to each other through
// the context, and their typed accessors. It is the contract between stages:
// a stage reads what an earlier one provided, never imports it.

package filters

import (
	"context"
	"time"
)

// RequestInfo is what a request asks for, resolved from its method, path and
// query as k8s.io/apiserver's RequestInfoFactory does.
type RequestInfo struct {
	// IsResourceRequest is false for discovery, health and other paths.
	IsResourceRequest bool
	// Path is the URL path.
	Path string
	// Verb is get, list, watch, create, update, patch, delete, deletecollection,
	// or, for non-resource requests, the lower-cased HTTP method.
	Verb string
	// APIPrefix is "api" or "apis".
	APIPrefix  string
	APIGroup   string
	APIVersion string
	Namespace  string
	// Resource is the plural resource name, e.g. "environments".
	Resource string
	// Subresource is e.g. "status" or "scale", or "".
	Subresource string
	// Name is the object's name, or, for list and watch with a fieldSelector
	// that requires metadata.name=X, X.
	Name string
	// Parts are the path segments after the namespace, if any.
	Parts []string
	// FieldSelector and LabelSelector are the raw query values for list, watch
	// and deletecollection.
	FieldSelector string
	LabelSelector string
}

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Context keys, each its own empty type: a lookup walks every layer of a
// request's context (a dozen by the handler), and a layer whose key has
// another type is passed over on the type word alone, where keys sharing one
// type would each be compared by value.
type (
	requestInfoKey       struct{}
	userKey              struct{}
	warningsKey          struct{}
	auditIDKey           struct{}
	receivedTimestampKey struct{}
	impersonatorKey      struct{}
	traceKey             struct{}
)

// ContextWithRequestInfo returns a copy of ctx carrying info (ctx itself when the
// request's values layer takes it, see values).
func ContextWithRequestInfo(ctx context.Context, info *RequestInfo) context.Context {
	if v := slots(ctx, requestInfoKey{}); v != nil && info != nil {
		v.info = info
		return ctx
	}
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// RequestInfoFrom returns the request info in ctx, if any.
func RequestInfoFrom(ctx context.Context) (*RequestInfo, bool) {
	info, ok := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return info, ok && info != nil
}

// ContextWithUser returns a copy of ctx carrying u (ctx itself when the request's
// values layer takes it, see values).
func ContextWithUser(ctx context.Context, u *User) context.Context {
	if v := slots(ctx, userKey{}); v != nil && u != nil {
		v.user = u
		return ctx
	}
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user in ctx, if any.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}

// ContextWithAuditID returns a copy of ctx carrying the request's audit ID
// (ctx itself when the request's values layer takes it, see values).
func ContextWithAuditID(ctx context.Context, id string) context.Context {
	if v := slots(ctx, auditIDKey{}); v != nil {
		v.auditID, v.has = id, v.has|hasAuditID
		return ctx
	}
	return context.WithValue(ctx, auditIDKey{}, id)
}

// AuditIDFrom returns the audit ID in ctx (set by WithAuditID), or "".
func AuditIDFrom(ctx context.Context) string {
	switch id := ctx.Value(auditIDKey{}).(type) {
	case *string:
		return *id
	case string:
		return id
	}
	return ""
}

// ContextWithReceivedTimestamp returns a copy of ctx carrying the time the
// request was received (ctx itself when the request's values layer takes
// it, see values).
func ContextWithReceivedTimestamp(ctx context.Context, t time.Time) context.Context {
	if v := slots(ctx, receivedTimestampKey{}); v != nil {
		v.received, v.has = t, v.has|hasReceived
		return ctx
	}
	return context.WithValue(ctx, receivedTimestampKey{}, t)
}

// ReceivedTimestampFrom returns the time the request was received (set by
// WithRequestReceivedTimestamp), if any.
func ReceivedTimestampFrom(ctx context.Context) (time.Time, bool) {
	switch t := ctx.Value(receivedTimestampKey{}).(type) {
	case *time.Time:
		return *t, true
	case time.Time:
		return t, true
	}
	return time.Time{}, false
}

// ContextWithImpersonator returns a copy of ctx carrying the user who authenticated
// a request that impersonates another: the impersonation filter stores the
// original user here and the impersonated one with ContextWithUser, so audit can
// record both.
func ContextWithImpersonator(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, impersonatorKey{}, u)
}

// ImpersonatorFrom returns the user who authenticated an impersonating
// request (set by the impersonation filter), if any.
func ImpersonatorFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(impersonatorKey{}).(*User)
	return u, ok && u != nil
}
