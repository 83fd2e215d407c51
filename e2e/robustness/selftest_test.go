// This file holds the harness's self-tests: the model on its own, recorded
// histories broken on purpose, and broken servers (a proxy in front of the
// real one) that the same checker must catch end to end.

package robustness

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestModelStep(t *testing.T) {
	absent := keyState{RV: 4}
	present := keyState{Exists: true, RV: 5, Value: "a"}
	unknownRV := keyState{Exists: true, RV: 5, Value: "b", RVUnknown: true}
	tests := []struct {
		name string
		s    keyState
		in   modelInput
		out  modelOutput
		want int // how many next states
	}{
		{"create_on_absent", absent, modelInput{Kind: OpCreate, Value: "x"}, modelOutput{OK, 6, "x"}, 1},
		{"create_rv_not_increasing", absent, modelInput{Kind: OpCreate, Value: "x"}, modelOutput{OK, 4, "x"}, 0},
		{"create_on_present_ok", present, modelInput{Kind: OpCreate, Value: "x"}, modelOutput{OK, 6, "x"}, 0},
		{"create_already_exists", present, modelInput{Kind: OpCreate, Value: "x"}, modelOutput{Outcome: AlreadyExists}, 1},
		{"create_already_exists_on_absent", absent, modelInput{Kind: OpCreate, Value: "x"}, modelOutput{Outcome: AlreadyExists}, 0},
		{"create_unknown_on_absent", absent, modelInput{Kind: OpCreate, Value: "x"}, modelOutput{Outcome: Unknown}, 2},
		{"create_unknown_on_present", present, modelInput{Kind: OpCreate, Value: "x"}, modelOutput{Outcome: Unknown}, 1},
		{"get_latest", present, modelInput{Kind: OpGet}, modelOutput{OK, 5, "a"}, 1},
		{"get_stale_value", present, modelInput{Kind: OpGet}, modelOutput{OK, 3, "old"}, 0},
		{"get_not_found_on_present", present, modelInput{Kind: OpGet}, modelOutput{Outcome: NotFound}, 0},
		{"get_fixes_unknown_rv", unknownRV, modelInput{Kind: OpGet}, modelOutput{OK, 9, "b"}, 1},
		{"get_unknown_rv_not_after", unknownRV, modelInput{Kind: OpGet}, modelOutput{OK, 5, "b"}, 0},
		{"update_precondition_holds", present, modelInput{Kind: OpUpdate, Value: "y", Precondition: 5}, modelOutput{OK, 7, "y"}, 1},
		{"update_stale_precondition_ok", present, modelInput{Kind: OpUpdate, Value: "y", Precondition: 3}, modelOutput{OK, 7, "y"}, 0},
		{"update_stale_precondition_conflict", present, modelInput{Kind: OpUpdate, Value: "y", Precondition: 3}, modelOutput{Outcome: Conflict}, 1},
		{"update_fresh_precondition_conflict", present, modelInput{Kind: OpUpdate, Value: "y", Precondition: 5}, modelOutput{Outcome: Conflict}, 0},
		{"update_absent_not_found", absent, modelInput{Kind: OpUpdate, Value: "y", Precondition: 5}, modelOutput{Outcome: NotFound}, 1},
		{"patch_unconditional", present, modelInput{Kind: OpPatch, Value: "y"}, modelOutput{OK, 8, "y"}, 1},
		{"patch_never_conflicts", present, modelInput{Kind: OpPatch, Value: "y"}, modelOutput{Outcome: Conflict}, 0},
		{"delete_returns_last_value", present, modelInput{Kind: OpDelete}, modelOutput{OK, 8, "a"}, 1},
		{"delete_returns_other_value", present, modelInput{Kind: OpDelete}, modelOutput{OK, 8, "z"}, 0},
		{"delete_absent", absent, modelInput{Kind: OpDelete}, modelOutput{Outcome: NotFound}, 1},
		{"delete_precondition_conflict", present, modelInput{Kind: OpDelete, Precondition: 2}, modelOutput{Outcome: Conflict}, 1},
		{"delete_unknown", present, modelInput{Kind: OpDelete}, modelOutput{Outcome: Unknown}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := step(tc.s, tc.in, tc.out); len(got) != tc.want {
				t.Errorf("step(%+v, %+v, %+v) = %+v, want %d states", tc.s, tc.in, tc.out, got, tc.want)
			}
		})
	}
}

// recordedHistory runs one fault-free bbolt run and returns its history,
// which must check clean.
func recordedHistory(t *testing.T) *History {
	t.Helper()
	b := &backend{name: "bbolt", bin: bin}
	h, r := runOnce(t, b, runConfig{seed: baseSeed(t), clients: 4, load: 1500 * time.Millisecond})
	for _, v := range r.Violations {
		t.Errorf("the recorded history itself: %s", v)
	}
	if t.Failed() {
		t.FailNow()
	}
	return h
}

// longestWatch returns the watch with the most live events.
func longestWatch(h *History) *Watch {
	var best *Watch
	n := -1
	for _, w := range h.Watches {
		if _, first, ok := liveStart(w); ok && len(w.Events)-first > n {
			best, n = w, len(w.Events)-first
		}
	}
	return best
}

// ackedRVs are the revisions of acknowledged writes.
func ackedRVs(h *History) map[uint64]Op {
	m := map[uint64]Op{}
	for _, op := range h.Ops {
		if op.Outcome == OK && op.Kind != OpGet && op.Kind != OpList {
			m[op.Obj.RV] = op
		}
	}
	return m
}

// TestCheckerCatchesBrokenHistories breaks a recorded history in one place
// at a time; the checker must name the broken guarantee.
func TestCheckerCatchesBrokenHistories(t *testing.T) {
	h := recordedHistory(t)
	tests := []struct {
		name    string
		want    string
		breakIt func(t *testing.T, h *History)
	}{
		{"watch_event_removed", GWatchNoGap, func(t *testing.T, h *History) {
			w := longestWatch(h)
			acked := ackedRVs(h)
			_, first, _ := liveStart(w)
			for i := first; i < len(w.Events)-1; i++ {
				if _, ok := acked[w.Events[i].Obj.RV]; ok && w.Events[i].Type != "BOOKMARK" {
					w.Events = append(w.Events[:i], w.Events[i+1:]...)
					return
				}
			}
			t.Fatal("no acknowledged event to remove")
		}},
		{"watch_events_swapped", GWatchOrder, func(t *testing.T, h *History) {
			w := longestWatch(h)
			_, first, _ := liveStart(w)
			for i := first; i+1 < len(w.Events); i++ {
				if w.Events[i].Type != "BOOKMARK" && w.Events[i+1].Type != "BOOKMARK" {
					w.Events[i], w.Events[i+1] = w.Events[i+1], w.Events[i]
					return
				}
			}
			t.Fatal("no two events to swap")
		}},
		{"bookmark_ahead_of_events", GWatchBookmark, func(t *testing.T, h *History) {
			w := longestWatch(h)
			_, first, _ := liveStart(w)
			for i := first; i+1 < len(w.Events); i++ {
				if w.Events[i+1].Type != "BOOKMARK" {
					bm := WatchEvent{Type: "BOOKMARK", Obj: Object{RV: w.Events[i+1].Obj.RV}, At: w.Events[i].At}
					w.Events = append(w.Events[:i+1], append([]WatchEvent{bm}, w.Events[i+1:]...)...)
					return
				}
			}
			t.Fatal("no event to put a bookmark before")
		}},
		{"stale_consistent_get", GLinearizable, func(t *testing.T, h *History) {
			// A GET after a completed update returns the value before it.
			byKey := map[string][]Op{}
			for _, op := range h.Ops {
				if op.Outcome == OK && (op.Kind == OpCreate || op.Kind == OpUpdate || op.Kind == OpPatch) {
					byKey[op.Key] = append(byKey[op.Key], op)
				}
			}
			for _, ops := range byKey {
				for i := 1; i < len(ops); i++ {
					prev, next := ops[i-1], ops[i]
					if prev.Obj.RV < next.Obj.RV && next.Kind != OpCreate {
						old := *prev.Obj
						h.Ops = append(h.Ops, Op{Client: 0, Kind: OpGet, Key: next.Key, Call: next.Return + 1, Return: next.Return + 2, Outcome: OK, Status: 200, Obj: &old})
						return
					}
				}
			}
			t.Fatal("no key updated twice")
		}},
		{"list_missing_item", GListState, func(t *testing.T, h *History) {
			for i := len(h.Ops) - 1; i >= 0; i-- {
				if op := &h.Ops[i]; op.Kind == OpList && op.Outcome == OK && len(op.Items) > 0 && !op.GapFill {
					op.Items = op.Items[1:]
					return
				}
			}
			t.Fatal("no list with items")
		}},
		{"acknowledged_write_lost", GListState, func(t *testing.T, h *History) {
			// The final consistent list forgets the last acknowledged write
			// to a key that still exists, as a restart that lost it would.
			last := &h.Ops[len(h.Ops)-1]
			if last.Kind != OpList || len(last.Items) == 0 {
				t.Fatal("the history does not end with a non-empty list")
			}
			last.Items = last.Items[:len(last.Items)-1]
		}},
		{"watchlist_initial_state_wrong", GWatchListState, func(t *testing.T, h *History) {
			for _, w := range h.Watches {
				if _, first, ok := liveStart(w); ok && w.SendInitial && first >= 2 {
					w.Events = w.Events[1:]
					return
				}
			}
			t.Fatal("no WatchList with initial events")
		}},
		{"revision_reused", GUniqueRevision, func(t *testing.T, h *History) {
			w := longestWatch(h)
			_, first, _ := liveStart(w)
			for i := first; i < len(w.Events); i++ {
				if w.Events[i].Type == "MODIFIED" || w.Events[i].Type == "ADDED" {
					w.Events[i].Obj.Value += "-other"
					return
				}
			}
			t.Fatal("no event to change")
		}},
		{"consistent_list_stale", GListFresh, func(t *testing.T, h *History) {
			for i := len(h.Ops) - 1; i >= 0; i-- {
				if op := &h.Ops[i]; op.Kind == OpList && op.Outcome == OK && op.RV == "" && op.ListRV > h.BaseRV+1 {
					op.ListRV, op.PageRV, op.Items = h.BaseRV, []uint64{h.BaseRV}, nil
					return
				}
			}
			t.Fatal("no consistent list")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := h.Clone()
			c.VisualizationDir = t.TempDir() // self-tests break histories on purpose
			tc.breakIt(t, c)
			r := Check(c)
			if !r.Has(tc.want) {
				t.Errorf("broken history not caught as %q; violations: %v", tc.want, r.Violations)
			}
			t.Logf("caught: %v", r.Violations[0])
		})
	}
}

// brokenProxy is a reverse proxy in front of a real server that breaks one
// guarantee: "stale-get" serves every consistent GET of an object from the
// first answer it saw for it; "drop-event" drops the second event of every
// watch.
func brokenProxy(mode string) func(t testing.TB, ep *Endpoint) *Endpoint {
	return func(t testing.TB, ep *Endpoint) *Endpoint {
		target, err := url.Parse(ep.BaseURL)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		cache := map[string][]byte{}
		rp := &httputil.ReverseProxy{
			Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.Out.Host = target.Host },
			Transport:     ep.HTTP.Transport,
			FlushInterval: -1,
			ModifyResponse: func(resp *http.Response) error {
				req := resp.Request
				q := req.URL.Query()
				switch {
				case mode == "drop-event" && q.Get("watch") == "true" && resp.StatusCode == http.StatusOK:
					resp.Body = dropSecondEvent(resp.Body)
				case mode == "stale-get" && req.Method == http.MethodGet && q.Get("watch") == "" && q.Get("resourceVersion") == "" &&
					strings.Count(req.URL.Path, "/") == 7 && resp.StatusCode == http.StatusOK:
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						return err
					}
					mu.Lock()
					if old, ok := cache[req.URL.Path]; ok {
						b = old
					} else {
						cache[req.URL.Path] = b
					}
					mu.Unlock()
					resp.Body = io.NopCloser(bytes.NewReader(b))
					resp.ContentLength = int64(len(b))
					resp.Header.Del("Content-Length")
				}
				return nil
			},
		}
		srv := httptest.NewServer(rp)
		t.Cleanup(srv.Close)
		return &Endpoint{Name: ep.Name, BaseURL: srv.URL, HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	}
}

type pipeBody struct {
	io.Reader
	close func() error
}

func (p pipeBody) Close() error { return p.close() }

// dropSecondEvent passes a watch stream through without its second
// non-bookmark event.
func dropSecondEvent(body io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		n := 0
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.Contains(line[:min(len(line), 24)], []byte(`"BOOKMARK"`)) {
				n++
				if n == 2 {
					continue
				}
			}
			if _, err := pw.Write(append(line, '\n')); err != nil {
				break
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pipeBody{Reader: pr, close: func() error { pr.Close(); return body.Close() }}
}

// TestBrokenServerCaught runs the workload against broken servers: the
// checker must find each one's violation end to end.
func TestBrokenServerCaught(t *testing.T) {
	tests := []struct {
		mode string
		want string
	}{
		{"stale-get", GLinearizable},
		{"drop-event", GWatchNoGap},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			// A run too short or too slow (a loaded machine) may give the
			// broken proxy no chance: a stale GET needs a write to its key
			// between two GETs. Up to three runs, the first that catches it
			// passes.
			var got []Violation
			for attempt := range 3 {
				b := &backend{name: "bbolt", bin: bin}
				_, r := runOnce(t, b, runConfig{seed: baseSeed(t) + uint64(attempt), clients: 4, load: 2 * time.Second, wrap: brokenProxy(tc.mode)})
				t.Logf("attempt %d: %d operations (%d writes), %d violations", attempt, r.Ops, r.Writes, len(r.Violations))
				if r.Has(tc.want) {
					t.Logf("caught, first of them: %v", r.Violations[0])
					return
				}
				got = r.Violations
			}
			t.Fatalf("the %s server was not caught as %q in 3 runs; violations: %v", tc.mode, tc.want, got)
		})
	}
}
