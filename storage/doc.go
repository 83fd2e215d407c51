// Package storage is the contract between annex and the stores that keep its
// objects: the [Interface] every backend implements, the [Object] form that
// travels through it (canonical JSON bytes plus parsed metadata), the options
// and results of its methods, watch [Event]s, the sentinel errors, the key
// layout, and the optional capability interfaces a backend may also
// implement. It holds what a consumer needs and nothing more.
//
// The package knows nothing of HTTP. The REST layer consumes it and maps its
// errors to Kubernetes Status codes; backends (storage/bbolt, storage/etcd)
// and the watch cache (package watch) implement it. What implementing it
// takes beyond the contract (the write loops, the editing of object bytes,
// option parsing, continue tokens) is the toolkit in storage/backend;
// storage/storagetest is the conformance suite every implementation runs.
//
// # Objects are bytes
//
// An [Object] is its JSON encoding plus the metadata parsed from it. Backends store
// and return final bytes: metadata.resourceVersion inside Data always equals
// Object.ResourceVersion, so a reader can copy Data to the wire without decoding
// it. Create also sets metadata.uid and metadata.creationTimestamp when the caller
// left them empty; everything else in metadata (generation, finalizers, deletion
// timestamps) belongs to the layer above.
//
// # Resource versions
//
// A resource version is the revision of the store: a global counter incremented
// once per committed write, never reused, never "0". An object's resource version
// is the revision of the write that last changed it; a list's resource version is
// the revision it was read at. Revisions are uint64 in results ([Object],
// [ListResult], [Error]); options carry them as the strings of the wire
// ([FormatResourceVersion] is the conversion), with these meanings:
//
//   - "" means the latest state (a consistent read);
//   - "0" means any state the backend has at hand;
//   - "N" means not older than N (Get, List, and Watch start after N);
//   - with [ListOptions].ResourceVersionMatch set to [MatchExact], exactly N.
//
// A version newer than the store's current revision fails with
// [ErrTooLargeResourceVersion]; one older than the compacted history fails with
// [ErrExpired].
//
// # Pagination
//
// A List with a Limit returns at most Limit items and an opaque continue token.
// Every page of one list is served at the revision of its first page (snapshot
// semantics, as etcd gives). Once that revision is compacted, the token fails
// with [ErrExpired] and the error carries a fresh "inconsistent" token that
// continues from the same key at the latest revision. The token format is the
// one k8s.io/apiserver uses (storage/backend writes and reads it).
//
// # Keys
//
// Keys are slash-separated paths: /<group>/<resource>/<namespace>/<name> for a
// namespaced object, /<group>/<resource>/<name> for a cluster-scoped one (see
// [ObjectKey] and [ResourcePrefix]). List and Watch take a prefix and match only
// whole segments: the prefix /a/foo matches /a/foo/x but never /a/foobar/x. A
// key with an empty, "." or ".." segment fails with [ErrInvalidKey].
//
// # Watch
//
// A [Watcher] delivers the [Event]s of one prefix (or one key) in revision order,
// each at most once and without gaps, starting after the requested revision. A
// watch from "" or "0" first sends a synthetic [EventAdded] event for every object that
// exists, then the changes. A DELETED event carries the object's last state with
// its resource version set to the revision of the deletion. A watcher that
// cannot be served any longer (its start revision was compacted, the backend
// closed, the consumer fell too far behind) ends with an [EventError] event whose Err
// says why, then its channel is closed. An event from a fan-out (the watch
// cache) carries an [EventMemo] shared by every watcher that receives it, so
// that consumers derive what they write from it (encoded frames) once.
//
// # Capabilities
//
// Beyond the six methods of [Interface], a backend may implement any of the
// one-method interfaces [RevisionReader], [Compactor], [ProgressRequester],
// [Counter], [ReadinessChecker] and [ObjectSizeLimiter]. Callers find them by
// type assertion.
//
// # Concurrency
//
// Every method of an Interface implementation is safe for concurrent use. The
// UpdateFunc passed to Update may run more than once and must not have side
// effects beyond its result.
package storage
