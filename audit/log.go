// This file holds the log backend: one JSON event per line, to a file
// rotated by gopkg.in/natefinch/lumberjack.v2 (the library kube-apiserver
// uses, so --audit-log-max* mean the same), to stdout, or to any writer.

package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"gopkg.in/natefinch/lumberjack.v2"
)

// LogConfig configures the log backend. The zero value (no Path, no Writer)
// means no log backend.
type LogConfig struct {
	// Path is the file events are appended to (--audit-log-path); "-" means
	// standard output. A file is created with mode 0600 in a directory
	// created with mode 0700 when missing.
	Path string
	// Writer, when set, receives the lines instead of Path (one Write per
	// batch of whole lines). It is never closed.
	Writer io.Writer
	// MaxAge is the number of days rotated files are kept
	// (--audit-log-maxage). Zero means no limit.
	MaxAge int
	// MaxBackups is the number of rotated files kept (--audit-log-maxbackup).
	// Zero means no limit.
	MaxBackups int
	// MaxSize is the size in megabytes at which the file is rotated
	// (--audit-log-maxsize). Zero means 100.
	MaxSize int
	// Compress gzips rotated files (--audit-log-compress).
	Compress bool
	// Format is "json" (--audit-log-format). Zero means json; Kubernetes'
	// "legacy" one-line text format is not supported.
	Format string
	// Batch is the mode (--audit-log-mode, --audit-log-batch-*). Zero means
	// blocking, as kube-apiserver.
	Batch BatchConfig
	// Truncate is --audit-log-truncate-*.
	Truncate TruncateConfig
}

func (c *LogConfig) enabled() bool { return c.Path != "" || c.Writer != nil }

// check validates c without touching the file system beyond looking: the
// path must not be a directory, and its nearest existing ancestor must be
// one (New makes the missing directories).
func (c *LogConfig) check() error {
	switch c.Format {
	case "", "json":
	case "legacy":
		return fmt.Errorf("%w: audit log format \"legacy\" is not supported; use \"json\"", ErrInvalidConfig)
	default:
		return fmt.Errorf("%w: invalid audit log format %q, allowed formats are \"json\"", ErrInvalidConfig, c.Format)
	}
	if c.MaxAge < 0 || c.MaxBackups < 0 || c.MaxSize < 0 {
		return fmt.Errorf("%w: --audit-log-maxage, --audit-log-maxbackup and --audit-log-maxsize can't be negative", ErrInvalidConfig)
	}
	if c.Writer != nil || c.Path == "" || c.Path == "-" {
		return nil
	}
	if fi, err := os.Stat(c.Path); err == nil && fi.IsDir() {
		return fmt.Errorf("%w: audit log %s is a directory", ErrInvalidConfig, c.Path)
	}
	for dir := filepath.Dir(c.Path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%w: audit log %s: %s is not a directory", ErrInvalidConfig, c.Path, dir)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(dir) == dir {
			return fmt.Errorf("%w: audit log: %v", ErrInvalidConfig, err)
		}
	}
}

func newLogSink(c *LogConfig) (*logSink, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	switch {
	case c.Writer != nil:
		return &logSink{w: c.Writer}, nil
	case c.Path == "-":
		return &logSink{w: os.Stdout}, nil
	}
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
		return nil, fmt.Errorf("%w: audit log: %v", ErrInvalidConfig, err)
	}
	f, err := os.OpenFile(c.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: audit log: %v", ErrInvalidConfig, err)
	}
	_ = f.Close()
	lj := &lumberjack.Logger{Filename: c.Path, MaxAge: c.MaxAge, MaxBackups: c.MaxBackups, MaxSize: c.MaxSize, Compress: c.Compress}
	return &logSink{w: lj, c: lj}, nil
}

// logSink writes lines under one lock, so lines of concurrent blocking
// writers never interleave.
type logSink struct {
	mu sync.Mutex // guards w
	w  io.Writer
	c  io.Closer // nil when the writer is not ours to close
}

func (s *logSink) write(_ context.Context, events [][]byte) (int, error) {
	p := events[0]
	if len(events) > 1 {
		n := 0
		for _, e := range events {
			n += len(e)
		}
		p = make([]byte, 0, n)
		for _, e := range events {
			p = append(p, e...)
		}
	}
	s.mu.Lock()
	_, err := s.w.Write(p)
	s.mu.Unlock()
	if err != nil {
		return len(events), err
	}
	return 0, nil
}

func (s *logSink) close() error {
	if s.c == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Close()
}
