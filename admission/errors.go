// This file holds the package's sentinel errors.

package admission

import "errors"

// Configuration errors, returned by constructors (never at request time).
var (
	// ErrInvalidConfig is returned when a Config, a policy, a binding or a
	// webhook configuration is malformed (bad YAML, unknown field, missing
	// required field, a CEL expression that does not compile).
	ErrInvalidConfig = errors.New("admission: invalid configuration")
	// ErrInvalidSchema is returned when a resource's schema cannot be
	// compiled, or one of its x-kubernetes-validations rules does not compile.
	ErrInvalidSchema = errors.New("admission: invalid schema")
)

// Request-time errors that are not Kubernetes Statuses. The chain turns them
// into a *meta.Status before returning.
var (
	// ErrCallingWebhook is returned (wrapped) when a webhook could not be
	// called or answered with a malformed AdmissionReview; the webhook's
	// failurePolicy decides what happens next.
	ErrCallingWebhook = errors.New("failed calling webhook")
)
