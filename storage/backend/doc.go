// Package backend is the toolkit for writing a storage backend: the parts of
// a [storage.Interface] implementation that do not depend on where the bytes
// are kept, so that every backend (storage/bbolt, storage/etcd) and the watch
// cache (package watch) apply the contract's rules the same way. Consumers of
// storage never need it; a backend imports it next to package storage, as
// kine layers its drivers over one generic core.
//
// # Write loops
//
// [GuaranteedUpdate] and [GuaranteedDelete] implement Update and Delete over
// two backend primitives: read a key's [State], and commit a write if the
// key's mod revision is still the one expected ([UpdateCommitter],
// [DeleteCommitter], returning a [Commit]). They check the preconditions
// ([CheckPreconditions]), retry on conflict, and apply Kubernetes' rules for
// a possibly stale cached state (storage.UpdateOptions.Cached).
//
// # Watchers
//
// [WatchLoop] is the goroutine of a backend's watcher: it sends the initial
// state, then follows the revision the store publishes and reads the
// watch's events behind it (the backend's WatchLoop.Read), with bookmarks,
// until the watch or the store ends; a consumer that does not read blocks
// only its own loop. [WatchEvent] turns a write into the event a watch with
// a predicate sees of it, and [AtRevision] is the object of a deletion.
//
// # Object bytes
//
// [PrepareCreate] and [PrepareUpdate] turn the bytes a caller passed into the
// final bytes a backend stores: compact JSON with metadata.resourceVersion
// (and, on create, uid and creationTimestamp) set, editing the metadata
// members in place without decoding the rest of the object.
// [SetResourceVersion], [SpliceResourceVersion] and [ResourceVersionIndex]
// let a backend splice a revision into stored bytes on every read; [DecodeMeta] parses the metadata
// of bytes this package produced.
//
// # Options, revisions and continue tokens
//
// [ParseGetOptions], [ParseListOptions] (to a [ListRequest]) and
// [ParseWatchOptions] (to a [WatchRequest]) validate a request's key and
// resource version strings as Kubernetes does and resolve which revision to
// read at. [TooLargeError], [ExpiredError] and [ListRequest.ExpiredContinue]
// build the errors of a revision out of reach. [EncodeContinue] and
// [DecodeContinue] write and read the continue token of a paginated list, in
// the format k8s.io/apiserver uses. [ValidateKey] and [PrefixRange] define a
// valid key and the key range a prefix matches.
//
// # Object size
//
// [CheckSize] and [LimitUpdate] refuse an object over a backend's stated
// limit (storage.ObjectSizeLimiter) with storage.ErrTooLarge before a write
// is committed; [DefaultMaxObjectSize] is the limit both built-in backends
// state by default.
//
// Revisions are uint64 throughout, as in [storage.Object]; options carry
// them as strings, as on the wire ([ParseResourceVersion]). A backend whose
// store counts in int64 (etcd) converts at its own boundary.
package backend
