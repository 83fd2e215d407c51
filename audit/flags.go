// This file binds the audit configuration to command-line flags named,
// defaulted and validated as kube-apiserver's --audit-* flags.

package audit

import (
	"flag"
	"fmt"
	"time"
)

// Flags are the values of the --audit-* flags.
type Flags struct {
	// PolicyFile is --audit-policy-file; empty means no audit.
	PolicyFile string
	Log        LogFlags
	Webhook    WebhookFlags
}

// LogFlags are the --audit-log-* flags.
type LogFlags struct {
	Path       string
	MaxAge     int
	MaxBackups int
	MaxSize    int
	Compress   bool
	Format     string
	BackendFlags
}

// WebhookFlags are the --audit-webhook-* flags.
type WebhookFlags struct {
	ConfigFile     string
	InitialBackoff time.Duration
	BackendFlags
}

// BackendFlags are the mode, batch and truncate flags both backends have.
type BackendFlags struct {
	Mode                 string
	BufferSize           int
	MaxBatchSize         int
	MaxBatchWait         time.Duration
	ThrottleEnable       bool
	ThrottleQPS          float64
	ThrottleBurst        int
	TruncateEnabled      bool
	TruncateMaxEventSize int64
	TruncateMaxBatchSize int64
	Version              string
}

// DefaultFlags returns kube-apiserver's defaults: the log backend blocking
// (batch: buffer 10000, batches of 1, no throttle), the webhook backend in
// batch mode (buffer 10000, batches of 400, 30s wait, throttled to 10 QPS
// with a burst of 15, first retry after 10s), truncation off (100 KiB events,
// 10 MiB batches), format json, version audit.k8s.io/v1.
func DefaultFlags() Flags {
	truncate := BackendFlags{TruncateMaxEventSize: 100 * 1024, TruncateMaxBatchSize: 10 * 1024 * 1024, Version: APIVersion, BufferSize: 10000}
	log, webhook := truncate, truncate
	log.Mode, log.MaxBatchSize = string(ModeBlocking), 1
	webhook.Mode, webhook.MaxBatchSize, webhook.MaxBatchWait = string(ModeBatch), 400, 30*time.Second
	webhook.ThrottleEnable, webhook.ThrottleQPS, webhook.ThrottleBurst = true, 10, 15
	return Flags{
		// kube-apiserver's (and k8s.io/sample-apiserver's) defaults since
		// Kubernetes 1.37: a year of files, 100 of them, 100 MB each.
		Log:     LogFlags{Format: "json", MaxAge: 366, MaxBackups: 100, MaxSize: 100, BackendFlags: log},
		Webhook: WebhookFlags{InitialBackoff: 10 * time.Second, BackendFlags: webhook},
	}
}

// AddFlags registers the --audit-* flags of kube-apiserver on fs, with
// DefaultFlags' values, and returns where their values land; turn them into
// a Config with Flags.Config after parsing.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := DefaultFlags()
	fs.StringVar(&f.PolicyFile, "audit-policy-file", f.PolicyFile, "Path to the file that defines the audit policy configuration.")
	fs.StringVar(&f.Log.Path, "audit-log-path", f.Log.Path, "If set, all requests coming to the apiserver will be logged to this file.  '-' means standard out.")
	fs.IntVar(&f.Log.MaxAge, "audit-log-maxage", f.Log.MaxAge, "The maximum number of days to retain old audit log files based on the timestamp encoded in their filename. Setting a value of 0 means old audit log files are not removed based on age.")
	fs.IntVar(&f.Log.MaxBackups, "audit-log-maxbackup", f.Log.MaxBackups, "The maximum number of old audit log files to retain. Setting a value of 0 will mean there's no restriction on the number of files.")
	fs.IntVar(&f.Log.MaxSize, "audit-log-maxsize", f.Log.MaxSize, "The maximum size in megabytes of the audit log file before it gets rotated. Zero means 100.")
	fs.BoolVar(&f.Log.Compress, "audit-log-compress", f.Log.Compress, "If set, the rotated log files will be compressed using gzip.")
	fs.StringVar(&f.Log.Format, "audit-log-format", f.Log.Format, "Format of saved audits. \"json\" indicates structured json format (the legacy one-line text format is not supported).")
	f.Log.BackendFlags.add(fs, pluginLog)
	fs.StringVar(&f.Webhook.ConfigFile, "audit-webhook-config-file", f.Webhook.ConfigFile, "Path to a kubeconfig formatted file that defines the audit webhook configuration.")
	fs.DurationVar(&f.Webhook.InitialBackoff, "audit-webhook-initial-backoff", f.Webhook.InitialBackoff, "The amount of time to wait before retrying the first failed request.")
	f.Webhook.BackendFlags.add(fs, pluginWebhook)
	return &f
}

func (b *BackendFlags) add(fs *flag.FlagSet, plugin string) {
	name := func(s string) string { return "audit-" + plugin + "-" + s }
	fs.StringVar(&b.Mode, name("mode"), b.Mode, "Strategy for sending audit events. Blocking indicates sending events should block server responses. Batch causes the backend to buffer and write events asynchronously. Known modes are batch,blocking,blocking-strict.")
	fs.IntVar(&b.BufferSize, name("batch-buffer-size"), b.BufferSize, "The size of the buffer to store events before batching and writing. Only used in batch mode.")
	fs.IntVar(&b.MaxBatchSize, name("batch-max-size"), b.MaxBatchSize, "The maximum size of a batch. Only used in batch mode.")
	fs.DurationVar(&b.MaxBatchWait, name("batch-max-wait"), b.MaxBatchWait, "The amount of time to wait before force writing the batch that hadn't reached the max size. Only used in batch mode.")
	fs.BoolVar(&b.ThrottleEnable, name("batch-throttle-enable"), b.ThrottleEnable, "Whether batching throttling is enabled. Only used in batch mode.")
	fs.Float64Var(&b.ThrottleQPS, name("batch-throttle-qps"), b.ThrottleQPS, "Maximum average number of batches per second. Only used in batch mode.")
	fs.IntVar(&b.ThrottleBurst, name("batch-throttle-burst"), b.ThrottleBurst, "Maximum number of requests sent at the same moment if ThrottleQPS was not utilized before. Only used in batch mode.")
	fs.BoolVar(&b.TruncateEnabled, name("truncate-enabled"), b.TruncateEnabled, "Whether event and batch truncating is enabled.")
	fs.Int64Var(&b.TruncateMaxBatchSize, name("truncate-max-batch-size"), b.TruncateMaxBatchSize, "Maximum size of the batch sent to the underlying backend. Actual serialized size can be several hundreds of bytes greater. If a batch exceeds this limit, it is split into several batches of smaller size.")
	fs.Int64Var(&b.TruncateMaxEventSize, name("truncate-max-event-size"), b.TruncateMaxEventSize, "Maximum size of the audit event sent to the underlying backend. If the size of an event is greater than this number, first request and response are removed, and if this doesn't reduce the size enough, event is discarded.")
	fs.StringVar(&b.Version, name("version"), b.Version, "API group and version used for serializing audit events written to "+plugin+".")
}

// Config validates the flags as kube-apiserver does and loads the policy
// file. Without --audit-policy-file it returns the zero Config (no audit),
// as kube-apiserver records nothing without a policy. The caller adds
// Registerer, Logger, LongRunning and Stages.
func (f *Flags) Config() (Config, error) {
	if f.PolicyFile == "" {
		return Config{}, nil
	}
	var cfg Config
	if f.Log.Path != "" {
		bc, tc, err := f.Log.BackendFlags.config(pluginLog)
		if err != nil {
			return Config{}, err
		}
		if f.Log.MaxAge < 0 || f.Log.MaxBackups < 0 || f.Log.MaxSize < 0 {
			return Config{}, fmt.Errorf("%w: --audit-log-maxage, --audit-log-maxbackup and --audit-log-maxsize can't be negative", ErrInvalidConfig)
		}
		switch f.Log.Format {
		case "json":
		case "legacy":
			return Config{}, fmt.Errorf("%w: --audit-log-format=legacy is not supported; use json", ErrInvalidConfig)
		default:
			return Config{}, fmt.Errorf("%w: invalid audit log format %s, allowed formats are \"json\"", ErrInvalidConfig, f.Log.Format)
		}
		cfg.Log = LogConfig{Path: f.Log.Path, MaxAge: f.Log.MaxAge, MaxBackups: f.Log.MaxBackups, MaxSize: f.Log.MaxSize,
			Compress: f.Log.Compress, Format: f.Log.Format, Batch: bc, Truncate: tc}
	}
	if f.Webhook.ConfigFile != "" {
		bc, tc, err := f.Webhook.BackendFlags.config(pluginWebhook)
		if err != nil {
			return Config{}, err
		}
		if f.Webhook.InitialBackoff <= 0 {
			return Config{}, fmt.Errorf("%w: --audit-webhook-initial-backoff must be positive", ErrInvalidConfig)
		}
		cfg.Webhook = WebhookConfig{ConfigFile: f.Webhook.ConfigFile, InitialBackoff: f.Webhook.InitialBackoff, Batch: bc, Truncate: tc}
	}
	p, err := LoadPolicyFile(f.PolicyFile)
	if err != nil {
		return Config{}, fmt.Errorf("loading audit policy file: %w", err)
	}
	cfg.Policy = p
	return cfg, nil
}

func (b *BackendFlags) config(plugin string) (BatchConfig, TruncateConfig, error) {
	fail := func(format string, args ...any) (BatchConfig, TruncateConfig, error) {
		return BatchConfig{}, TruncateConfig{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if b.Version != APIVersion {
		return fail("--audit-%s-version %q is not supported, want %s", plugin, b.Version, APIVersion)
	}
	switch Mode(b.Mode) {
	case ModeBatch, ModeBlocking, ModeBlockingStrict:
	default:
		return fail("invalid audit %s mode %s, allowed modes are \"batch,blocking,blocking-strict\"", plugin, b.Mode)
	}
	bc := BatchConfig{Mode: Mode(b.Mode), BufferSize: b.BufferSize, MaxBatchSize: b.MaxBatchSize, MaxBatchWait: b.MaxBatchWait, ThrottleQPS: -1}
	if bc.Mode == ModeBatch {
		if b.BufferSize <= 0 {
			return fail("invalid audit batch %s buffer size %v, must be a positive number", plugin, b.BufferSize)
		}
		if b.MaxBatchSize <= 0 {
			return fail("invalid audit batch %s max batch size %v, must be a positive number", plugin, b.MaxBatchSize)
		}
		if b.MaxBatchWait < 0 {
			return fail("invalid audit batch %s max wait %v, must not be negative", plugin, b.MaxBatchWait)
		}
		if b.ThrottleEnable {
			if b.ThrottleQPS <= 0 {
				return fail("invalid audit batch %s throttle QPS %v, must be a positive number", plugin, b.ThrottleQPS)
			}
			if b.ThrottleBurst <= 0 {
				return fail("invalid audit batch %s throttle burst %v, must be a positive number", plugin, b.ThrottleBurst)
			}
			bc.ThrottleQPS, bc.ThrottleBurst = b.ThrottleQPS, b.ThrottleBurst
		}
	}
	tc := TruncateConfig{Enabled: b.TruncateEnabled, MaxEventSize: b.TruncateMaxEventSize, MaxBatchSize: b.TruncateMaxBatchSize}
	if tc.MaxEventSize <= 0 {
		return fail("invalid audit truncate %s max event size %v, must be a positive number", plugin, tc.MaxEventSize)
	}
	if tc.MaxBatchSize < tc.MaxEventSize {
		return fail("invalid audit truncate %s max batch size %v, must be greater than max event size (%v)", plugin, tc.MaxBatchSize, tc.MaxEventSize)
	}
	return bc, tc, nil
}
