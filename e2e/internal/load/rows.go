// This file holds the large-collection scenarios: the latency of single
// requests (a GET, a page, a count) against a collection already holding
// many objects, one request at a time.

package load

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// latencyPrefix starts the name of a scenario whose figure is its requests'
// latency.
const latencyPrefix = "latency at "

// requests sends n requests made by url, one at a time, and records each
// one's duration; check vets each answer's body.
func (t Target) requests(name string, n int, url func(i int) string, check func(body []byte) error) Result {
	c := t.client()
	defer c.CloseIdleConnections()
	r := Result{Scenario: name, Ops: n}
	cpu0 := t.cpu()
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		code, b, err := do(c, "GET", url(i), nil)
		r.OpLatencies = append(r.OpLatencies, time.Since(t0))
		if err := want(code, 200, err, b); err != nil {
			r.Errors++
			continue
		}
		if check != nil && check(b) != nil {
			r.Errors++
		}
	}
	r.Elapsed, r.CPU = time.Since(start), t.cpu()-cpu0
	slices.Sort(r.OpLatencies)
	return r
}

// listMeta is what the scenarios read of a list.
type listMeta struct {
	Metadata struct {
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// GetLatency GETs n objects <prefix>-<random below objects>, one at a time.
func (t Target) GetLatency(rows int, prefix string, objects, n int) Result {
	return t.requests(fmt.Sprintf("%s%d rows: GET by name", latencyPrefix, rows), n,
		func(int) string { return fmt.Sprintf("%s/%s-%d", t.Collection, prefix, rand.IntN(objects)) }, nil)
}

// FirstPageLatency lists the first page of 500 n times; each must be full
// and say how many objects remain (total in the collection).
func (t Target) FirstPageLatency(total, n int) Result {
	return t.requests(fmt.Sprintf("%s%d rows: first page (limit=500)", latencyPrefix, total), n,
		func(int) string { return t.Collection + "?limit=500" },
		func(b []byte) error { return checkPage(b, 500, int64(total-500)) })
}

// CountLatency is a client's count of the collection: a list with limit=1,
// whose remainingItemCount must be total-1.
func (t Target) CountLatency(total, n int) Result {
	return t.requests(fmt.Sprintf("%s%d rows: count (limit=1, remainingItemCount)", latencyPrefix, total), n,
		func(int) string { return t.Collection + "?limit=1" },
		func(b []byte) error { return checkPage(b, 1, int64(total-1)) })
}

// WalkLatency pages through the collection from its start, pages of 500
// as kubectl's --chunk-size does, for at most pages pages or budget, and
// records each page's latency; each page must be full and count what
// remains after it.
func (t Target) WalkLatency(total, pages int, budget time.Duration) Result {
	c := t.client()
	defer c.CloseIdleConnections()
	r := Result{Scenario: fmt.Sprintf("%s%d rows: paged walk (limit=500), per page", latencyPrefix, total)}
	cpu0 := t.cpu()
	start := time.Now()
	cont := ""
	for i := 0; i < pages && time.Since(start) < budget; i++ {
		u := t.Collection + "?limit=500"
		if cont != "" {
			u += "&continue=" + cont
		}
		t0 := time.Now()
		code, b, err := do(c, "GET", u, nil)
		r.OpLatencies = append(r.OpLatencies, time.Since(t0))
		r.Ops++
		if err := want(code, 200, err, b); err != nil {
			r.Errors++
			break
		}
		check := checkPage(b, 500, int64(total-500*(i+1)))
		if total <= 500*(i+1) {
			check = checkLastPage(b, total-500*i)
		}
		if check != nil {
			r.Errors++
		}
		var l listMeta
		if json.Unmarshal(b, &l) != nil || l.Metadata.Continue == "" {
			break
		}
		cont = l.Metadata.Continue
	}
	r.Elapsed, r.CPU = time.Since(start), t.cpu()-cpu0
	slices.Sort(r.OpLatencies)
	return r
}

// checkPage checks a page's length, its continue token, and its
// remainingItemCount when remaining is not negative.
func checkPage(b []byte, items int, remaining int64) error {
	var l listMeta
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	if len(l.Items) != items || l.Metadata.Continue == "" {
		return fmt.Errorf("page of %d items, continue %q; want %d and a token", len(l.Items), l.Metadata.Continue, items)
	}
	if remaining >= 0 && (l.Metadata.RemainingItemCount == nil || *l.Metadata.RemainingItemCount != remaining) {
		return fmt.Errorf("remainingItemCount %v, want %d", l.Metadata.RemainingItemCount, remaining)
	}
	return nil
}

// checkLastPage checks the last page: items items, no continue token, no
// remainingItemCount.
func checkLastPage(b []byte, items int) error {
	var l listMeta
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	if len(l.Items) != items || l.Metadata.Continue != "" || l.Metadata.RemainingItemCount != nil {
		return fmt.Errorf("last page of %d items, continue %q, remaining %v; want %d, neither", len(l.Items), l.Metadata.Continue, l.Metadata.RemainingItemCount, items)
	}
	return nil
}
