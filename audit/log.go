// This file holds the log backend: one JSON event per line, to a file
// rotated by gopkg.in/natefinch/lumberjack.v2 (the library kube-apiserver
// uses, so --audit-log-max* mean the same), to stdout, or to any writer.

package audit

import (
	"bytes"
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
		return newSinkFor(c.Writer, nil), nil
	case c.Path == "-":
		return newSinkFor(os.Stdout, nil), nil
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
	return newSinkFor(lj, lj), nil
}

// logSink writes lines in order, never interleaving those of concurrent
// writers. Writers that arrive while another's write is in progress queue
// their lines, and the first of them writes everything queued in one Write
// (group commit): each write call still returns only once its own lines were
// written, as blocking mode promises, but concurrent requests share a system
// call instead of each making its own while the others wait for the lock.
type logSink struct {
	w io.Writer
	c io.Closer // nil when the writer is not ours to close

	mu      sync.Mutex
	cond    sync.Cond // on mu; broadcast when a write completes
	writing bool      // a write is in progress, mu released
	pending []byte    // queued lines, written in batch done+1 (done+2 while writing)
	queued  int       // events in pending
	spare   []byte    // the last written buffer, reused for pending
	done    uint64    // batches written
	failed  map[uint64]*batchErr
}

// batchErr is a failed batch's error until each of its writers took it.
type batchErr struct {
	err  error
	left int // events whose writers have not yet returned
}

// maxLogChunk is the most bytes of whole lines handed to the writer at once
// (lumberjack refuses a write larger than its maximum file size, at least
// 1 MB); a single longer line is written alone.
const maxLogChunk = 256 << 10

func newSinkFor(w io.Writer, c io.Closer) *logSink {
	s := &logSink{w: w, c: c}
	s.cond.L = &s.mu
	return s
}

func (s *logSink) write(_ context.Context, events [][]byte) (int, error) {
	s.mu.Lock()
	for _, e := range events {
		s.pending = append(s.pending, e...)
	}
	return s.commitLocked(len(events))
}

// writeLine is write for one line.
func (s *logSink) writeLine(line []byte) (int, error) {
	s.mu.Lock()
	s.pending = append(s.pending, line...)
	return s.commitLocked(1)
}

// commitLocked queues n events just appended to pending, with mu held, and
// returns (releasing mu) once they are written: write's result.
func (s *logSink) commitLocked(n int) (int, error) {
	s.queued += n
	batch := s.done + 1
	if s.writing {
		batch++
	}
	for s.done < batch {
		if s.writing {
			s.cond.Wait()
			continue
		}
		s.flushLocked() // our lines are pending: write them and whatever queued with them
	}
	var err error
	if f := s.failed[batch]; f != nil {
		err = f.err
		if f.left -= n; f.left <= 0 {
			delete(s.failed, batch)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return n, err
	}
	return 0, nil
}

// flushLocked writes the pending lines as batch done+1, with mu held
// (released during the write).
func (s *logSink) flushLocked() {
	p, n := s.pending, s.queued
	s.pending, s.queued, s.spare = s.spare[:0], 0, nil
	s.writing = true
	s.mu.Unlock()
	err := writeChunks(s.w, p)
	s.mu.Lock()
	s.writing = false
	s.done++
	if err != nil {
		if s.failed == nil {
			s.failed = map[uint64]*batchErr{}
		}
		s.failed[s.done] = &batchErr{err: err, left: n}
	}
	if cap(p) <= 4*maxLogChunk {
		s.spare = p[:0]
	}
	s.cond.Broadcast()
}

// writeChunks writes p, whole lines, in chunks of at most maxLogChunk bytes
// (or one line, when longer).
func writeChunks(w io.Writer, p []byte) error {
	for len(p) > 0 {
		n := len(p)
		if n > maxLogChunk {
			if i := bytes.LastIndexByte(p[:maxLogChunk], '\n'); i >= 0 {
				n = i + 1
			} else if i := bytes.IndexByte(p, '\n'); i >= 0 {
				n = i + 1
			}
		}
		if _, err := w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func (s *logSink) close() error {
	if s.c == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.writing {
		s.cond.Wait()
	}
	return s.c.Close()
}
