// This file serves kube's debug dumps of priority and fairness
// (/debug/api_priority_and_fairness/dump_priority_levels, dump_queues,
// dump_requests): comma-and-tab separated rows, one header row first.

package flowcontrol

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// DebugHandler returns the handler of the three dumps; it answers by the
// last path segment (dump_priority_levels, dump_queues, dump_requests, the
// last with ?includeRequestDetails=1), so mount it at
// /debug/api_priority_and_fairness/ behind authorization. Other paths are
// 404.
func (c *Controller) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dump func(io.Writer, *http.Request)
		switch r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:] {
		case "dump_priority_levels":
			dump = c.dumpPriorityLevels
		case "dump_queues":
			dump = c.dumpQueues
		case "dump_requests":
			dump = c.dumpRequests
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		tw := tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)
		dump(tw, r)
		_ = tw.Flush()
	})
}

func row(w io.Writer, cols ...string) { fmt.Fprint(w, strings.Join(cols, ",\t")) }

func (c *Controller) sortedLevels() []*level {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*level, 0, len(c.levels))
	for _, l := range c.levels {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *level) int { return strings.Compare(a.name, b.name) })
	return out
}

func (c *Controller) dumpPriorityLevels(w io.Writer, _ *http.Request) {
	row(w, "PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests",
		"DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")
	fmt.Fprintln(w)
	for _, l := range c.sortedLevels() {
		l.mu.Lock()
		active := 0
		for _, q := range l.queues {
			if len(q.waiting) > 0 {
				active++
			}
		}
		row(w, l.name, strconv.Itoa(active), strconv.FormatBool(l.idleLocked()), strconv.FormatBool(l.quiescing),
			strconv.Itoa(l.waiting), strconv.Itoa(l.executing), strconv.Itoa(l.dispatched), strconv.Itoa(l.rejected),
			strconv.Itoa(l.timedout), strconv.Itoa(l.cancelled))
		l.mu.Unlock()
		fmt.Fprintln(w)
	}
}

func (c *Controller) dumpQueues(w io.Writer, _ *http.Request) {
	row(w, "PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR",
		"InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")
	fmt.Fprintln(w)
	for _, l := range c.sortedLevels() {
		l.mu.Lock()
		for i, q := range l.queues {
			initial := 0
			for _, r := range q.waiting {
				initial += r.initial
			}
			row(w, l.name, strconv.Itoa(i), strconv.Itoa(len(q.waiting)), strconv.Itoa(q.executing), strconv.Itoa(q.seatsInUse),
				fmt.Sprintf("%.8fss", q.nextDispatchR), strconv.Itoa(initial), strconv.Itoa(q.waitingSeats), fmt.Sprintf("%.8fss", q.waitingWork))
			fmt.Fprintln(w)
		}
		l.mu.Unlock()
	}
}

func (c *Controller) dumpRequests(w io.Writer, r *http.Request) {
	details := r.URL.Query().Get("includeRequestDetails") != ""
	row(w, "PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime",
		"InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime")
	if details {
		fmt.Fprint(w, ",\t")
		row(w, "UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")
	}
	fmt.Fprintln(w)
	one := func(l *level, qi, ri int, req *request) {
		row(w, l.name, req.fs, strconv.Itoa(qi), strconv.Itoa(ri), req.flow, req.arrived.UTC().Format(time.RFC3339Nano),
			strconv.Itoa(req.initial), strconv.Itoa(req.final), req.additional.String(), req.started.UTC().Format(time.RFC3339Nano))
		if details {
			fmt.Fprint(w, ",\t")
			i := req.info
			gv := i.APIVersion
			if i.APIGroup != "" {
				gv = i.APIGroup + "/" + i.APIVersion
			}
			row(w, req.user, i.Verb, i.Path, i.Namespace, i.Name, gv, i.Resource, i.Subresource)
		}
		fmt.Fprintln(w)
	}
	for _, l := range c.sortedLevels() {
		l.mu.Lock()
		for qi, q := range l.queues {
			for ri, req := range q.waiting {
				one(l, qi, ri, req)
			}
		}
		for req := range l.running {
			qi := -1
			if req.q != nil {
				qi = req.q.index
			}
			one(l, qi, -1, req)
		}
		l.mu.Unlock()
	}
}
