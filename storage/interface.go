// This file holds the storage contract: the Interface every backend implements,
// the options of each method, and the optional capability interfaces.

package storage

import (
	"context"
	"time"
)

// Interface is a key-value store of objects with optimistic concurrency and
// watch. Every method is safe for concurrent use.
type Interface interface {
	// Create stores data under key, which must not exist. data is the object's
	// JSON; its metadata.resourceVersion must be empty or absent
	// (ErrResourceVersionSetOnCreate otherwise). Create sets
	// metadata.resourceVersion, and metadata.uid and metadata.creationTimestamp
	// when empty, and returns the object as stored. An existing key fails with
	// ErrAlreadyExists.
	Create(ctx context.Context, key string, data []byte) (Object, error)

	// Get returns the object under key. A missing key fails with ErrNotFound.
	Get(ctx context.Context, key string, opts GetOptions) (Object, error)

	// List returns the objects whose keys lie under prefix, in key order,
	// filtered by opts.Predicate and cut at opts.Limit.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)

	// Update replaces the object under key with what tryUpdate returns for its
	// current state, retrying from a fresh read when a concurrent write got there
	// first (Kubernetes' GuaranteedUpdate; storage/backend has the loop).
	// Preconditions are checked against the state tryUpdate would see. A
	// result whose bytes equal the stored ones (after resourceVersion is set)
	// writes nothing and returns the stored object with its old resource
	// version.
	Update(ctx context.Context, key string, opts UpdateOptions, tryUpdate UpdateFunc) (Object, error)

	// Delete removes the object under key and returns its last state, with its
	// resource version set to the revision of the deletion. Preconditions and
	// opts.Validate are checked against the current state; a concurrent write
	// makes Delete re-read and check again.
	Delete(ctx context.Context, key string, opts DeleteOptions) (Object, error)

	// Watch streams the changes under key (a prefix when opts.Recursive) after
	// opts.ResourceVersion. The watch ends when ctx is done or Stop is called.
	Watch(ctx context.Context, key string, opts WatchOptions) (Watcher, error)
}

// UpdateFunc computes an object's new JSON from its current state. It may be
// called several times (once per conflict retry) and must not have side
// effects beyond its result. current.ResourceVersion is the state's revision;
// when UpdateOptions.IgnoreNotFound is set and the key is missing, current is
// the zero Object. Returning an error aborts the update with that error,
// except ErrDeleteInstead, which deletes the object in the update's place
// (when the last call of the function returned it, the object is gone).
type UpdateFunc func(current Object) ([]byte, error)

// ValidateFunc vets an object just before it is deleted (for example,
// validating admission). It may be called more than once.
type ValidateFunc func(current Object) error

// Preconditions must hold on the current state for an Update or Delete to
// proceed; a failure is ErrConflict. Empty fields are not checked.
type Preconditions struct {
	// UID, when set, must equal metadata.uid.
	UID string
	// ResourceVersion, when set, must equal the object's resource version.
	ResourceVersion string
}

// GetOptions tune Get.
type GetOptions struct {
	// ResourceVersion is "" for the latest state, "0" for any state, or "N" for
	// a state not older than N (ErrTooLargeResourceVersion when N is beyond the
	// store's revision).
	ResourceVersion string
}

// ResourceVersionMatch says how a List interprets ListOptions.ResourceVersion.
type ResourceVersionMatch string

// The ResourceVersionMatch values, as in the resourceVersionMatch query parameter.
const (
	// MatchDefault is the legacy meaning: "N" with a Limit is exact, without a
	// Limit not older than N.
	MatchDefault ResourceVersionMatch = ""
	// MatchNotOlderThan serves any state at or after the resource version.
	MatchNotOlderThan ResourceVersionMatch = "NotOlderThan"
	// MatchExact serves the state at exactly the resource version.
	MatchExact ResourceVersionMatch = "Exact"
)

// ListOptions tune List.
type ListOptions struct {
	// ResourceVersion and ResourceVersionMatch choose the revision to read, as
	// the package doc describes. They must both be empty when Continue is set
	// (a ResourceVersion of "0" is tolerated and ignored).
	ResourceVersion      string
	ResourceVersionMatch ResourceVersionMatch
	// Limit caps the number of items returned; 0 means no limit. Filtering by
	// Predicate happens before the cut, so a page is full whenever enough
	// matching objects exist.
	Limit int64
	// Continue is the token of a previous page.
	Continue string
	// Predicate selects objects; nil selects all.
	Predicate Predicate
	// Stream asks for the items of a list without Limit as ListResult.Each
	// rather than collected in Items, when the store can hand them out
	// without collecting them (the watch cache, from an immutable snapshot).
	// A store that cannot ignores it.
	Stream bool
}

// ListResult is one page of a List.
type ListResult struct {
	// Items are the matching objects, in key order.
	Items []Object
	// Each, when not nil (ListOptions.Stream), replaces Items: it yields
	// the matching objects in key order, the same ones each time it is
	// called, until yield returns false. The objects are shared: callers
	// must not modify them or keep them past yield.
	Each func(yield func(*Object) bool)
	// ResourceVersion is the revision the page was read at.
	ResourceVersion uint64
	// Continue is the token for the next page, or "" when this is the last.
	Continue string
	// RemainingItemCount is the number of objects after this page, set only when
	// there is a next page and no Predicate filters the list.
	RemainingItemCount *int64
}

// UpdateOptions tune Update.
type UpdateOptions struct {
	// Preconditions are checked against the current state.
	Preconditions Preconditions
	// IgnoreNotFound lets tryUpdate create a missing key: it is called with the
	// zero Object.
	IgnoreNotFound bool
	// Cached, when not nil, is a possibly stale copy of the current state (from
	// the watch cache) used instead of a first read. A conflict or a failed
	// precondition against it is retried from a fresh read.
	Cached *Object
}

// DeleteOptions tune Delete.
type DeleteOptions struct {
	// Preconditions are checked against the current state.
	Preconditions Preconditions
	// Validate, when not nil, is called with the current state before deleting.
	Validate ValidateFunc
	// Cached has the meaning it has in UpdateOptions.
	Cached *Object
}

// WatchOptions tune Watch.
type WatchOptions struct {
	// ResourceVersion is where the watch starts: after revision N for "N", or,
	// for "" and "0", with a synthetic EventAdded per existing object and then
	// the changes after the revision of that state.
	ResourceVersion string
	// Recursive makes key a prefix; otherwise only that one key is watched.
	Recursive bool
	// Predicate selects objects; nil selects all. A change that makes an object
	// stop matching is delivered as EventDeleted, one that makes it start
	// matching as EventAdded.
	Predicate Predicate
	// ProgressNotify asks for EventBookmark events that carry the store's revision
	// when nothing else is sent (periodically, and on RequestProgress).
	ProgressNotify bool
	// SendInitialEvents (a watch-list, sendInitialEvents=true) asks for the
	// state as EventAdded events, then one EventBookmark with InitialEventsEnd
	// set at the revision of that state, then the changes. The state is the
	// latest for ResourceVersion "", any for "0", and not older than N for
	// "N". The watch cache (package watch) implements it; backends ignore
	// it, so the REST layer sends watch-lists only to a store that has it.
	SendInitialEvents bool
}

// Watcher is one watch. Stop may be called any number of times, from any
// goroutine; after it, the channel is closed promptly.
type Watcher interface {
	// ResultChan delivers the events; it is closed when the watch ends.
	ResultChan() <-chan Event
	// Stop ends the watch.
	Stop()
}

// Predicate selects objects for List and Watch. Matches must be safe for
// concurrent use and must not retain o.
type Predicate interface {
	Matches(o *Object) bool
}

// PredicateFunc adapts a function to Predicate.
type PredicateFunc func(o *Object) bool

// Matches calls f.
func (f PredicateFunc) Matches(o *Object) bool { return f(o) }

// Selection is a Predicate that also tells the labels' fingerprint
// (Labels.LabelBits) of every object it may select: each bit of Need is
// set in it (meta.LabelSelector.Need). A store or cache that walks many
// objects with each one's fingerprint at hand skips an object whose
// fingerprint is known (not zero) and lacks a bit of Need without calling
// Match, and so without reading the object. Need zero skips nothing.
type Selection struct {
	Match PredicateFunc
	Need  uint64
}

// Matches calls s.Match.
func (s Selection) Matches(o *Object) bool { return s.Match(o) }

// RevisionReader reports the store's current revision, the revision of its
// last committed write. The watch cache uses it for consistent reads.
type RevisionReader interface {
	CurrentRevision(ctx context.Context) (uint64, error)
}

// Compactor drops the history at and before a revision: watches, exact lists
// and continue tokens from there on fail with ErrExpired. Compacting at or
// below the already compacted revision does nothing; the current revision is
// never compacted away (the latest state stays readable).
type Compactor interface {
	Compact(ctx context.Context, revision uint64) error
}

// ProgressRequester makes every watcher that asked for ProgressNotify receive an
// EventBookmark with the current revision soon, once all events up to it have been
// delivered.
type ProgressRequester interface {
	RequestProgress(ctx context.Context) error
}

// Counter counts the objects under a prefix.
type Counter interface {
	Count(ctx context.Context, prefix string) (int64, error)
}

// ObjectSizeLimiter states the largest object a store accepts:
// MaxObjectSize is the largest len(data) Create accepts and the largest
// result of an UpdateFunc Update stores, in bytes, room for what the store
// adds itself (resourceVersion, uid, creationTimestamp, key, encryption)
// already taken off; a larger one fails with ErrTooLarge before anything is
// written. Zero means no limit. The value does not change over the store's
// life, and the method is safe for concurrent use. Callers that can answer
// earlier (the REST layer refuses a too large write with 413 before calling
// the store) ask for it.
type ObjectSizeLimiter interface {
	MaxObjectSize() int
}

// ReadinessChecker reports whether the store can serve requests; nil means ready.
type ReadinessChecker interface {
	Ready(ctx context.Context) error
}

// RequestObserver is told about each request to a backend: the request's
// context, the operation (get, list, count, create, update, delete), the key
// or prefix, when it started and how long it took. Backends take one in
// their options; the server turns it into etcd_request_duration_seconds and
// trace spans.
type RequestObserver func(ctx context.Context, operation, key string, start time.Time, took time.Duration)

// SizeReporter is a backend that knows the size of its database in bytes,
// per endpoint (an etcd member's URL, a bbolt file's path): what
// apiserver_storage_db_total_size_in_bytes reports.
type SizeReporter interface {
	DBSize(ctx context.Context) (map[string]int64, error)
}
