// This file holds the package's sentinel errors.

package audit

import "errors"

// Errors of configuration, returned by ParsePolicy, LoadPolicyFile,
// NewEvaluator, New and Flags.Config; callers test with errors.Is.
var (
	// ErrInvalidPolicy is returned when a policy file cannot be read, does
	// not decode strictly as an audit.k8s.io/v1 Policy, or fails validation.
	ErrInvalidPolicy = errors.New("invalid audit policy")
	// ErrInvalidConfig is returned by New and Flags.Config when a backend's
	// settings cannot be used (unknown mode or format, a negative size, a
	// webhook kubeconfig that does not load).
	ErrInvalidConfig = errors.New("invalid audit configuration")
)

// Errors of the backends, reported to the logger and counted in
// apiserver_audit_error_total; a blocking-strict backend's error also
// rejects the request.
var (
	// ErrBufferFull is recorded when a batch-mode backend's buffer is full
	// and an event is dropped ("audit buffer queue blocked").
	ErrBufferFull = errors.New("audit buffer queue blocked")
	// ErrShutDown is recorded when an event arrives after the backends
	// stopped (Start returned).
	ErrShutDown = errors.New("audit backend shut down")
	// ErrEventTooLarge is recorded when truncation is on and an event is
	// larger than the maximum even without its request and response objects.
	ErrEventTooLarge = errors.New("event is too large even after truncating")
)
