package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"testing"
	"time"

	"github.com/annexapi/annex/storage"
)

// watchStream reads a watch response line by line.
type watchStream struct {
	resp  *http.Response
	lines chan []byte
}

func (e *testEnv) watch(t *testing.T, path string) *watchStream {
	t.Helper()
	return e.watchWith(t, path, nil)
}

func (e *testEnv) watchWith(t *testing.T, path string, h http.Header) *watchStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ws := &watchStream{resp: resp, lines: make(chan []byte, 100)}
	go func() {
		defer close(ws.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			ws.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	return ws
}

type watchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// next returns the next event, failing after a deadline.
func (ws *watchStream) next(t *testing.T) watchEvent {
	t.Helper()
	select {
	case line, ok := <-ws.lines:
		if !ok {
			t.Fatal("watch ended early")
		}
		var ev watchEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event within 5s")
	}
	return watchEvent{}
}

// ended waits for the stream to end.
func (ws *watchStream) ended(t *testing.T) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case line, ok := <-ws.lines:
			if !ok {
				return
			}
			t.Errorf("unexpected line %s", line)
		case <-deadline:
			t.Fatal("watch did not end within 5s")
		}
	}
}

func expectEvent(t *testing.T, ev watchEvent, typ, name string) {
	t.Helper()
	if ev.Type != typ || fieldAt(ev.Object, "metadata", "name") != name || ev.Object["kind"] != "Environment" {
		t.Fatalf("event = %s %v, want %s %s", ev.Type, ev.Object, typ, name)
	}
}

func TestWatchStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first := e.create(t, "ns1", "a", nil, "alice")
	ws := e.watch(t, envBase+"/namespaces/ns1/environments?watch=true&resourceVersion=0")
	if ct := ws.resp.Header.Get("Content-Type"); ws.resp.StatusCode != 200 || ct != "application/json" {
		t.Fatalf("watch response %d %q", ws.resp.StatusCode, ct)
	}
	expectEvent(t, ws.next(t), "ADDED", "a") // synthetic
	e.create(t, "ns1", "b", nil, "bob")
	e.create(t, "ns2", "other", nil, "bob") // another namespace: not seen
	expectEvent(t, ws.next(t), "ADDED", "b")
	rv := fieldAt(first, "metadata", "resourceVersion").(string)
	if r := e.do(t, "PUT", envBase+"/namespaces/ns1/environments/a",
		`{"metadata":{"name":"a","resourceVersion":"`+rv+`"},"spec":{"owner":"carol"}}`); r.code != 200 {
		t.Fatalf("update: %d %s", r.code, r.body)
	}
	ev := ws.next(t)
	expectEvent(t, ev, "MODIFIED", "a")
	if fieldAt(ev.Object, "spec", "owner") != "carol" {
		t.Errorf("modified object = %v", ev.Object)
	}
	r := e.do(t, "DELETE", envBase+"/namespaces/ns1/environments/b", "")
	if r.code != 200 {
		t.Fatalf("delete: %d", r.code)
	}
	ev = ws.next(t)
	expectEvent(t, ev, "DELETED", "b")
	if got, want := fieldAt(ev.Object, "metadata", "resourceVersion"), fieldAt(r.object(t), "metadata", "resourceVersion"); got != want {
		t.Errorf("DELETED resourceVersion = %v, want the deletion's %v", got, want)
	}
}

func TestWatchFraming(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.create(t, "ns1", "a", nil, "alice")
	ws := e.watch(t, envBase+"/namespaces/ns1/environments?watch=1")
	select {
	case line := <-ws.lines:
		obj, err := e.store.Get(context.Background(), "/platform.example.com/environments/ns1/a", getLatest())
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"type":"ADDED","object":` + string(obj.Data) + `}`; string(line) != want {
			t.Errorf("line = %s\nwant   %s", line, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
}

func TestWatchSingleObject(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.create(t, "ns1", "a", nil, "alice")
	e.create(t, "ns1", "b", nil, "alice")
	// kubectl get NAME -w: resourceVersion=0 and a metadata.name selector.
	ws := e.watch(t, envBase+"/namespaces/ns1/environments?watch=true&resourceVersion=0&fieldSelector="+url.QueryEscape("metadata.name=b"))
	expectEvent(t, ws.next(t), "ADDED", "b")
	e.do(t, "DELETE", envBase+"/namespaces/ns1/environments/a", "")
	e.do(t, "DELETE", envBase+"/namespaces/ns1/environments/b", "")
	expectEvent(t, ws.next(t), "DELETED", "b")
}

func TestWatchErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, n := range []string{"a", "b", "c"} {
		e.create(t, "ns1", n, nil, "alice")
	}
	if err := e.store.Compact(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	t.Run("expired_is_an_error_event", func(t *testing.T) {
		ws := e.watch(t, envBase+"/namespaces/ns1/environments?watch=true&resourceVersion=1")
		if ws.resp.StatusCode != 200 {
			t.Fatalf("code %d", ws.resp.StatusCode)
		}
		ev := ws.next(t)
		if ev.Type != "ERROR" || ev.Object["kind"] != "Status" || ev.Object["code"] != float64(410) ||
			ev.Object["reason"] != "Expired" || ev.Object["message"] != msgExpiredWatch {
			t.Errorf("event = %+v", ev)
		}
		ws.ended(t)
	})
	for _, tc := range []struct {
		name, query, message string
		code                 int
	}{
		{"too_large_rv", "resourceVersion=999999", "Timeout: Too large resource version: 999999, current: 4", 504},
		{"send_initial_events", "sendInitialEvents=true&resourceVersionMatch=NotOlderThan", `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled`, 422},
		{"match_without_initial_events", "resourceVersionMatch=NotOlderThan", `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided`, 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, "GET", envBase+"/namespaces/ns1/environments?watch=true&"+tc.query, "")
			if r.code != tc.code || r.status(t).Message != tc.message {
				t.Errorf("got %d %s, want %d %q", r.code, r.body, tc.code, tc.message)
			}
		})
	}
	t.Run("name_conflict", func(t *testing.T) {
		r := e.do(t, "GET", envBase+"/watch/namespaces/ns1/environments/a?fieldSelector="+url.QueryEscape("metadata.name=b"), "")
		if r.code != 400 || r.status(t).Message != "fieldSelector metadata.name doesn't match requested name" {
			t.Errorf("got %d %s", r.code, r.body)
		}
	})
}

func TestWatchEnds(t *testing.T) {
	t.Parallel()
	t.Run("timeout_seconds", func(t *testing.T) {
		e := newEnv(t, nil)
		ws := e.watch(t, envBase+"/environments?watch=true&timeoutSeconds=1")
		ws.ended(t)
	})
	t.Run("shutdown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		e := newEnv(t, func(c *Config) { c.Shutdown = ctx })
		ws := e.watch(t, envBase+"/environments?watch=true")
		e.create(t, "ns1", "a", nil, "alice")
		expectEvent(t, ws.next(t), "ADDED", "a")
		cancel()
		ws.ended(t)
	})
	t.Run("bookmarks_only_when_allowed", func(t *testing.T) {
		e := newEnv(t, nil)
		e.create(t, "ns1", "a", nil, "alice")
		ws := e.watch(t, envBase+"/environments?watch=true&allowWatchBookmarks=true&resourceVersion=2")
		if err := e.store.RequestProgress(context.Background()); err != nil {
			t.Fatal(err)
		}
		ev := ws.next(t)
		if ev.Type != "BOOKMARK" || ev.Object["kind"] != "Environment" || fieldAt(ev.Object, "metadata", "resourceVersion") != "2" {
			t.Errorf("bookmark = %+v", ev)
		}
	})
}

func getLatest() storage.GetOptions { return storage.GetOptions{} }

// A watcher's memo keys are the frame key, the version and the type, each
// built once for the watch: a key asked for again allocates nothing.
func TestFrameKeysBuiltOnce(t *testing.T) {
	k := frameKeys{prefix: "json/v1/"}
	for _, typ := range []storage.EventType{storage.EventAdded, storage.EventModified, storage.EventDeleted, storage.EventBookmark} {
		if got, want := k.of(typ), "json/v1/"+string(typ); got != want {
			t.Errorf("of(%s) = %q, want %q", typ, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = k.of(storage.EventModified) }); n != 0 {
		t.Errorf("of(MODIFIED) allocates %v times once built, want 0", n)
	}
}
