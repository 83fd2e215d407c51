// This file holds Status, the body of every error response, and one
// constructor per Kubernetes reason with the exact message k8s.io/apimachinery
// writes (pkg/api/errors/errors.go).

package meta

import (
	"fmt"
	"net/http"
	"strings"
)

// StatusReason is the machine-readable reason of a failure.
type StatusReason string

// The reasons clients test for (client-go's errors.IsNotFound and friends).
const (
	StatusReasonUnknown               StatusReason = ""
	StatusReasonUnauthorized          StatusReason = "Unauthorized"
	StatusReasonForbidden             StatusReason = "Forbidden"
	StatusReasonNotFound              StatusReason = "NotFound"
	StatusReasonAlreadyExists         StatusReason = "AlreadyExists"
	StatusReasonConflict              StatusReason = "Conflict"
	StatusReasonGone                  StatusReason = "Gone"
	StatusReasonInvalid               StatusReason = "Invalid"
	StatusReasonServerTimeout         StatusReason = "ServerTimeout"
	StatusReasonTimeout               StatusReason = "Timeout"
	StatusReasonTooManyRequests       StatusReason = "TooManyRequests"
	StatusReasonBadRequest            StatusReason = "BadRequest"
	StatusReasonMethodNotAllowed      StatusReason = "MethodNotAllowed"
	StatusReasonNotAcceptable         StatusReason = "NotAcceptable"
	StatusReasonRequestEntityTooLarge StatusReason = "RequestEntityTooLarge"
	StatusReasonUnsupportedMediaType  StatusReason = "UnsupportedMediaType"
	StatusReasonInternalError         StatusReason = "InternalError"
	StatusReasonExpired               StatusReason = "Expired"
	StatusReasonServiceUnavailable    StatusReason = "ServiceUnavailable"
)

// CauseType is the machine-readable kind of one cause of a failure.
type CauseType string

// The cause types of field validation and a few others.
const (
	CauseTypeFieldValueNotFound       CauseType = "FieldValueNotFound"
	CauseTypeFieldValueRequired       CauseType = "FieldValueRequired"
	CauseTypeFieldValueDuplicate      CauseType = "FieldValueDuplicate"
	CauseTypeFieldValueInvalid        CauseType = "FieldValueInvalid"
	CauseTypeFieldValueNotSupported   CauseType = "FieldValueNotSupported"
	CauseTypeFieldValueForbidden      CauseType = "FieldValueForbidden"
	CauseTypeFieldValueTooLong        CauseType = "FieldValueTooLong"
	CauseTypeFieldValueTooMany        CauseType = "FieldValueTooMany"
	CauseTypeTypeInvalid              CauseType = "FieldValueTypeInvalid"
	CauseTypeUnexpectedServerResponse CauseType = "UnexpectedServerResponse"
	CauseTypeFieldManagerConflict     CauseType = "FieldManagerConflict"
	CauseTypeResourceVersionTooLarge  CauseType = "ResourceVersionTooLarge"
)

// Status values.
const (
	StatusSuccess = "Success"
	StatusFailure = "Failure"
)

// Status is the v1 Status object. It implements error, so handlers can return
// it and one place writes it.
type Status struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   ListMeta       `json:"metadata"`
	Status     string         `json:"status,omitempty"`
	Message    string         `json:"message,omitempty"`
	Reason     StatusReason   `json:"reason,omitempty"`
	Details    *StatusDetails `json:"details,omitempty"`
	Code       int32          `json:"code,omitempty"`
}

// StatusDetails names the object a Status is about. Kind holds the resource
// plural, except for Invalid, where it holds the Kind.
type StatusDetails struct {
	Name              string        `json:"name,omitempty"`
	Group             string        `json:"group,omitempty"`
	Kind              string        `json:"kind,omitempty"`
	UID               string        `json:"uid,omitempty"`
	Causes            []StatusCause `json:"causes,omitempty"`
	RetryAfterSeconds int32         `json:"retryAfterSeconds,omitempty"`
}

// StatusCause is one reason for a failure; its JSON key for Type is "reason".
type StatusCause struct {
	Type    CauseType `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Field   string    `json:"field,omitempty"`
}

// ListMeta is the metadata of lists (and of Status, where it is always {}).
type ListMeta struct {
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// Error returns the message, so a *Status is an error.
func (s *Status) Error() string { return s.Message }

// GroupResource is a resource plural in a group; String is "res.group", or
// "res" for the core group.
type GroupResource struct {
	Group    string
	Resource string
}

func (gr GroupResource) String() string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// GroupKind is a kind in a group; String is "Kind.group", or "Kind".
type GroupKind struct {
	Group string
	Kind  string
}

func (gk GroupKind) String() string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

func failure(code int32, reason StatusReason, msg string, details *StatusDetails) *Status {
	return &Status{Kind: "Status", APIVersion: "v1", Status: StatusFailure, Code: code, Reason: reason, Message: msg, Details: details}
}

// NewSuccess is the Status a delete answers with when it does not return the object.
func NewSuccess(gr GroupResource, name, uid string) *Status {
	return &Status{Kind: "Status", APIVersion: "v1", Status: StatusSuccess,
		Details: &StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource, UID: uid}}
}

// NewNotFound: 404 `res.group "name" not found`.
func NewNotFound(gr GroupResource, name string) *Status {
	return failure(http.StatusNotFound, StatusReasonNotFound, fmt.Sprintf("%s %q not found", gr, name),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// NewAlreadyExists: 409 `res.group "name" already exists`.
func NewAlreadyExists(gr GroupResource, name string) *Status {
	return failure(http.StatusConflict, StatusReasonAlreadyExists, fmt.Sprintf("%s %q already exists", gr, name),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// NewGenerateNameConflict: 409 AlreadyExists for a generated name that
// collided, with retryAfterSeconds.
func NewGenerateNameConflict(gr GroupResource, name string, retryAfterSeconds int32) *Status {
	return failure(http.StatusConflict, StatusReasonAlreadyExists,
		fmt.Sprintf("%s %q already exists, the server was not able to generate a unique name for the object", gr, name),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource, RetryAfterSeconds: retryAfterSeconds})
}

// OptimisticLockErrorMsg is the detail of a Conflict on a stale resourceVersion.
const OptimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// NewConflict: 409 `Operation cannot be fulfilled on res.group "name": detail`.
func NewConflict(gr GroupResource, name, detail string) *Status {
	return failure(http.StatusConflict, StatusReasonConflict,
		fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", gr, name, detail),
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// NewInvalid: 422 `Kind.group "name" is invalid: field: detail` (several:
// `[field: detail, field: detail]`) with one cause per field error. A cause's
// Message is the detail without the field ("Invalid value: 0: must be ..."),
// as FieldError.ErrorBody() gives in k8s.
func NewInvalid(gk GroupKind, name string, causes []StatusCause) *Status {
	msgs := make([]string, 0, len(causes))
	seen := make(map[string]bool, len(causes))
	for _, c := range causes {
		m := c.Message
		if c.Field != "" {
			m = c.Field + ": " + m
		}
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	var msg string
	switch len(msgs) {
	case 0:
		msg = fmt.Sprintf("%s %q is invalid", gk, name)
	case 1:
		msg = fmt.Sprintf("%s %q is invalid: %s", gk, name, msgs[0])
	default:
		msg = fmt.Sprintf("%s %q is invalid: [%s]", gk, name, strings.Join(msgs, ", "))
	}
	return failure(http.StatusUnprocessableEntity, StatusReasonInvalid, msg,
		&StatusDetails{Name: name, Group: gk.Group, Kind: gk.Kind, Causes: causes})
}

// NewForbidden: 403 `res.group "name" is forbidden: detail` (no name: `res.group
// is forbidden: detail`; no resource: `forbidden: detail`).
func NewForbidden(gr GroupResource, name, detail string) *Status {
	var msg string
	switch {
	case gr.Resource == "" && gr.Group == "":
		msg = "forbidden: " + detail
	case name == "":
		msg = fmt.Sprintf("%s is forbidden: %s", gr, detail)
	default:
		msg = fmt.Sprintf("%s %q is forbidden: %s", gr, name, detail)
	}
	return failure(http.StatusForbidden, StatusReasonForbidden, msg,
		&StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource})
}

// NewUnauthorized: 401 with msg, "Unauthorized" when msg is empty.
func NewUnauthorized(msg string) *Status {
	if msg == "" {
		msg = "Unauthorized"
	}
	return failure(http.StatusUnauthorized, StatusReasonUnauthorized, msg, nil)
}

// NewBadRequest: 400 with msg.
func NewBadRequest(msg string) *Status {
	return failure(http.StatusBadRequest, StatusReasonBadRequest, msg, nil)
}

// NewMethodNotSupported: 405 `verb is not supported on resources of kind "res.group"`.
func NewMethodNotSupported(gr GroupResource, verb string) *Status {
	return failure(http.StatusMethodNotAllowed, StatusReasonMethodNotAllowed,
		fmt.Sprintf("%s is not supported on resources of kind %q", verb, gr),
		&StatusDetails{Group: gr.Group, Kind: gr.Resource})
}

// NewNotAcceptable: 406 listing the media types the server can produce.
func NewNotAcceptable(accepted []string) *Status {
	return failure(http.StatusNotAcceptable, StatusReasonNotAcceptable,
		"only the following media types are accepted: "+strings.Join(accepted, ", "), nil)
}

// NewUnsupportedMediaType: 415 listing the body types the server can read.
func NewUnsupportedMediaType(accepted []string) *Status {
	return failure(http.StatusUnsupportedMediaType, StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(accepted, ", "), nil)
}

// NewRequestEntityTooLarge: 413 `Request entity too large: msg`.
func NewRequestEntityTooLarge(msg string) *Status {
	return failure(http.StatusRequestEntityTooLarge, StatusReasonRequestEntityTooLarge, "Request entity too large: "+msg, nil)
}

// NewResourceExpired: 410 Expired with msg.
func NewResourceExpired(msg string) *Status {
	return failure(http.StatusGone, StatusReasonExpired, msg, nil)
}

// NewGone: 410 Gone with msg (legacy; clients treat it as Expired).
func NewGone(msg string) *Status {
	return failure(http.StatusGone, StatusReasonGone, msg, nil)
}

// NewTooManyRequests: 429 `Too many requests: msg` with retryAfterSeconds. The
// caller also sets the Retry-After header.
func NewTooManyRequests(msg string, retryAfterSeconds int32) *Status {
	return failure(http.StatusTooManyRequests, StatusReasonTooManyRequests, "Too many requests: "+msg,
		&StatusDetails{RetryAfterSeconds: retryAfterSeconds})
}

// NewTimeout: 504 `Timeout: msg` with retryAfterSeconds.
func NewTimeout(msg string, retryAfterSeconds int32) *Status {
	var d *StatusDetails
	if retryAfterSeconds > 0 {
		d = &StatusDetails{RetryAfterSeconds: retryAfterSeconds}
	}
	return failure(http.StatusGatewayTimeout, StatusReasonTimeout, "Timeout: "+msg, d)
}

// NewTooLargeResourceVersion: 504 `Timeout: Too large resource version: rv,
// current: cur` with the ResourceVersionTooLarge cause and retryAfterSeconds.
func NewTooLargeResourceVersion(rv, current uint64, retryAfterSeconds int32) *Status {
	s := NewTimeout(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), retryAfterSeconds)
	if s.Details == nil {
		s.Details = &StatusDetails{}
	}
	s.Details.Causes = []StatusCause{{Type: CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return s
}

// NewServerTimeout: 500 `The op operation against res.group could not be
// completed at this time, please try again.`
func NewServerTimeout(gr GroupResource, op string, retryAfterSeconds int32) *Status {
	return failure(http.StatusInternalServerError, StatusReasonServerTimeout,
		fmt.Sprintf("The %s operation against %s could not be completed at this time, please try again.", op, gr),
		&StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: op, RetryAfterSeconds: retryAfterSeconds})
}

// NewInternalError: 500 `Internal error occurred: err` with err as the cause.
func NewInternalError(err error) *Status {
	return failure(http.StatusInternalServerError, StatusReasonInternalError, "Internal error occurred: "+err.Error(),
		&StatusDetails{Causes: []StatusCause{{Message: err.Error()}}})
}

// NewServiceUnavailable: 503 with msg.
func NewServiceUnavailable(msg string) *Status {
	return failure(http.StatusServiceUnavailable, StatusReasonServiceUnavailable, msg, nil)
}
