package loadbench

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
)

// BenchmarkManagedFieldsThroughput measures what field management costs a
// server under load, from outside: 16 clients over HTTPS (HTTP/2) create
// objects, then update them with merge patches, against a server on its
// default bbolt store (fsync on), with managedFields tracked (the default)
// and off (Builder.DisableManagedFields), in one run. It reports objects
// per second; compare on and off:
//
//	cd e2e && go test -run '^$' -bench ManagedFieldsThroughput -benchtime 4000x ./loadbench
func BenchmarkManagedFieldsThroughput(b *testing.B) {
	const clients = 16
	res := rest.Resource{Group: "bench.annex.dev", Version: "v1", Plural: "environments", Kind: "Environment", Namespaced: true,
		Schema: schema.MustParseYAML(benchSchema)}
	for _, mode := range []struct {
		name string
		off  bool
	}{{"on", false}, {"off", true}, {"on#2", false}, {"off#2", true}} {
		ts := startServer(b, benchOpts{resources: []rest.Resource{res}, disableManagedFields: mode.off})
		coll := ts.url + "/apis/bench.annex.dev/v1/namespaces/ns1/environments"
		run := func(b *testing.B, op func(c *http.Client, i int) (int, error), want int) {
			var next atomic.Int64
			var failed atomic.Value
			start := time.Now()
			var wg sync.WaitGroup
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= b.N {
							return
						}
						if code, err := op(ts.admin, i); err != nil || code != want {
							failed.Store(fmt.Sprintf("request %d: %d %v", i, code, err))
							return
						}
					}
				}()
			}
			wg.Wait()
			if f := failed.Load(); f != nil {
				b.Fatal(f)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "obj/s")
		}
		send := func(c *http.Client, method, url, ct, body string) (int, error) {
			req, err := http.NewRequest(method, url, strings.NewReader(body))
			if err != nil {
				return 0, err
			}
			req.Header.Set("Content-Type", ct)
			resp, err := c.Do(req)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		}
		created := 0
		b.Run("create/"+mode.name, func(b *testing.B) {
			run(b, func(c *http.Client, i int) (int, error) {
				return send(c, "POST", coll, "application/json", fmt.Sprintf(
					`{"apiVersion":"bench.annex.dev/v1","kind":"Environment","metadata":{"name":"e-%d","labels":{"app":"bench"}},"spec":{"owner":"alice","tier":"dev","replicas":1}}`, created+i))
			}, http.StatusCreated)
			created += b.N
		})
		b.Run("update/"+mode.name, func(b *testing.B) {
			run(b, func(c *http.Client, i int) (int, error) {
				return send(c, "PATCH", fmt.Sprintf("%s/e-%d?fieldManager=ctrl-%d", coll, i%created, i%3), "application/merge-patch+json",
					fmt.Sprintf(`{"spec":{"replicas":%d}}`, i%5+2))
			}, http.StatusOK)
		})
		ts.stop(b)
	}
}
