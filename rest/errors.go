// This file holds the package's sentinel errors, its one typed error, and
// StatusForError, the one place that maps errors to Kubernetes Status.

package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// Configuration errors, returned (joined, all at once) by NewHandler.
var (
	// ErrInvalidResource is returned when a Resource declaration has a missing
	// or malformed field.
	ErrInvalidResource = errors.New("invalid resource")
	// ErrDuplicateResource is returned when two Resources share a
	// group/version/plural or a group/version/kind, or a short name collides.
	ErrDuplicateResource = errors.New("duplicate resource")
	// ErrNoStorage is returned when a Resource has no storage.Interface.
	ErrNoStorage = errors.New("resource has no storage")
)

// ConfigError is one problem in a Config. It unwraps to a sentinel above.
type ConfigError struct {
	// Resource names the declaration, "plural.group/version".
	Resource string
	// Err is one of the sentinel errors.
	Err error
	// Msg says what is wrong.
	Msg string
}

func (e *ConfigError) Error() string {
	s := "rest: " + e.Err.Error()
	if e.Resource != "" {
		s += " " + e.Resource
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Unwrap returns the sentinel.
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrorContext is what StatusForError needs to know about the request an
// error came from to pick Kubernetes' message.
type ErrorContext struct {
	// Resource is the resource of the request.
	Resource meta.GroupResource
	// Name is the object's name, if any.
	Name string
	// Verb is the request verb (get, list, watch, create, ...).
	Verb string
	// ResourceVersion is the resourceVersion the request asked for.
	ResourceVersion string
	// Continue is the continue token the request carried.
	Continue string
}

// Kubernetes' messages for expired lists and watches
// (k8s.io/apiserver pkg/storage/etcd3/errors.go).
const (
	msgExpiredWatch    = "The resourceVersion for the provided watch is too old."
	msgExpiredList     = "The resourceVersion for the provided list is too old."
	msgExpiredContinue = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter."
	msgInconsistentContinue = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
)

// StatusForError maps err to the Status a Kubernetes API server answers with:
// a *meta.Status anywhere in the chain passes through, as does the Status of
// an error with a Status() *meta.Status method; storage sentinels become
// NotFound, AlreadyExists, Conflict, Timeout (too large resource version),
// Expired, RequestEntityTooLarge (too large object), or BadRequest;
// anything else is a 500 InternalError.
func StatusForError(err error, ec ErrorContext) *meta.Status {
	var st *meta.Status
	if errors.As(err, &st) {
		return st
	}
	// An error that knows its Status (a body over the limit, from
	// filters.WithMaxRequestBody) answers with it.
	var withStatus interface{ Status() *meta.Status }
	if errors.As(err, &withStatus) {
		return withStatus.Status()
	}
	var se *storage.Error
	errors.As(err, &se)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return meta.NewNotFound(ec.Resource, ec.Name)
	case errors.Is(err, storage.ErrAlreadyExists):
		return meta.NewAlreadyExists(ec.Resource, ec.Name)
	case errors.Is(err, storage.ErrConflict):
		return meta.NewConflict(ec.Resource, ec.Name, meta.OptimisticLockErrorMsg)
	case errors.Is(err, storage.ErrTooLargeResourceVersion):
		requested, _ := strconv.ParseUint(ec.ResourceVersion, 10, 64)
		var current uint64
		if se != nil {
			current = se.ResourceVersion
			if se.Requested != 0 { // a continue token's revision, say
				requested = se.Requested
			}
		}
		return meta.NewTooLargeResourceVersion(requested, current, 1)
	case errors.Is(err, storage.ErrExpired):
		switch {
		case ec.Verb == "watch":
			return meta.NewResourceExpired(msgExpiredWatch)
		case ec.Continue != "" && se != nil && se.Continue != "":
			s := meta.NewResourceExpired(msgInconsistentContinue)
			s.Metadata.Continue = se.Continue
			return s
		case ec.Continue != "":
			return meta.NewResourceExpired(msgExpiredContinue)
		default:
			return meta.NewResourceExpired(msgExpiredList)
		}
	case errors.Is(err, storage.ErrInvalidContinue):
		msg := err.Error()
		if se != nil && se.Msg != "" {
			msg = "invalid continue token: " + se.Msg
		}
		return meta.NewBadRequest(msg)
	case errors.Is(err, storage.ErrInvalidResourceVersion):
		if se != nil && se.Msg != "" {
			return meta.NewBadRequest(se.Msg)
		}
		return meta.NewBadRequest(err.Error())
	case errors.Is(err, storage.ErrTooLarge):
		// The write path refuses a too large object before storage sees it;
		// this is a store whose own limit is lower than it states.
		msg := err.Error()
		if se != nil && se.Msg != "" {
			msg = se.Msg
		}
		return meta.NewRequestEntityTooLarge(msg)
	case errors.Is(err, storage.ErrResourceVersionSetOnCreate):
		// k8s.io/apiserver passes this storage error through unconverted, so
		// it reaches the client as a 500 with no reason and the bare message.
		return &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure,
			Code: http.StatusInternalServerError, Message: storage.ErrResourceVersionSetOnCreate.Error()}
	case errors.Is(err, storage.ErrNotReady):
		// As k8s.io/apiserver's cacher answers a watch-list (or a consistent
		// read) before it is ready.
		// Its message has no "Too many requests: " prefix.
		return &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure,
			Code: http.StatusTooManyRequests, Reason: meta.StatusReasonTooManyRequests,
			Message: storage.ErrNotReady.Error(), Details: &meta.StatusDetails{RetryAfterSeconds: 1}}
	case errors.Is(err, context.DeadlineExceeded):
		return meta.NewServerTimeout(ec.Resource, ec.Verb, 2)
	}
	return meta.NewInternalError(err)
}

// errNotFoundPath is the Status of a path the server does not serve, as
// k8s.io/apiserver's not-found handler writes it.
func errNotFoundPath() *meta.Status {
	return &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure,
		Message: "the server could not find the requested resource", Reason: meta.StatusReasonNotFound,
		Details: &meta.StatusDetails{}, Code: http.StatusNotFound}
}

// fieldInvalid is a FieldValueInvalid cause with the value formatted as
// k8s.io/apimachinery's field.Invalid does.
func fieldInvalid(field string, value any, detail string) meta.StatusCause {
	return meta.StatusCause{Type: meta.CauseTypeFieldValueInvalid, Field: field,
		Message: "Invalid value: " + formatValue(value) + ": " + detail}
}

// fieldForbidden is a FieldValueForbidden cause.
func fieldForbidden(field, detail string) meta.StatusCause {
	return meta.StatusCause{Type: meta.CauseTypeFieldValueForbidden, Field: field, Message: "Forbidden: " + detail}
}

// fieldRequired is a FieldValueRequired cause.
func fieldRequired(field, detail string) meta.StatusCause {
	m := "Required value"
	if detail != "" {
		m += ": " + detail
	}
	return meta.StatusCause{Type: meta.CauseTypeFieldValueRequired, Field: field, Message: m}
}

// fieldNotSupported is a FieldValueNotSupported cause.
func fieldNotSupported(field string, value any, supported []string) meta.StatusCause {
	m := "Unsupported value: " + formatValue(value)
	if len(supported) > 0 {
		m += ": supported values: "
		for i, s := range supported {
			if i > 0 {
				m += ", "
			}
			m += strconv.Quote(s)
		}
	}
	return meta.StatusCause{Type: meta.CauseTypeFieldValueNotSupported, Field: field, Message: m}
}

// formatValue prints a value as field.Error.ErrorBody does: nil as "null"
// (quoted, as k8s prints it), strings quoted, int64/int32/floats/bools plainly,
// anything else with %#v (so an uint64 zero is 0x0).
func formatValue(v any) string {
	switch t := v.(type) {
	case nil:
		return `"null"`
	case string:
		return strconv.Quote(t)
	case int64, int32, float64, float32, bool:
		return fmt.Sprintf("%v", t)
	case fmt.Stringer:
		return t.String()
	default:
		return fmt.Sprintf("%#v", t)
	}
}
