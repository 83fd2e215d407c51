package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// recordingWriter keeps what it was given, one Write at a time, and fails
// when err is set.
type recordingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	err    error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.writes++
	return w.buf.Write(p)
}

func (w *recordingWriter) has(line string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Contains(w.buf.String(), line)
}

// Concurrent blocking writers share writes, yet each returns only once its
// own line is written, and lines stay whole and each appears once.
func TestLogSink_concurrent_writes_are_whole_and_written_before_return(t *testing.T) {
	w := &recordingWriter{}
	s := newSinkFor(w, nil)
	const writers, each = 16, 200
	var wg sync.WaitGroup
	var notWritten sync.Map
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				line := fmt.Sprintf("{\"g\":%d,\"i\":%d}\n", g, i)
				if n, err := s.write(context.Background(), [][]byte{[]byte(line)}); n != 0 || err != nil {
					t.Errorf("write: lost %d, %v", n, err)
				}
				if !w.has(line) {
					notWritten.Store(line, true)
				}
			}
		}()
	}
	wg.Wait()
	notWritten.Range(func(k, _ any) bool { t.Errorf("write returned before %q was written", k); return true })
	lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("got %d lines, want %d", len(lines), writers*each)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l, "{\"g\":%d,\"i\":%d}", &g, &i); err != nil || seen[l] {
			t.Fatalf("line %q torn or repeated", l)
		}
		seen[l] = true
	}
	t.Logf("%d lines in %d writes", len(lines), w.writes)
}

func TestLogSink_failed_write_is_reported_to_each_writer(t *testing.T) {
	boom := errors.New("disk full")
	w := &recordingWriter{err: boom}
	s := newSinkFor(w, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := s.write(context.Background(), [][]byte{[]byte("{}\n"), []byte("{}\n")})
			if n != 2 || !errors.Is(err, boom) {
				t.Errorf("write: lost %d, %v; want 2, %v", n, err, boom)
			}
		}()
	}
	wg.Wait()
	if len(s.failed) != 0 {
		t.Errorf("%d failed batches left unclaimed", len(s.failed))
	}
}

func TestWriteChunks_splits_at_line_ends(t *testing.T) {
	line := strings.Repeat("x", maxLogChunk/3) + "\n"
	long := strings.Repeat("y", maxLogChunk+10) + "\n"
	w := &recordingWriter{}
	if err := writeChunks(w, []byte(line+line+line+long+line)); err != nil {
		t.Fatal(err)
	}
	if got, want := w.buf.String(), line+line+line+long+line; got != want {
		t.Fatalf("content changed")
	}
	if w.writes != 4 { // 2 lines, 1 line, the long one, 1 line
		t.Errorf("%d writes, want 4", w.writes)
	}
}
