// This file holds the object form that travels through storage (JSON bytes plus
// parsed metadata), watch events, the decimal form of a resource version, and
// the uid of a new object.

package storage

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/annexapi/annex/internal/uid"
)

// Object is a stored object: its JSON and the metadata parsed from it.
// Objects returned by a backend are shared: callers must not modify Data
// (Meta's labels are immutable).
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
	Name              string `json:"name,omitempty"`
	Namespace         string `json:"namespace,omitempty"`
	UID               string `json:"uid,omitempty"`
	ResourceVersion   string `json:"resourceVersion,omitempty"`
	CreationTimestamp string `json:"creationTimestamp,omitempty"`
	DeletionTimestamp string `json:"deletionTimestamp,omitempty"`
	Labels            Labels `json:"labels,omitzero"`
}

// metaJSON is Meta as encoding/json decodes it, labels into a map.
type metaJSON struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	CreationTimestamp string            `json:"creationTimestamp"`
	DeletionTimestamp string            `json:"deletionTimestamp"`
	Labels            map[string]string `json:"labels"`
}

func (j *metaJSON) meta() Meta {
	return Meta{Name: j.Name, Namespace: j.Namespace, UID: j.UID, ResourceVersion: j.ResourceVersion,
		CreationTimestamp: j.CreationTimestamp, DeletionTimestamp: j.DeletionTimestamp, Labels: MakeLabels(j.Labels)}
}

// DecodeMetadata decodes an object's metadata member (the JSON object, or
// null) as ParseMeta does. The error is encoding/json's.
func DecodeMetadata(metadata []byte) (Meta, error) {
	var j metaJSON
	if err := json.Unmarshal(metadata, &j); err != nil {
		return Meta{}, err
	}
	return j.meta(), nil
}

// ParseMeta parses the metadata of an object's JSON. It fails with
// ErrInvalidObject when data is not a JSON object or metadata has the wrong shape.
func ParseMeta(data []byte) (Meta, error) {
	// json.Unmarshal takes null for a struct; an object must be an object.
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return Meta{}, &Error{Err: ErrInvalidObject, Msg: "not a JSON object"}
	}
	var doc struct {
		Metadata metaJSON `json:"metadata"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Meta{}, &Error{Err: ErrInvalidObject, Msg: err.Error()}
	}
	return doc.Metadata.meta(), nil
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
	// Memo, when not nil, is shared by every watcher that receives this
	// event: a fan-out (the watch cache) attaches one to each event it
	// dispatches, so that what a consumer derives from the event alone (the
	// REST layer's encoded watch frames) is computed once per event, not
	// once per watcher. Backends without a fan-out leave it nil; a nil
	// *EventMemo computes every time.
	Memo *EventMemo
	// InitialEventsEnd marks the EventBookmark that ends the initial events of
	// a watch with WatchOptions.SendInitialEvents: the REST layer writes it
	// with the k8s.io/initial-events-end annotation.
	InitialEventsEnd bool
}

// FormatResourceVersion is the decimal form of a revision.
func FormatResourceVersion(rev uint64) string { return strconv.FormatUint(rev, 10) }

// NewUID returns a random (version 4) UUID in its canonical text form: the
// metadata.uid that Create gives an object that has none. It is exported for
// the layers that set a uid themselves (an Update that creates, with
// UpdateOptions.IgnoreNotFound).
func NewUID() string { return uid.New() }
