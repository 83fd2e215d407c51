// This file holds the package's sentinel errors and its one typed error.

package meta

import "errors"

// Errors of the parsers in this package. They come wrapped in *ParseError,
// whose message is the text Kubernetes writes; callers test with errors.Is.
var (
	// ErrInvalidLabelSelector is returned when a labelSelector does not parse
	// or names an invalid key or value.
	ErrInvalidLabelSelector = errors.New("invalid label selector")
	// ErrInvalidFieldSelector is returned when a fieldSelector does not parse.
	ErrInvalidFieldSelector = errors.New("invalid field selector")
)

// ParseError is a parse failure with the exact message Kubernetes gives for
// it, which reaches users as the text of a 400 BadRequest. It unwraps to one
// of the sentinel errors above.
type ParseError struct {
	// Err is one of the sentinel errors.
	Err error
	// Msg is the Kubernetes message.
	Msg string
}

func (e *ParseError) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }
