package loadbench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/internal/stack"
)

// BenchmarkGETStackGrowth is the cost of one GET through the whole chain
// (authentication, flow control, authorization, the handler, the watch
// cache), each request on a fresh goroutine as net/http serves it, with the
// stack grown once up front (what the server does, internal/stack) and
// without (the runtime doubling and copying it as the request goes deeper).
// The two take turns, round after round, so other load falls on both alike;
// cpu-ns/op is the process's CPU time per GET.
//
// Server.Handler grows the stack of the goroutine that calls it, before
// the chain: that is the benchmark's own goroutine here, grown once and for
// all, where the growth is a no-op. A first stage (freshGoroutine) then
// serves the rest of the chain, every built-in stage and the handler, on a
// fresh goroutine, growing its stack first as the server does or leaving it
// to the runtime.
//
//	cd e2e && go test -run '^$' -bench GETStackGrowth -benchtime 20000x ./loadbench
func BenchmarkGETStackGrowth(b *testing.B) {
	r := newFloodRig(b)
	var grow atomic.Bool
	srv := startServer(b, benchOpts{dataDir: r.dataDir, store: r.store, tokenAuthFile: r.tokens,
		authorizationPolicyFiles: []string{r.policy}, stages: []annex.InsertedStage{freshGoroutine(&grow)}})
	defer srv.stop(b)
	h := srv.srv.Handler()

	variants := []struct {
		name string
		grow bool
	}{{"grown", true}, {"runtime-grown", false}}
	get := func(n int) {
		for range n {
			req := httptest.NewRequest(http.MethodGet, "/apis/test.annex.dev/v1/namespaces/flood/widgets/w-00000", nil)
			req.Header.Set("Authorization", "Bearer bystander-token")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("GET: %d %s", w.Code, w.Body)
			}
		}
	}
	for _, v := range variants {
		grow.Store(v.grow)
		get(500) // warm
	}
	const rounds = 10
	cpu := make([]float64, len(variants))
	b.ReportAllocs()
	b.ResetTimer()
	for round := range rounds {
		for k := range variants {
			i := (round + k) % len(variants)
			grow.Store(variants[i].grow)
			cpu0 := processCPU()
			get(max(b.N/rounds, 1))
			cpu[i] += float64(processCPU() - cpu0)
		}
	}
	b.StopTimer()
	n := float64(max(b.N/rounds, 1) * rounds)
	for i, v := range variants {
		b.ReportMetric(cpu[i]/n, v.name+"-cpu-ns/GET")
	}
	b.ReportMetric(cpu[0]/cpu[1], "grown/runtime-grown")
	if testing.Verbose() {
		fmt.Printf("GET CPU: grown %.0f ns, runtime-grown %.0f ns\n", cpu[0]/n, cpu[1]/n)
	}
}

// freshGoroutine is the first stage of BenchmarkGETStackGrowth's server: it
// serves the rest of the chain on a fresh goroutine, as net/http serves
// each request, whose stack it grows first, as the server does (a write
// gets the larger stack), while grow is set.
func freshGoroutine(grow *atomic.Bool) annex.InsertedStage {
	filter := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				if grow.Load() {
					switch r.Method {
					case http.MethodPost, http.MethodPut, http.MethodPatch:
						stack.GrowLarge()
					default:
						stack.Grow()
					}
				}
				next.ServeHTTP(w, r)
			}()
			<-done
		})
	}
	return annex.InsertedStage{After: "", Stage: annex.Stage{Name: "fresh-goroutine", Filter: filter}}
}
