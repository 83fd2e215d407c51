// This file holds Config, its defaults, and the optional interface a
// predicate implements to be routed by an indexed field.

package watch

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// DefaultBookmarkInterval is Config.BookmarkInterval's zero value:
// Kubernetes' watch cache bookmarkFrequency.
const DefaultBookmarkInterval = time.Minute

// Config configures a Cacher. Prefix is required; every other zero field
// means its default.
type Config struct {
	// Prefix is the resource prefix the cache holds, as
	// storage.ResourcePrefix(group, plural, "") returns. Keys outside it are
	// served by the store.
	Prefix string
	// Resource is the value of the metrics' resource label. Empty means
	// "<plural>.<group>" (or "<plural>" for the core group) from Prefix.
	Resource string
	// RingSize is how many recent events the cache keeps: a watch may start
	// from any resource version inside that window, and an exact list at such
	// a revision is served from memory. Zero means 1024.
	RingSize int
	// BookmarkInterval is how often each watcher that asked for
	// ProgressNotify receives a bookmark with the cache's revision, counted
	// from when it started; a watcher whose context has a deadline (the
	// watch's timeout) also gets one 2 seconds before it, and none after, as
	// Kubernetes' watch cache does. Zero means 1 minute (Kubernetes'
	// bookmarkFrequency): at 10,000 watchers that is ~170 bookmarks a
	// second. Tests may set a few milliseconds. Negative disables periodic
	// bookmarks (RequestProgress still sends them).
	BookmarkInterval time.Duration
	// ConsistentReadWait bounds how long a consistent read (resource version
	// "") or a read at a revision the cache has not reached waits for the cache
	// to catch up before it is served by the store instead. Zero means 3
	// seconds, as Kubernetes.
	ConsistentReadWait time.Duration
	// WatcherBuffer is how many events a watcher whose consumer is behind may
	// have queued (beyond its initial events) before it is terminated. Zero
	// means 1000.
	WatcherBuffer int
	// MaxLag is how long a watcher may stay behind (events queued and not
	// taken) before it is terminated at the next event. Zero means 5 seconds.
	MaxLag time.Duration
	// DispatchBudget is how many events may be queued in total across all
	// watchers that are behind; a watcher that would exceed it is terminated.
	// A watch's starting events (its initial state and the changes since)
	// are not counted, nor does MaxLag run while they are taken: WatcherBuffer
	// bounds what queues behind them. Zero means 100,000.
	DispatchBudget int
	// DispatchWorkers is how many goroutines deliver events to watchers. Each
	// watcher belongs to one of them (round robin); each receives every event
	// in order and delivers it to its own watchers, so the fan-out of one
	// event runs in parallel. Zero means GOMAXPROCS when New is called.
	DispatchWorkers int
	// IndexFields are extra fields watchers can be indexed by: a watcher whose
	// predicate implements FieldMatcher and requires an exact value for one of
	// them is visited only by events whose old or new object has that value.
	// "metadata.name" is always indexed.
	IndexFields map[string]IndexFunc
	// Scans limits the cores that long LIST scans of this cache take at
	// once (see Scans); share one between the caches of a server. Nil
	// means a limit of this cache's own, NewScans(0): GOMAXPROCS-1 cores.
	Scans *Scans
	// Registerer receives the cache's metrics, labelled with Resource; nil
	// means no metrics.
	Registerer prometheus.Registerer
	// Logger receives the cache's few log lines (re-lists); nil means none.
	Logger *zap.Logger
	// Clock returns the current time, for lag and wait measurements; nil means
	// time.Now.
	Clock func() time.Time
}

// IndexFunc returns the value of an indexed field of an object. It must be
// safe for concurrent use, must not retain o, and must not decode Data more
// than it needs to (it runs once per event and index).
type IndexFunc func(o *storage.Object) string

// FieldMatcher is implemented by predicates that can say which value a field
// must have for an object to match (a field selector "f=v"). The cacher uses
// it to index watchers by IndexFields.
type FieldMatcher interface {
	// RequiresExactMatch returns the value field must have, and whether the
	// predicate requires one.
	RequiresExactMatch(field string) (value string, ok bool)
}

// nameField is the field every cacher indexes.
const nameField = "metadata.name"

// resultBuffer is the capacity of a watcher's result channel. Events beyond
// it wait in the watcher's queue (only while its consumer is behind), so an
// idle watcher stays small.
const resultBuffer = 8

// relistBackoff is how long Start waits before re-listing after an upstream
// failure.
const relistBackoff = time.Second

func (c Config) withDefaults() (Config, error) {
	if c.Prefix == "" {
		return c, fmt.Errorf("watch: Config.Prefix is required")
	}
	if err := backend.ValidateKey(c.Prefix); err != nil {
		return c, fmt.Errorf("watch: Config.Prefix: %w", err)
	}
	if c.Resource == "" {
		segs := strings.Split(strings.Trim(c.Prefix, "/"), "/")
		c.Resource = segs[len(segs)-1]
		if len(segs) >= 2 && segs[0] != "core" {
			c.Resource += "." + segs[0]
		}
	}
	if c.RingSize <= 0 {
		c.RingSize = 1024
	}
	if c.BookmarkInterval == 0 {
		c.BookmarkInterval = DefaultBookmarkInterval
	}
	if c.ConsistentReadWait <= 0 {
		c.ConsistentReadWait = 3 * time.Second
	}
	if c.WatcherBuffer <= 0 {
		c.WatcherBuffer = 1000
	}
	if c.MaxLag <= 0 {
		c.MaxLag = 5 * time.Second
	}
	if c.DispatchWorkers <= 0 {
		c.DispatchWorkers = runtime.GOMAXPROCS(0)
	}
	if c.DispatchBudget <= 0 {
		c.DispatchBudget = 100_000
	}
	if c.Scans == nil {
		c.Scans = NewScans(0)
	}
	idx := map[string]IndexFunc{nameField: func(o *storage.Object) string { return o.Meta.Name }}
	for k, f := range c.IndexFields {
		if f == nil {
			return c, fmt.Errorf("watch: Config.IndexFields[%q] is nil", k)
		}
		idx[k] = f
	}
	c.IndexFields = idx
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c, nil
}
