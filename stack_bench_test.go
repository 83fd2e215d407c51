package annex

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"

	"github.com/annexapi/annex/rest"
)

// BenchmarkGETStackGrowth is the cost of one GET through the whole chain
// (authentication, flow control, authorization, the handler, the watch
// cache), each request on a fresh goroutine as net/http serves it, with the
// stack grown once up front (what the server does, internal/stack) and
// without (the runtime doubling and copying it as the request goes deeper).
// The two take turns, round after round, so other load falls on both alike;
// cpu-ns/op is the process's CPU time per GET.
//
//	go test -run '^$' -bench GETStackGrowth -benchtime 20000x .
func BenchmarkGETStackGrowth(b *testing.B) {
	r := newFloodRig(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bld := Builder{
		Resources:      []rest.Resource{widgets()},
		DataDir:        r.dataDir,
		Serving:        Serving{Listener: ln},
		Authentication: Authentication{TokenAuthFile: r.tokens},
		Authorization:  Authorization{PolicyFiles: []string{r.policy}},
		Storage:        Storage{Store: r.store},
		Observability:  Observability{Logger: zap.NewNop()},
	}
	srv, err := bld.Build()
	if err != nil {
		b.Fatal(err)
	}
	ts := &testServer{srv: srv, done: make(chan struct{})}
	runInBackground(b, ts)
	waitReady(b, r.client(), srv.URL())
	defer func() { ts.cancel(); <-ts.done }()

	variants := []struct {
		name string
		h    http.Handler
	}{{"grown", grownStack(srv.chain)}, {"runtime-grown", srv.chain}}
	get := func(h http.Handler, n int) {
		done := make(chan int)
		for range n {
			go func() {
				req := httptest.NewRequest(http.MethodGet, "/apis/test.annex.dev/v1/namespaces/flood/widgets/w-00000", nil)
				req.Header.Set("Authorization", "Bearer bystander-token")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				done <- w.Code
			}()
			if code := <-done; code != 200 {
				b.Fatalf("GET: %d", code)
			}
		}
	}
	for _, v := range variants {
		get(v.h, 500) // warm
	}
	const rounds = 10
	cpu := make([]float64, len(variants))
	b.ReportAllocs()
	b.ResetTimer()
	for round := range rounds {
		for k := range variants {
			i := (round + k) % len(variants)
			cpu0 := processCPU()
			get(variants[i].h, max(b.N/rounds, 1))
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
