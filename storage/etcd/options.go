// This file holds the Options of a Store and the Config that dials etcd
// from kube-apiserver-named flags.

package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/value"
)

// Options configure a Store. The zero value is the default configuration.
type Options struct {
	// Prefix is prepended to every storage key. Empty means "/annex". Give
	// every application (and every test) sharing an etcd its own prefix;
	// replicas of one application share theirs.
	Prefix string
	// CompactionInterval is how often Start tries to compact. Zero means 5
	// minutes (kube-apiserver's --etcd-compaction-interval); negative
	// disables periodic compaction (Compact still works).
	CompactionInterval time.Duration
	// CompactionKey is the etcd key whose version elects the replica that
	// compacts. Empty means "compact_rev_key", kube-apiserver's.
	CompactionKey string
	// Transformer encrypts values at rest. Nil stores them as they are.
	Transformer value.Transformer
	// Observer is told how long each request took (metrics). Nil means
	// none.
	Observer storage.RequestObserver
	// Clock returns the current time, for creationTimestamp. Nil means
	// time.Now.
	Clock func() time.Time
	// MaxRequestBytes is the etcd servers' --max-request-bytes, the largest
	// request they accept. Zero means etcd's default, 1.5 MiB (1,572,864).
	// The store accepts objects up to 16 KiB less (MaxObjectSize; the rest
	// is for the key, the transaction and encryption at rest) and refuses a
	// larger one with storage.ErrTooLarge before sending it; negative means
	// no limit of the store's own (etcd's still applies, and is reported as
	// storage.ErrTooLarge too).
	MaxRequestBytes int
	// Logger receives the store's few log lines (failed periodic
	// compactions). Nil means no logging.
	Logger *zap.Logger
	// HealthCheckTimeout bounds /healthz's check of etcd (Healthy), and
	// ReadyCheckTimeout /readyz's (Ready). Zero means 2s each, kube's.
	HealthCheckTimeout, ReadyCheckTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = "/annex"
	}
	o.Prefix = "/" + strings.Trim(o.Prefix, "/")
	if o.Prefix == "/" {
		o.Prefix = ""
	}
	if o.CompactionInterval == 0 {
		o.CompactionInterval = 5 * time.Minute
	}
	if o.CompactionKey == "" {
		o.CompactionKey = "compact_rev_key"
	}
	if o.Transformer == nil {
		o.Transformer = value.Identity{}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = defaultMaxRequestBytes
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

// defaultMaxRequestBytes is etcd's default --max-request-bytes; requestReserve
// is what a request takes besides the object's bytes (the key, thrice at
// most, the transaction's compare, put and get, encryption's prefix, nonce
// and tag), rounded well up.
const (
	defaultMaxRequestBytes = 1536 << 10
	requestReserve         = 16 << 10
)

// maxObjectSize is the largest object o lets through; zero means no limit.
func (o Options) maxObjectSize() int {
	if o.MaxRequestBytes < 0 {
		return 0
	}
	return max(o.MaxRequestBytes-requestReserve, 1)
}

// Config says how to reach etcd. The zero value has no servers: Enabled is
// false and the embedded store should be used.
type Config struct {
	// Servers are the etcd client URLs (http:// or https://).
	Servers []string
	// CAFile verifies the servers' certificates; empty uses the system pool.
	CAFile string
	// CertFile and KeyFile are the client certificate and key, for etcd's
	// client certificate authentication.
	CertFile string
	KeyFile  string
	// Prefix is Options.Prefix, from --etcd-prefix.
	Prefix string
	// CompactionInterval is Options.CompactionInterval (zero: 5 minutes,
	// negative: disabled), from --etcd-compaction-interval (where 0
	// disables, as in kube-apiserver).
	CompactionInterval time.Duration
	// DialTimeout bounds the first connection. Zero means 20 seconds.
	DialTimeout time.Duration
	// HealthCheckTimeout and ReadyCheckTimeout are Options' (kube's
	// --etcd-healthcheck-timeout and --etcd-readycheck-timeout).
	HealthCheckTimeout, ReadyCheckTimeout time.Duration
}

// AddFlags binds c to kube-apiserver's etcd flags on fs. The current field
// values are the defaults.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.Func("etcd-servers", "List of etcd servers to connect with (scheme://ip:port), comma separated. Empty keeps objects in the embedded bbolt file.", func(s string) error {
		c.Servers = nil
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				c.Servers = append(c.Servers, v)
			}
		}
		return nil
	})
	fs.StringVar(&c.CAFile, "etcd-cafile", c.CAFile, "SSL Certificate Authority file used to secure etcd communication.")
	for _, t := range []struct {
		p          *time.Duration
		name, help string
	}{{&c.HealthCheckTimeout, "etcd-healthcheck-timeout", "The timeout to use when checking etcd health."},
		{&c.ReadyCheckTimeout, "etcd-readycheck-timeout", "The timeout to use when checking etcd readiness"}} {
		if *t.p == 0 {
			*t.p = 2 * time.Second
		}
		fs.DurationVar(t.p, t.name, *t.p, t.help)
	}
	fs.StringVar(&c.CertFile, "etcd-certfile", c.CertFile, "SSL certification file used to secure etcd communication.")
	fs.StringVar(&c.KeyFile, "etcd-keyfile", c.KeyFile, "SSL key file used to secure etcd communication.")
	prefix := c.Prefix
	if prefix == "" {
		prefix = "/annex"
	}
	c.Prefix = prefix
	fs.StringVar(&c.Prefix, "etcd-prefix", prefix, "The prefix to prepend to all resource paths in etcd.")
	interval := c.CompactionInterval
	if interval == 0 {
		interval = 5 * time.Minute
	}
	c.CompactionInterval = interval
	fs.Func("etcd-compaction-interval", "The interval of compaction requests. If 0, the compaction request from apiserver is disabled. (default "+interval.String()+")", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		if d == 0 {
			d = -1 // disabled, as kube-apiserver's 0
		}
		c.CompactionInterval = d
		return nil
	})
}

// Enabled reports whether servers are configured.
func (c Config) Enabled() bool { return len(c.Servers) > 0 }

// TLS returns the client TLS configuration of the files, or nil when none
// is set.
func (c Config) TLS() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA file %s: no certificate found", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, fmt.Errorf("etcd client certificate: --etcd-certfile and --etcd-keyfile go together")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Client dials etcd.
func (c Config) Client(log *zap.Logger) (*clientv3.Client, error) {
	if !c.Enabled() {
		return nil, fmt.Errorf("etcd: no servers configured")
	}
	tlsCfg, err := c.TLS()
	if err != nil {
		return nil, err
	}
	timeout := c.DialTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	if log == nil {
		log = zap.NewNop()
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   c.Servers,
		DialTimeout: timeout,
		TLS:         tlsCfg,
		Logger:      log,
		// Keep the connection checked, as kube-apiserver does.
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
	})
}

// Open dials etcd and returns a Store that owns the client (Close closes
// it). Config's Prefix and CompactionInterval override opts' when set.
func (c Config) Open(opts Options) (*Store, error) {
	cl, err := c.Client(opts.Logger)
	if err != nil {
		return nil, err
	}
	if c.Prefix != "" {
		opts.Prefix = c.Prefix
	}
	if c.HealthCheckTimeout > 0 {
		opts.HealthCheckTimeout = c.HealthCheckTimeout
	}
	if c.ReadyCheckTimeout > 0 {
		opts.ReadyCheckTimeout = c.ReadyCheckTimeout
	}
	if c.CompactionInterval != 0 {
		opts.CompactionInterval = c.CompactionInterval
	}
	s := New(cl, opts)
	s.ownsClient = true
	return s, nil
}
