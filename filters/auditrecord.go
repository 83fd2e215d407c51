// This file holds what a stage records for the request's audit event beyond
// plain annotations: the authorization decision, the impersonated user, and
// annotations kept only at a given audit level. The audit stage installs one
// recorder (ContextWithAuditAnnotationRecorder) that also implements the
// optional interfaces below; without it, or without the interface, each call
// does nothing (a level-less recorder keeps leveled annotations).

package filters

import "context"

// The audit annotations of an authorization decision, as Kubernetes names
// them.
const (
	AuditDecisionAnnotation = "authorization.k8s.io/decision"
	AuditReasonAnnotation   = "authorization.k8s.io/reason"
)

// RecordAuthorizationDecision records an authorization decision as
// Kubernetes' authorization filter does: allowed gives decision "allow" and
// the reason (even when err is not nil: the decision is checked first);
// refused with an error gives only reason "internal error"; refused without
// one gives decision "forbid" and the reason. Bind authz's
// FilterConfig.OnDecision to it.
func RecordAuthorizationDecision(ctx context.Context, allowed bool, reason string, err error) {
	rec, ok := AuditAnnotationRecorderFrom(ctx)
	if !ok {
		return
	}
	switch {
	case allowed:
		rec.AddAuditAnnotation(AuditDecisionAnnotation, "allow")
		rec.AddAuditAnnotation(AuditReasonAnnotation, reason)
	case err != nil:
		rec.AddAuditAnnotation(AuditReasonAnnotation, "internal error")
	default:
		rec.AddAuditAnnotation(AuditDecisionAnnotation, "forbid")
		rec.AddAuditAnnotation(AuditReasonAnnotation, reason)
	}
}

// AuditLevelAnnotationRecorder is implemented by recorders that know the
// request's audit level. AddAuditAnnotationWithLevel keeps the annotation
// only when that level is at least level ("Metadata", "Request" or
// "RequestResponse"), as Kubernetes' AddAnnotationWithLevel: a mutating
// webhook's patch annotation is recorded at Request level only. It must be
// safe for concurrent use.
type AuditLevelAnnotationRecorder interface {
	AddAuditAnnotationWithLevel(key, value, level string)
}

// AddAuditAnnotationWithLevel records an audit annotation for the request of
// ctx that is kept only when the request is audited at level or above.
func AddAuditAnnotationWithLevel(ctx context.Context, key, value, level string) {
	rec, ok := AuditAnnotationRecorderFrom(ctx)
	if !ok {
		return
	}
	if lr, ok := rec.(AuditLevelAnnotationRecorder); ok {
		lr.AddAuditAnnotationWithLevel(key, value, level)
		return
	}
	rec.AddAuditAnnotation(key, value)
}

// AuditImpersonationRecorder is implemented by recorders that record the user
// a request impersonates (the event's impersonatedUser). It must be safe for
// concurrent use.
type AuditImpersonationRecorder interface {
	RecordImpersonatedUser(u *User)
}

// RecordImpersonatedUser records that the request of ctx impersonates u. The
// impersonation stage calls it once it has authorized the impersonation
// (Kubernetes records impersonatedUser only then).
func RecordImpersonatedUser(ctx context.Context, u *User) {
	if rec, ok := AuditAnnotationRecorderFrom(ctx); ok {
		if ir, ok := rec.(AuditImpersonationRecorder); ok {
			ir.RecordImpersonatedUser(u)
		}
	}
}
