// This file holds the watch-initialized signal: how a watch handler tells an
// earlier stage (priority and fairness) that it has sent its initial events,
// so the seats the watch held while it did that work can be released while
// the stream goes on.

package filters

import (
	"context"
	"sync"
)

// watchInitializedKey is the context key of the signal. It is its own type so
// that adding it does not renumber the keys of context.go.
type watchInitializedKey struct{}

// ContextWithWatchInitialized returns a copy of ctx carrying signal, which a
// watch handler calls (through WatchInitialized) once it has sent the initial
// events of the watch (or, for a watch that sends none, once it is set up).
// The signal is wrapped so that it runs at most once, however often it is
// called; it must be safe to call from any goroutine.
func ContextWithWatchInitialized(ctx context.Context, signal func()) context.Context {
	var once sync.Once
	return context.WithValue(ctx, watchInitializedKey{}, func() { once.Do(signal) })
}

// WatchInitialized signals that the watch served with ctx has sent its
// initial events. It does nothing when ctx carries no signal, and calling it
// more than once is harmless. The watch cache calls it after the synthetic
// ADDED events (and the initial-events-end bookmark); a watch that replays
// from a resourceVersion calls it as soon as it is registered.
func WatchInitialized(ctx context.Context) {
	if f, ok := ctx.Value(watchInitializedKey{}).(func()); ok {
		f()
	}
}
