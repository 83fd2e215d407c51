package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// ScaleReport is the scaling scenario's figures at one size.
type ScaleReport struct {
	Objects int
	// Fill is the create throughput over the whole fill.
	Fill Result
	// FullList is the median latency of a full LIST; FirstPage and
	// MiddlePage the median latency of a page of 500 at the start and in
	// the middle of the collection (a continue token).
	FullList, FirstPage, MiddlePage time.Duration
	// RSS after the fill and PeakRSS after the LISTs, in MiB.
	RSS, PeakRSS int64
	// ListBytes is the size of a full LIST's answer; ListRSSGrowth how far
	// the server's resident memory rose above what it was while full LISTs
	// were served (the peak reset before them), in MiB: a LIST that streams
	// needs a buffer, not the list.
	ListBytes     int64
	ListRSSGrowth int64
	// Restart is the time from a restart on the filled data to the
	// collection answering.
	Restart time.Duration
}

// Scale fills a fresh server (start: StartAnnex or StartAnnexWith) in steps
// up to each of sizes, and at each size measures LIST latencies and memory;
// after the last it restarts the server on its data and times it until
// ready.
func Scale(ctx context.Context, dir string, sizes []int, clients int, start func(ctx context.Context, dir string) (Target, func(), error)) ([]ScaleReport, error) {
	t, stop, err := start(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []ScaleReport
	filled := 0
	for _, n := range sizes {
		r := ScaleReport{Objects: n}
		r.Fill = t.run(fmt.Sprintf("fill to %d objects, %d clients", n, clients), n-filled, clients, func(c *http.Client, i int) error {
			code, b, err := do(c, "POST", t.Collection, t.Object(fmt.Sprintf("scale-%d", filled+i)))
			return want(code, 201, err, b)
		})
		filled = n
		if r.Fill.Errors > 0 {
			stop()
			return out, fmt.Errorf("fill to %d: %d errors", n, r.Fill.Errors)
		}
		r.RSS = t.RSS() >> 20
		c := t.client()
		before, reset := t.RSS(), t.ResetPeakRSS()
		r.FullList = medianOf(5, func() error {
			n, err := listSize(c, t.Collection)
			r.ListBytes = n
			return err
		})
		if reset {
			r.ListRSSGrowth = max(t.PeakRSS()-before, 0) >> 20
		} else {
			r.ListRSSGrowth = -1
		}
		r.FirstPage = medianOf(20, func() error { return listOnce(c, t.Collection+"?limit=500") })
		// A continue token from the middle of the collection.
		mid, err := continueAt(c, t.Collection, n/2)
		if err != nil {
			stop()
			return out, err
		}
		r.MiddlePage = medianOf(20, func() error { return listOnce(c, t.Collection+"?limit=500&continue="+mid) })
		c.CloseIdleConnections()
		r.PeakRSS = t.PeakRSS() >> 20
		out = append(out, r)
	}
	stop()
	t2, stop2, err := start(ctx, dir)
	if err != nil {
		return out, fmt.Errorf("restart: %w", err)
	}
	out[len(out)-1].Restart = t2.Ready
	stop2()
	return out, nil
}

// listOnce GETs url and reads the answer.
func listOnce(c *http.Client, url string) error {
	code, b, err := do(c, "GET", url, nil)
	return want(code, 200, err, b)
}

// listSize GETs url and returns the answer's size.
func listSize(c *http.Client, url string) (int64, error) {
	code, b, err := do(c, "GET", url, nil)
	return int64(len(b)), want(code, 200, err, b)
}

// continueAt pages through the collection in pages of 500 until about at
// objects were listed and returns the continue token there.
func continueAt(c *http.Client, collection string, at int) (string, error) {
	cont := ""
	for seen := 0; seen < at; seen += 500 {
		u := collection + "?limit=500"
		if cont != "" {
			u += "&continue=" + cont
		}
		code, b, err := do(c, "GET", u, nil)
		if err := want(code, 200, err, b); err != nil {
			return "", err
		}
		var l struct {
			Metadata struct{ Continue string } `json:"metadata"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return "", err
		}
		if l.Metadata.Continue == "" {
			break
		}
		cont = l.Metadata.Continue
	}
	return cont, nil
}

// medianOf runs op n times and returns its median duration (a failed run
// counts as an hour).
func medianOf(n int, op func() error) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		if op() != nil {
			ds[i] = time.Hour
			continue
		}
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[n/2]
}
