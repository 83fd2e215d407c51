// This file holds the package's sentinel errors and its one typed error.

package kubeclient

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/annexapi/annex/meta"
)

// Errors of the client; callers test with errors.Is.
var (
	// ErrNotInCluster is returned by InClusterConfig when
	// KUBERNETES_SERVICE_HOST or _PORT is unset.
	ErrNotInCluster = errors.New("kubeclient: not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset)")
	// ErrInvalidConfig is returned by New, InClusterConfig and
	// LoadKubeconfig when the configuration is incomplete or malformed.
	ErrInvalidConfig = errors.New("kubeclient: invalid configuration")
	// ErrRedirect is returned (inside a *StatusError) when the server answers
	// with a redirect, which is never followed.
	ErrRedirect = errors.New("kubeclient: redirect not followed")
	// ErrNotFound, ErrUnauthorized and ErrForbidden are returned (inside a
	// *StatusError) for answers 404, 401 and 403.
	ErrNotFound     = errors.New("kubeclient: not found")
	ErrUnauthorized = errors.New("kubeclient: unauthorized")
	ErrForbidden    = errors.New("kubeclient: forbidden")
	// ErrServer is returned (inside a *StatusError) for any other non-2xx
	// answer after retries are exhausted.
	ErrServer = errors.New("kubeclient: server error")
)

// StatusError is a non-2xx answer. It unwraps to ErrNotFound,
// ErrUnauthorized, ErrForbidden, ErrRedirect or ErrServer.
type StatusError struct {
	// Method and Path are the request's.
	Method, Path string
	// Code is the HTTP status code.
	Code int
	// Status is the decoded Status body, if the body was one.
	Status *meta.Status
}

// Error names the request and the answer (the Status message when there is
// one; never the raw body).
func (e *StatusError) Error() string {
	msg := http.StatusText(e.Code)
	if e.Status != nil && e.Status.Message != "" {
		msg = e.Status.Message
	}
	return fmt.Sprintf("kubeclient: %s %s: %d %s", e.Method, e.Path, e.Code, msg)
}

// Unwrap returns the sentinel for the code.
func (e *StatusError) Unwrap() error {
	switch {
	case e.Code == http.StatusNotFound:
		return ErrNotFound
	case e.Code == http.StatusUnauthorized:
		return ErrUnauthorized
	case e.Code == http.StatusForbidden:
		return ErrForbidden
	case e.Code >= 300 && e.Code < 400:
		return ErrRedirect
	}
	return ErrServer
}
