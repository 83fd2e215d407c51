package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestShutdownSendRetryAfter: with --shutdown-send-retry-after, a request
// arriving while one is still in flight during shutdown gets 429 with
// Retry-After and Connection: close, and the one in flight completes.
func TestShutdownSendRetryAfter(t *testing.T) {
	t.Parallel()
	d := NewShutdownDrain(ShutdownDrainConfig{SendRetryAfter: true})
	release := make(chan struct{})
	h := d.Filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.WriteHeader(200)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan int)
	go func() {
		resp, err := http.Get(srv.URL + "/apis/g/v1/things")
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	for d.inflight.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	d.StartDraining()
	resp, err := http.Get(srv.URL + "/apis/g/v1/things")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("request while draining: %d %v", resp.StatusCode, resp.Header)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the request in flight: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d.WaitInFlight(ctx)
	if d.inflight.Load() != 0 {
		t.Fatal("in flight count not back to 0")
	}
}

// TestGoAwayChance: at the maximum chance, some HTTP/2 responses carry
// Connection: close (Go's server then sends GOAWAY), none at zero.
func TestGoAwayChance(t *testing.T) {
	t.Parallel()
	for _, chance := range []float64{0, 0.02} {
		d := NewShutdownDrain(ShutdownDrainConfig{GoAwayChance: chance})
		h := d.Filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		closed := 0
		for range 2000 {
			r := httptest.NewRequest("GET", "/apis/g/v1/things", nil)
			r.ProtoMajor = 2
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Header().Get("Connection") == "close" {
				closed++
			}
		}
		if (chance == 0) != (closed == 0) || closed > 100 {
			t.Errorf("chance %v: %d of 2000 told to go away", chance, closed)
		}
	}
}
