// This file holds the audit-annotation recorder: admission (and any other
// stage) adds key/value annotations for the request's audit event through the
// context; the audit stage installs the recorder and reads them back.

package filters

import "context"

// AuditAnnotationRecorder receives audit annotations for the current request.
// AddAuditAnnotation must be safe for concurrent use (validating webhooks run
// in parallel).
type AuditAnnotationRecorder interface {
	AddAuditAnnotation(key, value string)
}

// AuditAnnotationRecorderFunc adapts a function to AuditAnnotationRecorder.
type AuditAnnotationRecorderFunc func(key, value string)

// AddAuditAnnotation calls f(key, value).
func (f AuditAnnotationRecorderFunc) AddAuditAnnotation(key, value string) { f(key, value) }

var _ AuditAnnotationRecorder = AuditAnnotationRecorderFunc(nil)

type auditAnnotationsKeyType struct{}

// ContextWithAuditAnnotationRecorder returns a copy of ctx carrying rec.
func ContextWithAuditAnnotationRecorder(ctx context.Context, rec AuditAnnotationRecorder) context.Context {
	if v := slots(ctx, auditAnnotationsKeyType{}); v != nil && rec != nil {
		v.annotations = rec
		return ctx
	}
	return context.WithValue(ctx, auditAnnotationsKeyType{}, rec)
}

// AuditAnnotationRecorderFrom returns the recorder in ctx, if any.
func AuditAnnotationRecorderFrom(ctx context.Context) (AuditAnnotationRecorder, bool) {
	rec, ok := ctx.Value(auditAnnotationsKeyType{}).(AuditAnnotationRecorder)
	return rec, ok && rec != nil
}

// AddAuditAnnotation records an audit annotation for the request of ctx;
// without a recorder in ctx it does nothing.
func AddAuditAnnotation(ctx context.Context, key, value string) {
	if rec, ok := AuditAnnotationRecorderFrom(ctx); ok {
		rec.AddAuditAnnotation(key, value)
	}
}
