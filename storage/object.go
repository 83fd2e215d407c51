// This file holds the object form that travels through storage (JSON bytes plus
// parsed metadata), watch events, and resource version parsing.

package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Object is a stored object: its JSON and the metadata parsed from it.
// Objects returned by a backend are shared: callers must not modify Data or
// Meta's maps.
type Object struct {
	// Key is the storage key the object lives under.
	Key string
	// ResourceVersion is the revision of the write that produced Data.
	ResourceVersion uint64
	// Data is the object's JSON, final: metadata.resourceVersion inside it is
	// ResourceVersion in decimal.
	Data []byte
	// Meta is the metadata parsed from Data.
	Meta Meta
}

// Meta is the part of metadata that storage and selectors need.
type Meta struct {
	Name              string            `json:"name,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
	DeletionTimestamp string            `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
}

// ParseMeta parses the metadata of an object's JSON. It fails with
// ErrInvalidObject when data is not a JSON object or metadata has the wrong shape.
func ParseMeta(data []byte) (Meta, error) {
	// json.Unmarshal takes null for a struct; an object must be an object.
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return Meta{}, &Error{Err: ErrInvalidObject, Msg: "not a JSON object"}
	}
	var doc struct {
		Metadata Meta `json:"metadata"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Meta{}, &Error{Err: ErrInvalidObject, Msg: err.Error()}
	}
	return doc.Metadata, nil
}

// EventType is the kind of a watch event; the values are the wire names.
type EventType string

// The event types.
const (
	EventAdded    EventType = "ADDED"
	EventModified EventType = "MODIFIED"
	EventDeleted  EventType = "DELETED"
	// EventBookmark carries only a revision (Object.ResourceVersion): every
	// change up to it has been delivered.
	EventBookmark EventType = "BOOKMARK"
	// EventError ends a watch; Err says why.
	EventError EventType = "ERROR"
)

// Event is one change seen by a Watcher.
type Event struct {
	Type EventType
	// Object is the new state; for EventDeleted, the last state with
	// ResourceVersion (and metadata.resourceVersion) set to the deletion's
	// revision; for EventBookmark, only ResourceVersion is set.
	Object Object
	// Prev is the state before the change, when the backend knows it
	// (EventModified and EventDeleted).
	Prev *Object
	// Err is set on EventError; it unwraps to one of the sentinel errors.
	Err error
	// Frames, when not nil, memoizes the wire encodings of this event and is
	// shared by every watcher that receives it (see FrameCache). Backends
	// without a fan-out leave it nil.
	Frames *FrameCache
	// InitialEventsEnd marks the EventBookmark that ends the initial events of
	// a watch with WatchOptions.SendInitialEvents: the REST layer writes it
	// with the k8s.io/initial-events-end annotation.
	InitialEventsEnd bool
}

// ParsedResourceVersion is a resource version string as a request carries it.
type ParsedResourceVersion struct {
	// Revision is N for "N"; 0 for "" and "0".
	Revision uint64
	// Unset is true for "".
	Unset bool
}

// ParseResourceVersion parses a resource version from a request: "", "0", or a
// decimal revision. Anything else fails with ErrInvalidResourceVersion.
func ParseResourceVersion(rv string) (ParsedResourceVersion, error) {
	if rv == "" {
		return ParsedResourceVersion{Unset: true}, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return ParsedResourceVersion{}, &Error{Err: ErrInvalidResourceVersion, Msg: fmt.Sprintf("invalid resource version %q", rv)}
	}
	return ParsedResourceVersion{Revision: n}, nil
}

// FormatResourceVersion is the decimal form of a revision.
func FormatResourceVersion(rev uint64) string { return strconv.FormatUint(rev, 10) }
