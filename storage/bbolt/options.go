// This file holds the Options of Open and their defaults.

package bbolt

import (
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
	"github.com/annexapi/annex/storage/value"
)

// Options configure a Store. The zero value is the default configuration.
type Options struct {
	// CompactionInterval is how often the compactor run by Start compacts the
	// history. Zero means 5 minutes (kube-apiserver's
	// --etcd-compaction-interval); a negative value disables periodic
	// compaction (Compact still works on demand).
	CompactionInterval time.Duration
	// HistoryRetention is how much history (in time) the periodic compactor
	// keeps: each compaction drops the revisions committed before about
	// now-HistoryRetention. Zero means 5 minutes.
	HistoryRetention time.Duration
	// ProgressInterval is how often a watcher that asked for ProgressNotify
	// receives a bookmark. Zero means 1 minute.
	ProgressInterval time.Duration
	// Clock returns the current time, for creationTimestamp and the
	// compaction schedule. Nil means time.Now.
	Clock func() time.Time
	// UnsafeNoSync turns off fsync after each commit. A crash of the machine
	// (not only of the process) may then lose or corrupt acknowledged writes.
	// False (fsync on) is the only safe setting; use true for tests and bulk
	// loads only.
	UnsafeNoSync bool
	// MaxBatchSize caps how many writes share one transaction. Zero means 1000.
	MaxBatchSize int
	// LockTimeout is how long Open waits for the file lock held by another
	// process. Zero means 10 seconds.
	LockTimeout time.Duration
	// Transformer transforms each object's JSON on its way into and out of
	// the file (encryption at rest, see storage/value), with the object's
	// key as context. Nil stores the JSON as it is.
	Transformer value.Transformer
	// Observer is told how long each request took (metrics). Nil means
	// none.
	Observer storage.RequestObserver
	// MaxObjectSize is the largest object, in bytes, Create and Update
	// accept (storage.ObjectSizeLimiter); a larger one fails with
	// storage.ErrTooLarge. Zero means backend.DefaultMaxObjectSize (1,556,480
	// bytes, what the etcd backend accepts under etcd's default limit, so an
	// object that fits one backend fits the other); negative means no limit
	// beyond bbolt's own (2 GiB).
	MaxObjectSize int
	// Logger receives the store's few log lines (open, failed periodic
	// compactions). Nil means no logging.
	Logger *zap.Logger
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.CompactionInterval == 0 {
		o.CompactionInterval = 5 * time.Minute
	}
	if o.HistoryRetention <= 0 {
		o.HistoryRetention = 5 * time.Minute
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Minute
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxBatchSize <= 0 {
		o.MaxBatchSize = 1000
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 10 * time.Second
	}
	if o.MaxObjectSize == 0 {
		o.MaxObjectSize = backend.DefaultMaxObjectSize
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}
