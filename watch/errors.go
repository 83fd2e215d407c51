// This file holds the package's sentinel errors.

package watch

import (
	"errors"
	"fmt"

	"github.com/annexapi/annex/storage"
)

// Errors of the watch cache.
var (
	// ErrNotReady is returned by Ready (and by a watch-list) before the cache
	// has loaded its initial list, and while it re-lists after losing its
	// upstream watch.
	// It wraps storage.ErrNotReady, which the REST layer answers with 429
	// and Retry-After.
	ErrNotReady = fmt.Errorf("watch cache is not ready: %w", storage.ErrNotReady)
	// ErrSlowWatcher is carried, together with storage.ErrExpired, by the
	// EventError that ends a watcher cut off for not reading its events in
	// time. The REST layer may end the stream without writing the ERROR event
	// (as Kubernetes closes a terminated watcher) so that the client re-watches
	// from its last resource version instead of re-listing.
	ErrSlowWatcher = errors.New("watcher fell behind and was terminated")
	// ErrRelisted is carried, together with storage.ErrExpired, by the
	// EventError that ends every watcher when the cache loses its upstream
	// watch and re-lists: events in between may be missing.
	ErrRelisted = errors.New("watch cache re-listed")
	// ErrStopped is carried, together with storage.ErrClosed, by the
	// EventError that ends every watcher when Start returns.
	ErrStopped = errors.New("watch cache stopped")
)
