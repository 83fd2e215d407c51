package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A watch the server ends early is counted in Ended, and the events it
// never got in Lost: the load tool tells a cut-off watcher from an event a
// backend skipped. The server here is a stand-in for the collection's
// list, watch and create (HTTP/2 over TLS, as a server is reached); it ends
// the first watch after its first event.
func TestWatchCountsWatchesEndedByTheServer(t *testing.T) {
	var mu sync.Mutex
	var streams []chan []byte
	watches := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			var obj struct {
				Metadata struct{ Name string } `json:"metadata"`
			}
			if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			line := fmt.Appendf(nil, `{"type":"ADDED","object":{"metadata":{"name":%q}}}`+"\n", obj.Metadata.Name)
			mu.Lock()
			for _, s := range streams {
				select {
				case s <- line:
				default:
				}
			}
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
		case r.URL.Query().Get("watch") != "":
			s := make(chan []byte, 100)
			mu.Lock()
			streams = append(streams, s)
			watches++
			endEarly := watches == 1
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case line := <-s:
					_, _ = w.Write(line)
					w.(http.Flusher).Flush()
					if endEarly {
						return
					}
				}
			}
		default:
			_, _ = w.Write([]byte(`{"metadata":{"resourceVersion":"1"},"items":[]}`))
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	tc := srv.Client().Transport.(*http.Transport).TLSClientConfig
	tgt := Target{Name: "stand-in", Host: srv.URL, Collection: srv.URL + "/apis/x/v1/namespaces/default/things", TLS: tc,
		Object: func(name string) []byte { return fmt.Appendf(nil, `{"metadata":{"name":%q}}`, name) }}
	r := tgt.Watch(context.Background(), 3, 50, 200*time.Millisecond)
	if r.Errors != 0 {
		t.Fatalf("%d errors", r.Errors)
	}
	const writes = 10 // 50/s for 200 ms
	if r.Ops != 2*writes+1 {
		t.Fatalf("%d deliveries to 3 watchers of %d writes, one ended after its first event: want %d", r.Ops, writes, 2*writes+1)
	}
	if r.Ended != 1 {
		t.Errorf("Ended = %d, want 1", r.Ended)
	}
	if r.Lost != writes-1 {
		t.Errorf("Lost = %d, want %d (the ended watch's events after its first)", r.Lost, writes-1)
	}
}
