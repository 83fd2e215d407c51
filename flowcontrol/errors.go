// This file holds the package's sentinel errors.

package flowcontrol

import "errors"

// Errors of configuration; callers test with errors.Is.
var (
	// ErrInvalidObject is returned by Parse, LoadFiles, New and Start when a
	// FlowSchema or PriorityLevelConfiguration breaks kube's validation
	// rules (the message names the object and the fields), or when YAML
	// holds an unknown field, kind or apiVersion.
	ErrInvalidObject = errors.New("flowcontrol: invalid configuration object")
	// ErrInvalidConfig is returned by New when Config cannot be used (a
	// missing configuration file, inconsistent limits).
	ErrInvalidConfig = errors.New("flowcontrol: invalid configuration")
)

// Errors of serving.
var (
	// ErrNoUser is what the filter reports (as a 500) when a request reaches
	// it without an authenticated user in its context: the chain is wrong.
	ErrNoUser = errors.New("no User found in context")
)
