// This file holds the option objects of the verbs, in their JSON shapes, so
// that bodies (DeleteOptions on DELETE) and their query forms can be decoded
// into them. JSON names are those of k8s.io/apimachinery/pkg/apis/meta/v1.

package meta

// DeletionPropagation says what happens to dependents on delete.
type DeletionPropagation string

// The propagation policies.
const (
	DeletePropagationOrphan     DeletionPropagation = "Orphan"
	DeletePropagationBackground DeletionPropagation = "Background"
	DeletePropagationForeground DeletionPropagation = "Foreground"
)

// DryRunAll is the one valid dryRun value.
const DryRunAll = "All"

// The fieldValidation values; empty means Warn on the server.
const (
	FieldValidationIgnore = "Ignore"
	FieldValidationWarn   = "Warn"
	FieldValidationStrict = "Strict"
)

// ResourceVersionMatch says how a list interprets resourceVersion.
type ResourceVersionMatch string

// The resourceVersionMatch values.
const (
	ResourceVersionMatchNotOlderThan ResourceVersionMatch = "NotOlderThan"
	ResourceVersionMatchExact        ResourceVersionMatch = "Exact"
)

// Preconditions must hold for a delete (or update) to proceed; the garbage
// collector deletes with UID set.
type Preconditions struct {
	UID             *string `json:"uid,omitempty"`
	ResourceVersion *string `json:"resourceVersion,omitempty"`
}

// DeleteOptions is the body of a DELETE (kind DeleteOptions, apiVersion v1,
// meta.k8s.io/v1, the resource's group version, or none).
type DeleteOptions struct {
	TypeMeta           `json:",inline"`
	GracePeriodSeconds *int64               `json:"gracePeriodSeconds,omitempty"`
	Preconditions      *Preconditions       `json:"preconditions,omitempty"`
	OrphanDependents   *bool                `json:"orphanDependents,omitempty"`
	PropagationPolicy  *DeletionPropagation `json:"propagationPolicy,omitempty"`
	DryRun             []string             `json:"dryRun,omitempty"`
	// IgnoreStoreReadErrorWithClusterBreakingPotential deletes an object that
	// cannot be decoded (k8s 1.32+, behind a gate there).
	IgnoreStoreReadErrorWithClusterBreakingPotential *bool `json:"ignoreStoreReadErrorWithClusterBreakingPotential,omitempty"`
}

// GetOptions are the options of a GET of one object.
type GetOptions struct {
	TypeMeta        `json:",inline"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ListOptions are the options of a LIST or WATCH (query parameters of the
// same names).
type ListOptions struct {
	TypeMeta             `json:",inline"`
	LabelSelector        string               `json:"labelSelector,omitempty"`
	FieldSelector        string               `json:"fieldSelector,omitempty"`
	Watch                bool                 `json:"watch,omitempty"`
	AllowWatchBookmarks  bool                 `json:"allowWatchBookmarks,omitempty"`
	ResourceVersion      string               `json:"resourceVersion,omitempty"`
	ResourceVersionMatch ResourceVersionMatch `json:"resourceVersionMatch,omitempty"`
	TimeoutSeconds       *int64               `json:"timeoutSeconds,omitempty"`
	Limit                int64                `json:"limit,omitempty"`
	Continue             string               `json:"continue,omitempty"`
	SendInitialEvents    *bool                `json:"sendInitialEvents,omitempty"`
}

// CreateOptions are the options of a POST.
type CreateOptions struct {
	TypeMeta        `json:",inline"`
	DryRun          []string `json:"dryRun,omitempty"`
	FieldManager    string   `json:"fieldManager,omitempty"`
	FieldValidation string   `json:"fieldValidation,omitempty"`
}

// UpdateOptions are the options of a PUT.
type UpdateOptions struct {
	TypeMeta        `json:",inline"`
	DryRun          []string `json:"dryRun,omitempty"`
	FieldManager    string   `json:"fieldManager,omitempty"`
	FieldValidation string   `json:"fieldValidation,omitempty"`
}

// PatchOptions are the options of a PATCH; Force applies to apply patches only.
type PatchOptions struct {
	TypeMeta        `json:",inline"`
	DryRun          []string `json:"dryRun,omitempty"`
	Force           *bool    `json:"force,omitempty"`
	FieldManager    string   `json:"fieldManager,omitempty"`
	FieldValidation string   `json:"fieldValidation,omitempty"`
}
