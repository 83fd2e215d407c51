package audit_test

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/audit"
)

func writePolicy(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(completePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFlags_config(t *testing.T) {
	t.Parallel()
	policy := writePolicy(t)
	logPath := filepath.Join(t.TempDir(), "audit.log")
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, c audit.Config)
	}{
		{"no_policy_is_no_audit", []string{"--audit-log-path=" + logPath}, func(t *testing.T, c audit.Config) {
			if c.Policy != nil || c.Log.Path != "" {
				t.Errorf("config = %+v", c)
			}
		}},
		{"log_defaults", []string{"--audit-policy-file=" + policy, "--audit-log-path=" + logPath}, func(t *testing.T, c audit.Config) {
			want := audit.LogConfig{Path: logPath, Format: "json", MaxAge: 366, MaxBackups: 100, MaxSize: 100,
				Batch:    audit.BatchConfig{Mode: audit.ModeBlocking, BufferSize: 10000, MaxBatchSize: 1, ThrottleQPS: -1},
				Truncate: audit.TruncateConfig{MaxEventSize: 100 << 10, MaxBatchSize: 10 << 20}}
			if c.Policy == nil || c.Log != want || c.Webhook.ConfigFile != "" {
				t.Errorf("log = %+v\nwant %+v", c.Log, want)
			}
		}},
		{"log_all_flags", []string{"--audit-policy-file=" + policy, "--audit-log-path=-", "--audit-log-maxage=30", "--audit-log-maxbackup=10",
			"--audit-log-maxsize=100", "--audit-log-compress", "--audit-log-mode=batch", "--audit-log-batch-buffer-size=5",
			"--audit-log-batch-max-size=3", "--audit-log-batch-max-wait=2s", "--audit-log-batch-throttle-enable",
			"--audit-log-batch-throttle-qps=2.5", "--audit-log-batch-throttle-burst=4", "--audit-log-truncate-enabled",
			"--audit-log-truncate-max-event-size=1000", "--audit-log-truncate-max-batch-size=2000"}, func(t *testing.T, c audit.Config) {
			want := audit.LogConfig{Path: "-", MaxAge: 30, MaxBackups: 10, MaxSize: 100, Compress: true, Format: "json",
				Batch:    audit.BatchConfig{Mode: audit.ModeBatch, BufferSize: 5, MaxBatchSize: 3, MaxBatchWait: 2 * time.Second, ThrottleQPS: 2.5, ThrottleBurst: 4},
				Truncate: audit.TruncateConfig{Enabled: true, MaxEventSize: 1000, MaxBatchSize: 2000}}
			if c.Log != want {
				t.Errorf("log = %+v\nwant %+v", c.Log, want)
			}
		}},
		{"webhook_defaults", []string{"--audit-policy-file=" + policy, "--audit-webhook-config-file=/etc/kc"}, func(t *testing.T, c audit.Config) {
			want := audit.WebhookConfig{ConfigFile: "/etc/kc", InitialBackoff: 10 * time.Second,
				Batch:    audit.BatchConfig{Mode: audit.ModeBatch, BufferSize: 10000, MaxBatchSize: 400, MaxBatchWait: 30 * time.Second, ThrottleQPS: 10, ThrottleBurst: 15},
				Truncate: audit.TruncateConfig{MaxEventSize: 100 << 10, MaxBatchSize: 10 << 20}}
			if c.Webhook != want || c.Log.Path != "" {
				t.Errorf("webhook = %+v\nwant %+v", c.Webhook, want)
			}
		}},
		{"webhook_flags", []string{"--audit-policy-file=" + policy, "--audit-webhook-config-file=/etc/kc", "--audit-webhook-initial-backoff=1s",
			"--audit-webhook-mode=blocking-strict", "--audit-webhook-batch-throttle-enable=false"}, func(t *testing.T, c audit.Config) {
			if c.Webhook.InitialBackoff != time.Second || c.Webhook.Batch.Mode != audit.ModeBlockingStrict {
				t.Errorf("webhook = %+v", c.Webhook)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			f := audit.AddFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.Config()
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

func TestFlags_config_rejects(t *testing.T) {
	t.Parallel()
	policy := writePolicy(t)
	base := []string{"--audit-policy-file=" + policy, "--audit-log-path=/tmp/x.log"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"legacy_format", []string{"--audit-log-format=legacy"}, "legacy is not supported"},
		{"unknown_format", []string{"--audit-log-format=xml"}, "invalid audit log format xml"},
		{"unknown_mode", []string{"--audit-log-mode=async"}, "invalid audit log mode async"},
		{"zero_buffer", []string{"--audit-log-mode=batch", "--audit-log-batch-buffer-size=0"}, "buffer size 0"},
		{"throttle_without_qps", []string{"--audit-log-mode=batch", "--audit-log-batch-throttle-enable"}, "throttle QPS 0"},
		{"negative_maxage", []string{"--audit-log-maxage=-1"}, "can't be negative"},
		{"truncate_batch_smaller", []string{"--audit-log-truncate-max-batch-size=10"}, "must be greater than max event size"},
		{"old_version", []string{"--audit-log-version=audit.k8s.io/v1beta1"}, "not supported"},
		{"webhook_backoff", []string{"--audit-webhook-config-file=/etc/kc", "--audit-webhook-initial-backoff=0s"}, "initial-backoff must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := audit.AddFlags(fs)
			if err := fs.Parse(append(append([]string{}, base...), c.args...)); err != nil {
				t.Fatal(err)
			}
			_, err := f.Config()
			if !errors.Is(err, audit.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalidConfig containing %q", err, c.want)
			}
		})
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := audit.AddFlags(fs)
	if err := fs.Parse([]string{"--audit-policy-file=/nonexistent.yaml"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Config(); !errors.Is(err, audit.ErrInvalidPolicy) {
		t.Fatalf("missing policy file: err = %v", err)
	}
}

func TestConfig_validate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	policy := mustPolicy(t, completePolicy)
	cases := []struct {
		name string
		cfg  audit.Config
		want string // "" means valid
	}{
		{"zero", audit.Config{}, ""},
		{"log_in_missing_dirs", audit.Config{Policy: policy, Log: audit.LogConfig{Path: filepath.Join(dir, "a", "b", "audit.log")}}, ""},
		{"stdout", audit.Config{Policy: policy, Log: audit.LogConfig{Path: "-"}}, ""},
		{"path_is_a_directory", audit.Config{Policy: policy, Log: audit.LogConfig{Path: dir}}, "is a directory"},
		{"parent_is_a_file", audit.Config{Policy: policy, Log: audit.LogConfig{Path: filepath.Join(file, "audit.log")}}, "is not a directory"},
		{"bad_mode", audit.Config{Policy: policy, Log: audit.LogConfig{Path: "-", Batch: audit.BatchConfig{Mode: "later"}}}, "invalid audit log mode later"},
		{"bad_format", audit.Config{Policy: policy, Log: audit.LogConfig{Path: "-", Format: "legacy"}}, "legacy"},
		{"negative_buffer", audit.Config{Policy: policy, Log: audit.LogConfig{Path: "-", Batch: audit.BatchConfig{Mode: audit.ModeBatch, BufferSize: -1}}}, "must be positive"},
		{"bad_truncate", audit.Config{Policy: policy, Log: audit.LogConfig{Path: "-", Truncate: audit.TruncateConfig{Enabled: true, MaxEventSize: 10, MaxBatchSize: 5}}}, "max batch size"},
		{"missing_webhook_kubeconfig", audit.Config{Policy: policy, Webhook: audit.WebhookConfig{ConfigFile: filepath.Join(dir, "nope")}}, "audit webhook"},
		{"bad_policy", audit.Config{Policy: &audit.Policy{Kind: "Policy", APIVersion: audit.APIVersion}, Log: audit.LogConfig{Path: "-"}}, "rules"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
			if _, statErr := os.Stat(filepath.Join(dir, "a")); statErr == nil {
				t.Errorf("Validate made a directory")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Errorf("Validate made a directory")
	}
}
