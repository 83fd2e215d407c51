// This file holds the object model every resource shares: TypeMeta,
// ObjectMeta with its OwnerReference and ManagedFieldsEntry, and the
// shapes of lists, watch events and PartialObjectMetadata. JSON names and
// omitempty rules are those of k8s.io/apimachinery/pkg/apis/meta/v1.

package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// TypeMeta is the kind and apiVersion every single-object response carries.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// ObjectMeta is metav1.ObjectMeta: the metadata of every stored object.
// CreationTimestamp has no omitempty, so a zero one is written as
// "creationTimestamp":null, as Kubernetes does.
type ObjectMeta struct {
	Name                       string               `json:"name,omitempty"`
	GenerateName               string               `json:"generateName,omitempty"`
	Namespace                  string               `json:"namespace,omitempty"`
	SelfLink                   string               `json:"selfLink,omitempty"` // deprecated; never set by a server
	UID                        string               `json:"uid,omitempty"`
	ResourceVersion            string               `json:"resourceVersion,omitempty"`
	Generation                 int64                `json:"generation,omitempty"`
	CreationTimestamp          Time                 `json:"creationTimestamp"`
	DeletionTimestamp          *Time                `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64               `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string    `json:"labels,omitempty"`
	Annotations                map[string]string    `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference     `json:"ownerReferences,omitempty"`
	Finalizers                 []string             `json:"finalizers,omitempty"`
	ManagedFields              []ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// OwnerReference points at an object that owns this one; the garbage
// collector follows it. apiVersion, kind, name and uid are always written.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// Managed-fields operations and the one fields type.
const (
	ManagedFieldsOperationApply  = "Apply"
	ManagedFieldsOperationUpdate = "Update"
	FieldsTypeV1                 = "FieldsV1"
)

// ManagedFieldsEntry records which manager owns which fields (server-side
// apply). FieldsV1 is kept as raw JSON.
type ManagedFieldsEntry struct {
	Manager     string          `json:"manager,omitempty"`
	Operation   string          `json:"operation,omitempty"`
	APIVersion  string          `json:"apiVersion,omitempty"`
	Time        *Time           `json:"time,omitempty"`
	FieldsType  string          `json:"fieldsType,omitempty"`
	FieldsV1    json.RawMessage `json:"fieldsV1,omitempty"`
	Subresource string          `json:"subresource,omitempty"`
}

// The finalizers the garbage collector acts on.
const (
	FinalizerOrphanDependents = "orphan"
	FinalizerDeleteDependents = "foregroundDeletion"
)

// Watch event types, exactly as clients accept them.
const (
	WatchAdded    = "ADDED"
	WatchModified = "MODIFIED"
	WatchDeleted  = "DELETED"
	WatchBookmark = "BOOKMARK"
	WatchError    = "ERROR"
)

// WatchEvent is one line of a watch stream: {"type":"ADDED","object":{...}}.
type WatchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// InitialEventsAnnotation marks the bookmark that ends the initial events of
// a watch with sendInitialEvents=true.
const InitialEventsAnnotation = "k8s.io/initial-events-end"

// InitialEventsListBlueprintAnnotation carries, on that bookmark, the base64
// of an empty list of the watched kind.
const InitialEventsListBlueprintAnnotation = "kubernetes.io/initial-events-list-blueprint"

// List is the generic list shape {"kind","apiVersion","metadata","items"}
// with items as raw JSON. Items must be non-nil to be written as [], never
// null; NewList sees to that.
type List struct {
	TypeMeta `json:",inline"`
	Metadata ListMeta          `json:"metadata"`
	Items    []json.RawMessage `json:"items"`
}

// NewList returns a List with an empty, non-nil Items.
func NewList(kind, apiVersion string) *List {
	return &List{TypeMeta: TypeMeta{Kind: kind, APIVersion: apiVersion}, Items: []json.RawMessage{}}
}

// The metadata API's group version and kinds (metadata client, garbage
// collector, kubectl tables).
const (
	MetaGroup                     = "meta.k8s.io"
	MetaGroupVersion              = "meta.k8s.io/v1"
	KindPartialObjectMetadata     = "PartialObjectMetadata"
	KindPartialObjectMetadataList = "PartialObjectMetadataList"
	KindTable                     = "Table"
)

// PartialObjectMetadata is an object reduced to its metadata.
type PartialObjectMetadata struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta `json:"metadata"`
}

// PartialObjectMetadataList is a list of PartialObjectMetadata; Items is
// written as [] when empty if it is non-nil.
type PartialObjectMetadataList struct {
	TypeMeta `json:",inline"`
	Metadata ListMeta                `json:"metadata"`
	Items    []PartialObjectMetadata `json:"items"`
}

// EncodeBookmark returns the JSON of a bookmark object of the given kind:
// only metadata.resourceVersion (and annotations, when given) are set, and
// creationTimestamp is null, as k8s writes it.
func EncodeBookmark(kind, apiVersion, resourceVersion string, annotations map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode(PartialObjectMetadata{
		TypeMeta: TypeMeta{Kind: kind, APIVersion: apiVersion},
		Metadata: ObjectMeta{ResourceVersion: resourceVersion, Annotations: annotations},
	})
	if err != nil {
		return nil, fmt.Errorf("encode bookmark: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
