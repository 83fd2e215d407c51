// This file holds the Options of a Store and the Config that connects to
// PostgreSQL from a DSN (--postgres-dsn).

package postgres

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/value"
)

// Options configure a Store. The zero value is the default configuration.
type Options struct {
	// Table is the prefix of the store's table names (<Table>_log,
	// <Table>_kv, <Table>_revision, <Table>_compaction) and of its
	// notification channel. Empty means "annex". Replicas of one
	// application share it; other applications in the same database take
	// their own. It must be a lower-case SQL identifier.
	Table string
	// CompactionInterval is how often Start compacts: each time, the
	// history before the revision current one interval earlier goes, so
	// about one interval of history is kept. Zero means 5 minutes;
	// negative disables periodic compaction (Compact still works).
	CompactionInterval time.Duration
	// CompactionBatch is how many revisions one compaction transaction
	// prunes. Zero means 1,000.
	CompactionBatch int
	// ProgressInterval is how often a watcher that asked for
	// ProgressNotify gets a bookmark when nothing else is sent. Zero means
	// one minute.
	ProgressInterval time.Duration
	// PollInterval is how often the store reads the log when no
	// notification came (a dropped LISTEN connection is noticed and
	// re-established meanwhile). Zero means 5 seconds.
	PollInterval time.Duration
	// RingSize is how many recent events the store keeps in memory for
	// its watchers; a watcher further behind reads the log table. Zero
	// means 4,096.
	RingSize int
	// MaxObjectSize is the largest object the store accepts, in bytes.
	// Zero means 1.5 MiB (etcd's default request limit, so that objects
	// move between backends); negative means no limit.
	MaxObjectSize int
	// Transformer encrypts values at rest. Nil stores them as they are.
	Transformer value.Transformer
	// Observer is told how long each request took (metrics). Nil means
	// none.
	Observer storage.RequestObserver
	// Clock returns the current time, for creationTimestamp. Nil means
	// time.Now.
	Clock func() time.Time
	// Logger receives the store's few log lines. Nil means no logging.
	Logger *zap.Logger
}

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

func (o Options) withDefaults() (Options, error) {
	if o.Table == "" {
		o.Table = "annex"
	}
	if !tableName.MatchString(o.Table) {
		return o, fmt.Errorf("postgres: table prefix %q is not a lower-case SQL identifier", o.Table)
	}
	if o.CompactionInterval == 0 {
		o.CompactionInterval = 5 * time.Minute
	}
	if o.CompactionBatch <= 0 {
		o.CompactionBatch = 1000
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 5 * time.Second
	}
	if o.RingSize <= 0 {
		o.RingSize = 4096
	}
	if o.MaxObjectSize == 0 {
		o.MaxObjectSize = 1536 << 10
	}
	if o.Transformer == nil {
		o.Transformer = value.Identity{}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o, nil
}

func (o Options) maxObjectSize() int { return max(o.MaxObjectSize, 0) }

// Config says how to reach PostgreSQL. The zero value has no DSN: Enabled
// is false.
type Config struct {
	// DSN is a libpq connection string or postgres:// URL
	// (--postgres-dsn). It may hold a password: the store never logs it
	// (Redacted is what may be shown).
	DSN string
	// MaxConns caps the connection pool. Zero means pgxpool's default
	// (the larger of 4 and the number of CPUs), plus one for the
	// notification listener.
	MaxConns int32
}

// AddFlags binds c to the flag --postgres-dsn on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DSN, "postgres-dsn", c.DSN, "PostgreSQL connection string (postgres://user:password@host:port/database?sslmode=... or libpq key=value) of the database that keeps the objects, with --storage-backend=postgres. Any password in it is never logged.")
}

// Enabled reports whether a DSN is configured.
func (c Config) Enabled() bool { return c.DSN != "" }

// Redacted is the DSN's host, port, database and user, without password or
// other parameters: what logs and errors may show.
func (c Config) Redacted() string {
	pc, err := pgxpool.ParseConfig(c.DSN)
	if err != nil {
		return "(unparsable DSN)"
	}
	cc := pc.ConnConfig
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cc.User, cc.Host, cc.Port, cc.Database)
}

// Open connects to the database and returns a Store that owns the pool
// (Close closes it). It creates the store's tables when they are missing.
func (c Config) Open(ctx context.Context, opts Options) (*Store, error) {
	if !c.Enabled() {
		return nil, errors.New("postgres: no DSN configured")
	}
	pc, err := pgxpool.ParseConfig(c.DSN)
	if err != nil {
		// pgx's parse errors can quote the DSN: say only that it is bad.
		return nil, errors.New("postgres: the DSN does not parse (it is not shown: it may hold a password)")
	}
	if c.MaxConns > 0 {
		pc.MaxConns = c.MaxConns
	}
	pc.MaxConns++ // the listener holds one
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", c.Redacted(), err)
	}
	s, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", c.Redacted(), err)
	}
	s.ownsPool = true
	return s, nil
}
