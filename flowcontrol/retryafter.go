// This file computes Retry-After per priority level from recent
// rejections, as kube's dropped-requests tracker does: it starts at 1s,
// doubles (to at most 32s) while rejections in the last N seconds reach 3N,
// and comes down by one while they stay under N.

package flowcontrol

import (
	"sync"
	"time"
)

const maxRetryAfter = 32

type dropTracker struct {
	now func() time.Time
	// mu guards levels.
	mu     sync.Mutex
	levels map[string]*dropStats
}

type dropStats struct {
	history      []dropSecond
	current      int64 // unix second being counted
	count        int64
	retryAfter   int64
	lastIncrease int64
}

type dropSecond struct{ unix, count int64 }

func newDropTracker(now func() time.Time) *dropTracker {
	return &dropTracker{now: now, levels: map[string]*dropStats{}}
}

// record notes a rejection in level pl and returns the Retry-After to send.
func (t *dropTracker) record(pl string) int64 {
	now := t.now().Unix()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.levels[pl]
	if s == nil {
		s = &dropStats{retryAfter: 1}
		t.levels[pl] = s
	}
	if s.current == now {
		s.count++
		return s.retryAfter
	}
	if s.count > 0 {
		s.history = append(s.history, dropSecond{s.current, s.count})
	}
	keep := min(2*s.retryAfter, maxRetryAfter)
	i := 0
	for i < len(s.history) && now-s.history[i].unix > keep {
		i++
	}
	s.history = s.history[i:]
	s.current, s.count = now, 1
	var dropped int64
	for j := len(s.history) - 1; j >= 0 && now-s.history[j].unix <= s.retryAfter; j-- {
		dropped += s.history[j].count
	}
	switch {
	case now-s.lastIncrease >= s.retryAfter && dropped >= 3*s.retryAfter:
		s.retryAfter = min(2*s.retryAfter, maxRetryAfter)
		s.lastIncrease = now
	case dropped < s.retryAfter && s.retryAfter > 1:
		s.retryAfter--
	}
	return s.retryAfter
}
