package storage

import (
	"context"
	"errors"
	"testing"
)

// countingStore counts its Count calls.
type countingStore struct {
	n     int64
	calls int
}

func (s *countingStore) Count(_ context.Context, prefix string) (int64, error) {
	s.calls++
	if want := ResourcePrefix("test.annex.dev", "widgets", ""); prefix != want {
		return 0, errors.New("unexpected prefix " + prefix)
	}
	return s.n, nil
}

// TestObjectCountsAreCachedNotLive: LIST widths read a figure counted when
// refreshed, never a count per request; resources never added (computed
// ones) are unknown, and a failed count keeps the last figure.
func TestObjectCountsAreCachedNotLive(t *testing.T) {
	t.Parallel()
	st := &countingStore{n: 1234}
	var failed []string
	oc := &ObjectCounts{OnError: func(group, resource string, err error) { failed = append(failed, resource) }}
	oc.Add("test.annex.dev", "widgets", st)
	oc.Add("test.annex.dev", "widgets", &countingStore{n: 7}) // another version: the first stays
	if n, ok := oc.ObjectCount("test.annex.dev", "widgets"); ok {
		t.Errorf("before the first count: %d, true; want unknown", n)
	}
	oc.refresh(context.Background())
	st.n = 99 // changes after the refresh are not seen until the next
	for range 3 {
		if n, ok := oc.ObjectCount("test.annex.dev", "widgets"); !ok || n != 1234 {
			t.Errorf("widgets: %d, %v; want 1234, true", n, ok)
		}
	}
	if st.calls != 1 {
		t.Errorf("the store counted %d times for 3 reads, want once", st.calls)
	}
	if _, ok := oc.ObjectCount("test.annex.dev", "gauges"); ok {
		t.Error("a resource never added has a count")
	}
	if _, ok := oc.ObjectCount("other", "widgets"); ok {
		t.Error("an unknown resource has a count")
	}
	oc.Add("test.annex.dev", "others", &countingStore{}) // its prefix makes Count fail
	oc.refresh(context.Background())
	if n, _ := oc.ObjectCount("test.annex.dev", "widgets"); n != 99 || len(failed) != 1 || failed[0] != "others" {
		t.Errorf("after a second refresh: widgets %d, failed %v", n, failed)
	}
}
