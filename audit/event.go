// This file holds the audit.k8s.io/v1 Event and EventList, field for field
// and in the order Kubernetes writes them, so a log line or a webhook batch
// written by annex decodes strictly into k8s.io/apiserver's types.

package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/annexapi/annex/meta"
)

// APIVersion is the group/version of the audit types.
const APIVersion = "audit.k8s.io/v1"

// Level is how much of a request is recorded.
type Level string

// The levels, from least to most.
const (
	// LevelNone records nothing.
	LevelNone Level = "None"
	// LevelMetadata records who, what, when and the outcome, without bodies.
	LevelMetadata Level = "Metadata"
	// LevelRequest adds the request body (requestObject).
	LevelRequest Level = "Request"
	// LevelRequestResponse adds the response body (responseObject).
	LevelRequestResponse Level = "RequestResponse"
)

// ord orders the levels; an unknown level is below None.
func (l Level) ord() int {
	switch l {
	case LevelNone:
		return 0
	case LevelMetadata:
		return 1
	case LevelRequest:
		return 2
	case LevelRequestResponse:
		return 3
	}
	return -1
}

// AtLeast reports whether l records at least as much as o.
func (l Level) AtLeast(o Level) bool { return l.ord() >= o.ord() }

// Stage is the point of a request's handling an event was written at.
type Stage string

// The stages, in the order a request reaches them.
const (
	// StageRequestReceived is written as soon as the audit stage receives the
	// request, before the rest of the chain runs.
	StageRequestReceived Stage = "RequestReceived"
	// StageResponseStarted is written when the response headers are sent, for
	// long-running requests (watch) only.
	StageResponseStarted Stage = "ResponseStarted"
	// StageResponseComplete is written when the response is complete.
	StageResponseComplete Stage = "ResponseComplete"
	// StagePanic is written instead of ResponseComplete when a handler
	// panicked.
	StagePanic Stage = "Panic"
)

// Event is an audit.k8s.io/v1 Event.
type Event struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Level      Level  `json:"level"`
	// AuditID is the request's audit ID, the value of its Audit-Id header.
	AuditID string `json:"auditID"`
	Stage   Stage  `json:"stage"`
	// RequestURI is the path and query the client sent.
	RequestURI string `json:"requestURI"`
	// Verb is the Kubernetes verb, or the lower-cased HTTP method of a
	// non-resource request.
	Verb string `json:"verb"`
	// User is the authenticated user (the impersonator when impersonating).
	User UserInfo `json:"user"`
	// ImpersonatedUser is the user the request impersonated, if any.
	ImpersonatedUser *UserInfo `json:"impersonatedUser,omitempty"`
	// SourceIPs are X-Forwarded-For's addresses, X-Real-Ip's, then the peer's.
	SourceIPs []string `json:"sourceIPs,omitempty"`
	UserAgent string   `json:"userAgent,omitempty"`
	// ObjectRef is what a resource request is about; nil for non-resource
	// requests.
	ObjectRef *ObjectReference `json:"objectRef,omitempty"`
	// ResponseStatus is the HTTP code, with a Status body's fields when the
	// response was a Status.
	ResponseStatus *ResponseStatus `json:"responseStatus,omitempty"`
	// RequestObject is the request body as sent (Request level and above).
	RequestObject json.RawMessage `json:"requestObject,omitempty"`
	// ResponseObject is the response body as returned (RequestResponse level).
	ResponseObject           json.RawMessage `json:"responseObject,omitempty"`
	RequestReceivedTimestamp MicroTime       `json:"requestReceivedTimestamp"`
	StageTimestamp           MicroTime       `json:"stageTimestamp"`
	// Annotations are set by the stages a request went through
	// (authorization, admission) and by audit itself.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// EventList is an audit.k8s.io/v1 EventList, the body of a webhook batch.
type EventList struct {
	Kind       string        `json:"kind"`
	APIVersion string        `json:"apiVersion"`
	Metadata   meta.ListMeta `json:"metadata"`
	Items      []Event       `json:"items"`
}

// UserInfo is an authentication.k8s.io/v1 UserInfo.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ObjectReference names the object a request is about.
type ObjectReference struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}

// ResponseStatus is a meta.k8s.io/v1 Status as Kubernetes records it in an
// event: without kind and apiVersion, with the always-present empty
// metadata; only the code for a response that is not a Status.
type ResponseStatus struct {
	Metadata meta.ListMeta       `json:"metadata"`
	Status   string              `json:"status,omitempty"`
	Message  string              `json:"message,omitempty"`
	Reason   meta.StatusReason   `json:"reason,omitempty"`
	Details  *meta.StatusDetails `json:"details,omitempty"`
	Code     int32               `json:"code,omitempty"`
}

// RFC3339Micro is the layout of a meta.k8s.io/v1 MicroTime.
const RFC3339Micro = "2006-01-02T15:04:05.000000Z07:00"

// MicroTime is a time written in UTC with microseconds, as metav1.MicroTime;
// the zero time is null.
type MicroTime struct{ time.Time }

// MarshalJSON writes t as RFC3339Micro in UTC, or null.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(RFC3339Micro)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, RFC3339Micro)
	return append(b, '"'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	pt, err := time.Parse(RFC3339Micro, s)
	if err != nil {
		return fmt.Errorf("audit: timestamp %q: %w", s, err)
	}
	t.Time = pt.Local()
	return nil
}

// The kind, apiVersion and metadata prefix of an encoded EventList.
var eventListPrefix = []byte(`{"kind":"EventList","apiVersion":"` + APIVersion + `","metadata":{},"items":[`)
