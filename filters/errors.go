// This file holds the package's sentinel errors and its one typed error.

package filters

import (
	"errors"
	"fmt"

	"github.com/annexapi/annex/meta"
)

// Errors of the request-info resolver.
var (
	// ErrUnresolvablePath is returned by RequestInfoResolver.Resolve when a
	// resource path uses a deprecated path verb (".../watch", ".../proxy")
	// with nothing after it, so no resource can be named.
	ErrUnresolvablePath = errors.New("unable to determine kind and namespace from url")
)

// Errors of the request body limit.
var (
	// ErrRequestBodyTooLarge is returned by the Read method of a request body
	// wrapped by WithMaxRequestBody once more bytes than the limit have been
	// read. The concrete error is a *RequestBodyTooLargeError.
	ErrRequestBodyTooLarge = errors.New("request body too large")
)

// Errors of the configuration of filters.
var (
	// ErrInvalidConfig is returned by filter constructors that validate their
	// config (WithCORS) when it cannot be used.
	ErrInvalidConfig = errors.New("invalid filter configuration")
)

// RequestBodyTooLargeError is the error a body limited by WithMaxRequestBody
// returns once it has yielded Limit bytes and more remain. It matches
// ErrRequestBodyTooLarge with errors.Is.
type RequestBodyTooLargeError struct {
	// Limit is the limit in bytes that was exceeded.
	Limit int64
}

func (e *RequestBodyTooLargeError) Error() string {
	return fmt.Sprintf("request body too large: limit is %d", e.Limit)
}

// Is reports whether target is ErrRequestBodyTooLarge.
func (e *RequestBodyTooLargeError) Is(target error) bool { return target == ErrRequestBodyTooLarge }

// Status is the 413 Kubernetes answers with: "Request entity too large: limit is N".
func (e *RequestBodyTooLargeError) Status() *meta.Status {
	return meta.NewRequestEntityTooLarge(fmt.Sprintf("limit is %d", e.Limit))
}
