package audit

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// slowWriter counts writes and blocks each until released, so that writers
// pile up behind one another.
type slowWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	writes  int
	pending int // lines of writes waiting at the gate
	gate    chan struct{}
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.pending += bytes.Count(p, []byte("\n"))
	w.mu.Unlock()
	<-w.gate
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

// TestLogSink_group_commit: concurrent writers share write calls, every
// line arrives whole exactly once, and no writer returns before its line
// was written.
func TestLogSink_group_commit(t *testing.T) {
	t.Parallel()
	w := &slowWriter{gate: make(chan struct{})}
	s := &logSink{w: w}
	const n = 200
	var wg sync.WaitGroup
	written := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := []byte(fmt.Sprintf(`{"i":%d}`+"\n", i))
			if lost, err := s.write(context.Background(), [][]byte{line}); lost != 0 || err != nil {
				t.Errorf("write %d: lost %d, %v", i, lost, err)
			}
			w.mu.Lock()
			if !bytes.Contains(w.buf.Bytes(), line) {
				t.Errorf("write %d returned before its line was written", i)
			}
			w.mu.Unlock()
			written <- i
		}()
	}
	// The first group is stuck in its write; every other writer joins the
	// one open group behind it.
	for {
		s.groupMu.Lock()
		lines := 0
		if s.open != nil {
			lines = bytes.Count(s.open.buf, []byte("\n"))
		}
		s.groupMu.Unlock()
		w.mu.Lock()
		lines += w.pending
		w.mu.Unlock()
		if lines == n {
			break
		}
		runtime.Gosched() // polling until the writers queued, not a wait for time
	}
	close(w.gate)
	wg.Wait()
	close(written)
	seen := map[string]bool{}
	for line := range bytes.Lines(w.buf.Bytes()) {
		if seen[string(line)] {
			t.Errorf("line %q written twice", line)
		}
		seen[string(line)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct lines, want %d", len(seen), n)
	}
	if w.writes != 2 {
		t.Errorf("%d writes for %d lines, want 2 (the group in its write, then the one that queued behind it)", w.writes, n)
	}
}
