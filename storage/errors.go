// This file holds the package's sentinel errors and its one typed error.

package storage

import "errors"

// Errors of the storage contract. Backends return them wrapped in *Error;
// callers test with errors.Is.
var (
	// ErrNotFound is returned when the key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrDeleteInstead is not a failure: an UpdateFunc returns it to delete
	// the object instead of writing a new state, under the same condition
	// (the key still at the revision the function saw), in one write: the
	// removal of an object being deleted whose last finalizer an update
	// took away. Update then returns the deleted object's last state with
	// the deletion's revision, and no error.
	ErrDeleteInstead = errors.New("delete instead of update")
	// ErrAlreadyExists is returned by Create when the key exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict is returned when a precondition fails against the current
	// state (the object was modified or replaced).
	ErrConflict = errors.New("conflict")
	// ErrTooLargeResourceVersion is returned when a request asks for a
	// revision the store has not reached yet.
	ErrTooLargeResourceVersion = errors.New("too large resource version")
	// ErrExpired is returned when the requested revision has been compacted:
	// a watch, an exact list, or a continue token.
	ErrExpired = errors.New("resource version expired")
	// ErrInvalidContinue is returned when a continue token cannot be decoded or
	// does not belong to the listed prefix.
	ErrInvalidContinue = errors.New("invalid continue token")
	// ErrInvalidResourceVersion is returned when a resource version string is
	// not a decimal revision, or the options combine it wrongly (with a
	// continue token, Exact with "0", a match without a version).
	ErrInvalidResourceVersion = errors.New("invalid resource version")
	// ErrResourceVersionSetOnCreate is returned by Create when the object
	// already carries a resource version.
	ErrResourceVersionSetOnCreate = errors.New("resourceVersion should not be set on objects to be created")
	// ErrInvalidKey is returned when a key or prefix is malformed.
	ErrInvalidKey = errors.New("invalid key")
	// ErrInvalidObject is returned when an object's bytes are not a JSON object
	// with well-formed metadata.
	ErrInvalidObject = errors.New("invalid object")
	// ErrTooLarge is returned by Create and Update when an object's bytes
	// are larger than the store accepts (see ObjectSizeLimiter).
	ErrTooLarge = errors.New("object too large")
	// ErrClosed is returned when the backend has been closed.
	ErrClosed = errors.New("storage closed")
	// ErrNotReady is returned when a store (a watch cache still loading its
	// initial list, or re-listing) cannot serve the request yet; the caller
	// may retry shortly. Kubernetes answers it 429 "storage is
	// (re)initializing" with Retry-After.
	ErrNotReady = errors.New("storage is (re)initializing")
)

// Error is a storage error with its context. It unwraps to a sentinel.
type Error struct {
	// Err is one of the sentinel errors.
	Err error
	// Key is the key concerned, when there is one.
	Key string
	// Msg is a human-readable detail, when there is one.
	Msg string
	// ResourceVersion is the revision concerned: the store's current revision
	// for ErrTooLargeResourceVersion, the compacted revision for ErrExpired.
	ResourceVersion uint64
	// Requested is, for ErrTooLargeResourceVersion, the revision asked for
	// (a resourceVersion, or a continue token's), when known.
	Requested uint64
	// Continue is, for an expired continue token, a fresh token that continues
	// the list from the same key at the latest revision.
	Continue string
}

func (e *Error) Error() string {
	s := e.Err.Error()
	if e.Key != "" {
		s += ": " + e.Key
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }
