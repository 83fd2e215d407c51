// This file holds the checker: porcupine per key, then the cross-key checks
// of lists and watches against the history of writes ordered by revision.

package robustness

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Guarantees a violation names.
const (
	GLinearizable    = "linearizable"           // porcupine, per key
	GUniqueRevision  = "one write per revision" // two different writes observed at one revision
	GRealTimeOrder   = "revisions follow real time"
	GWriteEcho       = "a write returns what was written"
	GListState       = "list equals the state at its revision"
	GListFresh       = "consistent list is fresh"
	GListRV          = "list at the requested revision"
	GListOrder       = "list ordered, no duplicates, one snapshot"
	GNoFuture        = "no read from the future"
	GWatchOrder      = "watch ordered and unique"
	GWatchNoGap      = "watch has no gap"
	GWatchBookmark   = "bookmark not ahead of events"
	GWatchType       = "event type matches the history"
	GWatchListState  = "WatchList initial state equals a consistent list"
	GWatchResumable  = "watch resumable inside the window"
	GWatchExpired    = "410 outside the window"
	GExpectedAnswers = "no unexpected status"
)

// Violation is one broken guarantee.
type Violation struct {
	Guarantee string
	Detail    string
}

func (v Violation) String() string { return v.Guarantee + ": " + v.Detail }

// Report is what Check found.
type Report struct {
	Violations []Violation
	// Figures.
	Ops, Writes, UnknownWrites, Watches, Events int
	ListsChecked, WatchesChecked, InitialStates int
	ExpiredExpected, ResumesInWindow            int
	// Skipped counts list and initial-state comparisons skipped because the
	// history of writes up to their revision was not complete.
	Skipped int
	// PorcupineUnknown counts keys whose check timed out.
	PorcupineUnknown int
	// Visualization is the path of porcupine's HTML for the first key found
	// not linearizable, if any.
	Visualization string
}

func (r *Report) add(g, format string, args ...any) {
	if len(r.Violations) < 200 {
		r.Violations = append(r.Violations, Violation{g, fmt.Sprintf(format, args...)})
	}
}

// Has reports whether r holds a violation of guarantee g.
func (r *Report) Has(g string) bool {
	return slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Guarantee == g })
}

// entry is the write at one revision, as observed.
type entry struct {
	Key     string
	Deleted bool
	Value   string
	Src     string
	// PrevExists is whether Key existed before this write (set when the
	// history is folded).
	PrevExists bool
}

func (e entry) same(o entry) bool {
	return e.Key == o.Key && e.Deleted == o.Deleted && e.Value == o.Value
}

func (e entry) String() string {
	if e.Deleted {
		return fmt.Sprintf("delete %s", e.Key)
	}
	return fmt.Sprintf("put %s=%q", e.Key, e.Value)
}

// checker holds what Check derives from a history.
type checker struct {
	h   *History
	r   *Report
	log map[uint64]entry
	rvs []uint64 // sorted revisions of log
	// callOf is the call time of the request that made each revision's
	// write, when known.
	callOf map[uint64]int64
	// completeUpTo is, per namespace, the revision up to which every write
	// is known: (BaseRV, completeUpTo] is covered by gap-free watches.
	completeUpTo map[string]uint64
	// ackedByReturn holds the acknowledged writes by return time, with the
	// running maximum of their revisions, for freshness.
	ackedReturn []int64
	ackedMaxRV  []uint64
	inRun       map[string]bool
	valueRV     map[string]uint64
}

func nsOf(key string) string { ns, _ := splitKey(key); return ns }

// Check checks a finished history.
func Check(h *History) *Report {
	c := &checker{h: h, r: &Report{}, log: map[uint64]entry{}, callOf: map[uint64]int64{}, completeUpTo: map[string]uint64{},
		inRun: map[string]bool{}, valueRV: map[string]uint64{}}
	for _, ns := range h.Namespaces {
		c.inRun[ns] = true
	}
	c.r.Ops, c.r.Watches = len(h.Ops), len(h.Watches)
	c.collect()
	c.fold()
	c.coverage()
	c.linearizable()
	c.realTime()
	c.lists()
	c.watches()
	return c.r
}

func (c *checker) observe(rv uint64, e entry) {
	if !c.inRun[nsOf(e.Key)] {
		return
	}
	if old, ok := c.log[rv]; ok {
		if !old.same(e) {
			c.r.add(GUniqueRevision, "revision %d: %s (from %s) and %s (from %s)", rv, old, old.Src, e, e.Src)
		}
		return
	}
	c.log[rv] = e
	if !e.Deleted {
		if prev, ok := c.valueRV[e.Value]; ok && prev != rv {
			c.r.add(GUniqueRevision, "value %q written once is seen at revisions %d and %d", e.Value, prev, rv)
		}
		c.valueRV[e.Value] = rv
	}
}

// collect builds the history of writes from every observation: write
// responses, objects read, watch events. Each object's resourceVersion is
// the revision of the write that made it, so every observed object is
// evidence of a write.
func (c *checker) collect() {
	for i, op := range c.h.Ops {
		if op.Outcome == Rejected {
			c.r.add(GExpectedAnswers, "op %d %s %s: %s", i, op.Kind, op.Key, op.Err)
		}
		switch op.Kind {
		case OpCreate, OpUpdate, OpPatch, OpDelete:
			c.r.Writes++
			if op.Outcome == Unknown || op.Outcome == Rejected {
				c.r.UnknownWrites++
			}
		}
		if op.Outcome != OK {
			continue
		}
		src := fmt.Sprintf("%s#%d", op.Kind, i)
		switch op.Kind {
		case OpCreate, OpUpdate, OpPatch:
			if op.Obj.Key != op.Key || op.Obj.Value != op.Value {
				c.r.add(GWriteEcho, "%s %s %q answered %s %q", op.Kind, op.Key, op.Value, op.Obj.Key, op.Obj.Value)
			}
			c.observe(op.Obj.RV, entry{Key: op.Obj.Key, Value: op.Obj.Value, Src: src})
			c.callOf[op.Obj.RV] = op.Call
		case OpDelete:
			if op.Obj.Key != op.Key {
				c.r.add(GWriteEcho, "delete %s answered %s", op.Key, op.Obj.Key)
			}
			c.observe(op.Obj.RV, entry{Key: op.Key, Deleted: true, Src: src})
			c.callOf[op.Obj.RV] = op.Call
		case OpGet:
			c.observe(op.Obj.RV, entry{Key: op.Obj.Key, Value: op.Obj.Value, Src: src})
		case OpList:
			for _, it := range op.Items {
				c.observe(it.RV, entry{Key: it.Key, Value: it.Value, Src: src})
			}
		}
	}
	for _, w := range c.h.Watches {
		c.r.Events += len(w.Events)
		src := fmt.Sprintf("watch#%d", w.ID)
		for _, ev := range w.Events {
			switch ev.Type {
			case "ADDED", "MODIFIED":
				c.observe(ev.Obj.RV, entry{Key: ev.Obj.Key, Value: ev.Obj.Value, Src: src})
			case "DELETED":
				c.observe(ev.Obj.RV, entry{Key: ev.Obj.Key, Deleted: true, Src: src})
			}
		}
	}
	// Gap-fill lists: consecutive exact lists at r-1 and r show the write at
	// r; a key gone between them was deleted at r.
	exact := map[uint64]Op{}
	for _, op := range c.h.Ops {
		if op.GapFill && op.Outcome == OK && op.Namespace == "" {
			exact[op.ListRV] = op
		}
	}
	for r, op := range exact {
		prev, ok := exact[r-1]
		if !ok {
			continue
		}
		now := map[string]bool{}
		for _, it := range op.Items {
			now[it.Key] = true
		}
		for _, it := range prev.Items {
			if !now[it.Key] {
				c.observe(r, entry{Key: it.Key, Deleted: true, Src: "gap-fill lists"})
			}
		}
	}
	// Writes whose response was lost take their call time from their value.
	for _, op := range c.h.Ops {
		switch op.Kind {
		case OpCreate, OpUpdate, OpPatch:
			if rv, ok := c.valueRV[op.Value]; ok {
				if t, seen := c.callOf[rv]; !seen || op.Call < t {
					c.callOf[rv] = op.Call
				}
			}
		}
	}
	c.rvs = slices.Sorted(maps.Keys(c.log))
	// Acknowledged writes by return time, for freshness.
	type ack struct {
		ret int64
		rv  uint64
	}
	var acks []ack
	for _, op := range c.h.Ops {
		switch op.Kind {
		case OpCreate, OpUpdate, OpPatch, OpDelete:
			if op.Outcome == OK {
				acks = append(acks, ack{op.Return, op.Obj.RV})
			}
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].ret < acks[j].ret })
	var mx uint64
	for _, a := range acks {
		mx = max(mx, a.rv)
		c.ackedReturn = append(c.ackedReturn, a.ret)
		c.ackedMaxRV = append(c.ackedMaxRV, mx)
	}
}

// freshness is the highest revision of a write acknowledged before t.
func (c *checker) freshness(t int64) uint64 {
	i := sort.Search(len(c.ackedReturn), func(i int) bool { return c.ackedReturn[i] >= t })
	if i == 0 {
		return 0
	}
	return c.ackedMaxRV[i-1]
}

// fold sets each entry's PrevExists.
func (c *checker) fold() {
	exists := map[string]bool{}
	for _, rv := range c.rvs {
		e := c.log[rv]
		e.PrevExists = exists[e.Key]
		exists[e.Key] = !e.Deleted
		c.log[rv] = e
	}
}

// liveStart returns where the live part of a watch starts: its start
// revision and the index of its first live event; ok is false when the watch
// has no defined start (a WatchList cut before its initial-events-end
// bookmark).
func liveStart(w *Watch) (start uint64, first int, ok bool) {
	if w.SendInitial {
		for i, ev := range w.Events {
			if ev.Type == "BOOKMARK" && ev.InitialEnd {
				return ev.Obj.RV, i + 1, true
			}
		}
		return 0, 0, false
	}
	var rv uint64
	if _, err := fmt.Sscan(w.RV, &rv); err != nil || rv == 0 {
		return 0, 0, false
	}
	return rv, 0, true
}

// coverage computes completeUpTo from the cluster-wide watches and the
// gap-fill lists (under the assumption, checked for each watch, that a watch
// has no gap).
func (c *checker) coverage() {
	type iv struct{ lo, hi uint64 }
	per := map[string][]iv{}
	addAll := func(lo, hi uint64) {
		for _, ns := range c.h.Namespaces {
			per[ns] = append(per[ns], iv{lo, hi})
		}
	}
	for _, w := range c.h.Watches {
		s, first, ok := liveStart(w)
		if !ok {
			continue
		}
		e := s
		for _, ev := range w.Events[first:] {
			e = max(e, ev.Obj.RV)
		}
		if e == s {
			continue
		}
		if w.Namespace == "" {
			addAll(s, e)
		} else {
			per[w.Namespace] = append(per[w.Namespace], iv{s, e})
		}
	}
	gap := map[uint64]bool{}
	for _, op := range c.h.Ops {
		if op.GapFill && op.Outcome == OK && op.Namespace == "" {
			gap[op.ListRV] = true
		}
	}
	for r := range gap {
		if gap[r-1] {
			addAll(r-1, r)
		}
	}
	for _, ns := range c.h.Namespaces {
		ivs := per[ns]
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].lo < ivs[j].lo })
		up := c.h.BaseRV
		for _, v := range ivs {
			if v.lo > up {
				break
			}
			up = max(up, v.hi)
		}
		c.completeUpTo[ns] = up
	}
}

// complete reports whether every write in scope ("" = every run namespace)
// up to rv is known.
func (c *checker) complete(scope string, rv uint64) bool {
	if scope != "" {
		return rv <= c.completeUpTo[scope]
	}
	for _, ns := range c.h.Namespaces {
		if rv > c.completeUpTo[ns] {
			return false
		}
	}
	return true
}

func (c *checker) inScope(scope, key string) bool {
	ns := nsOf(key)
	return c.inRun[ns] && (scope == "" || scope == ns)
}

// stateAt is the state of scope at revision rv, from the history of writes.
func (c *checker) stateAt(scope string, rv uint64) map[string]Object {
	st := map[string]Object{}
	for _, r := range c.rvs {
		if r > rv {
			break
		}
		e := c.log[r]
		if !c.inScope(scope, e.Key) {
			continue
		}
		if e.Deleted {
			delete(st, e.Key)
		} else {
			st[e.Key] = Object{Key: e.Key, RV: r, Value: e.Value}
		}
	}
	return st
}

// diffState describes how got differs from want, "" if equal.
func diffState(got []Object, want map[string]Object) string {
	var d []string
	seen := map[string]bool{}
	for _, o := range got {
		seen[o.Key] = true
		w, ok := want[o.Key]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("extra %s@%d=%q", o.Key, o.RV, o.Value))
		case w != o:
			d = append(d, fmt.Sprintf("%s: got @%d=%q want @%d=%q", o.Key, o.RV, o.Value, w.RV, w.Value))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !seen[k] {
			w := want[k]
			d = append(d, fmt.Sprintf("missing %s@%d=%q", k, w.RV, w.Value))
		}
	}
	return strings.Join(d, "; ")
}

// linearizable runs porcupine on each key.
func (c *checker) linearizable() {
	model := KeyModel()
	per := keyOperations(c.h, c.valueRV)
	for _, key := range slices.Sorted(maps.Keys(per)) {
		ops := per[key]
		res, info := porcupine.CheckOperationsVerbose(model, ops, 20*time.Second)
		switch res {
		case porcupine.Unknown:
			c.r.PorcupineUnknown++
		case porcupine.Illegal:
			c.r.add(GLinearizable, "key %s: %d operations are not linearizable: %s", key, len(ops), describeOps(model, ops))
			if c.r.Visualization == "" {
				dir := c.h.VisualizationDir
				if dir == "" {
					dir = os.TempDir()
				}
				p := filepath.Join(dir, fmt.Sprintf("annex-robustness-%d.html", time.Now().UnixNano()))
				if err := porcupine.VisualizePath(model, info, p); err == nil {
					c.r.Visualization = p
				}
			}
		}
	}
}

// describeOps lists the operations of a key in call order, for a report.
func describeOps(m porcupine.Model, ops []porcupine.Operation) string {
	ops = slices.Clone(ops)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	for i, op := range ops {
		if i == 40 {
			fmt.Fprintf(&b, " ... (%d more)", len(ops)-i)
			break
		}
		ret := "∞"
		if op.Return != math.MaxInt64 {
			ret = fmt.Sprint(time.Duration(op.Return).Round(time.Microsecond))
		}
		fmt.Fprintf(&b, "\n    c%d [%v, %s] %s", op.ClientId, time.Duration(op.Call).Round(time.Microsecond), ret, m.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// realTime checks that acknowledged writes' revisions follow real time: a
// write that returned before another was called has a lower revision.
func (c *checker) realTime() {
	type w struct {
		rv        uint64
		call, ret int64
		desc      string
	}
	var ws []w
	for i, op := range c.h.Ops {
		switch op.Kind {
		case OpCreate, OpUpdate, OpPatch, OpDelete:
			if op.Outcome == OK {
				ws = append(ws, w{op.Obj.RV, op.Call, op.Return, fmt.Sprintf("%s#%d %s", op.Kind, i, op.Key)})
			}
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].rv < ws[j].rv })
	minRet := -1
	for i := len(ws) - 1; i >= 0; i-- {
		if minRet >= 0 && ws[minRet].ret < ws[i].call {
			c.r.add(GRealTimeOrder, "%s at revision %d was called after %s at revision %d had returned",
				ws[i].desc, ws[i].rv, ws[minRet].desc, ws[minRet].rv)
		}
		if minRet < 0 || ws[i].ret < ws[minRet].ret {
			minRet = i
		}
	}
}

// expiredAllowed reports whether a 410 for a read at rv is explained by a
// compaction the harness made.
func (c *checker) expiredAllowed(rv uint64) bool {
	for _, f := range c.h.Faults {
		if f.Kind == "compact" && rv <= f.Revision {
			return true
		}
	}
	return false
}

// noFuture checks that the writes a read at revision rv includes were
// issued before the read returned.
func (c *checker) noFuture(desc string, scope string, rv uint64, ret int64) {
	for _, r := range c.rvs {
		if r > rv {
			break
		}
		if !c.inScope(scope, c.log[r].Key) {
			continue
		}
		if t, ok := c.callOf[r]; ok && t > ret {
			c.r.add(GNoFuture, "%s at revision %d includes %s at %d, called after the read returned", desc, rv, c.log[r], r)
			return
		}
	}
}

func (c *checker) lists() {
	for i, op := range c.h.Ops {
		if op.Kind != OpList {
			continue
		}
		desc := fmt.Sprintf("list#%d(ns=%q rv=%q match=%q limit=%d)", i, op.Namespace, op.RV, op.Match, op.Limit)
		var reqRV uint64
		fmt.Sscan(op.RV, &reqRV)
		switch op.Outcome {
		case Expired:
			if op.RV == "" || op.RV == "0" || !c.expiredAllowed(reqRV) {
				c.r.add(GListRV, "%s answered 410 without a compaction at or after it: %s", desc, op.Err)
			}
			continue
		case OK:
		default:
			continue
		}
		for _, p := range op.PageRV {
			if p != op.ListRV {
				c.r.add(GListOrder, "%s: pages at revisions %v", desc, op.PageRV)
				break
			}
		}
		for j := 1; j < len(op.Items); j++ {
			if op.Items[j-1].Key >= op.Items[j].Key {
				c.r.add(GListOrder, "%s: item %s after %s", desc, op.Items[j].Key, op.Items[j-1].Key)
				break
			}
		}
		switch {
		case op.RV == "":
			if f := c.freshness(op.Call); op.ListRV < f {
				c.r.add(GListFresh, "%s at revision %d, but a write at %d was acknowledged before it was sent", desc, op.ListRV, f)
			}
		case op.Match == "Exact" && op.ListRV != reqRV:
			c.r.add(GListRV, "%s answered revision %d", desc, op.ListRV)
		case op.Match == "NotOlderThan" && op.ListRV < reqRV:
			c.r.add(GListRV, "%s answered revision %d", desc, op.ListRV)
		}
		c.noFuture(desc, op.Namespace, op.ListRV, op.Return)
		if !c.complete(op.Namespace, op.ListRV) {
			c.r.Skipped++
			continue
		}
		c.r.ListsChecked++
		var items []Object
		for _, it := range op.Items {
			if c.inScope(op.Namespace, it.Key) {
				items = append(items, it)
			}
		}
		if d := diffState(items, c.stateAt(op.Namespace, op.ListRV)); d != "" {
			c.r.add(GListState, "%s at revision %d: %s", desc, op.ListRV, d)
		}
	}
}

// epochOf returns the epoch of server that a request sent at t was served in.
func (c *checker) epochOf(server string, t int64) (Epoch, bool) {
	var best Epoch
	found := false
	for _, e := range c.h.Epochs {
		if e.Server == server && e.Start <= t && (!found || e.Start >= best.Start) {
			best, found = e, true
		}
	}
	return best, found
}

func (c *checker) watches() {
	var maxRV uint64
	if len(c.rvs) > 0 {
		maxRV = c.rvs[len(c.rvs)-1]
	}
	for _, w := range c.h.Watches {
		desc := fmt.Sprintf("watch#%d(%s ns=%q rv=%q initial=%v)", w.ID, w.Server, w.Namespace, w.RV, w.SendInitial)
		live := 0
		for _, ev := range w.Events {
			if ev.Type != "BOOKMARK" {
				live++
			}
		}
		if w.ExpectExpired {
			if w.Ended == "expired" {
				c.r.ExpiredExpected++
			} else if len(w.Events) > 0 || w.Ended == "stopped" || w.Ended == "closed" {
				c.r.add(GWatchExpired, "%s from before the window ended %q after %d events, want 410", desc, w.Ended, len(w.Events))
			}
			continue
		}
		if w.Ended == "error" {
			c.r.add(GExpectedAnswers, "%s: %s", desc, w.Err)
		}
		if w.Ended == "expired" && len(w.Events) == 0 {
			if w.SendInitial {
				c.r.add(GWatchResumable, "%s answered 410: %s", desc, w.Err)
			} else if s, _, ok := liveStart(w); ok {
				e, ok := c.epochOf(w.Server, w.Call)
				steady := c.h.EtcdRestartAt < 0 || w.Call < c.h.EtcdRestartAt
				if ok && steady && s >= e.FirstRV && maxRV < s+uint64(c.h.RingSize/2) {
					c.r.add(GWatchResumable, "%s answered 410 though revision %d is inside the window (server serving since %d, at most %d writes after it): %s",
						desc, s, e.FirstRV, maxRV-s, w.Err)
				}
			}
		}
		s, first, ok := liveStart(w)
		if !ok {
			continue
		}
		if !w.SendInitial && (w.Ended != "expired" || len(w.Events) > 0) {
			c.r.ResumesInWindow++
		}
		c.r.WatchesChecked++
		if w.SendInitial {
			c.initialState(w, desc, s, first)
		}
		// Ordered, unique, bookmarks not ahead.
		last, lastBookmark := s, s
		delivered := map[uint64]bool{}
		for _, ev := range w.Events[first:] {
			if ev.Type == "BOOKMARK" {
				if ev.Obj.RV < lastBookmark {
					c.r.add(GWatchBookmark, "%s: bookmark %d after bookmark %d", desc, ev.Obj.RV, lastBookmark)
				}
				if ev.Obj.RV < last {
					c.r.add(GWatchBookmark, "%s: bookmark %d after event %d", desc, ev.Obj.RV, last)
				}
				lastBookmark = max(lastBookmark, ev.Obj.RV)
				continue
			}
			if ev.Obj.RV <= last {
				c.r.add(GWatchOrder, "%s: event %s %s@%d after revision %d", desc, ev.Type, ev.Obj.Key, ev.Obj.RV, last)
			}
			if ev.Obj.RV <= lastBookmark {
				c.r.add(GWatchBookmark, "%s: event %s %s@%d after bookmark %d", desc, ev.Type, ev.Obj.Key, ev.Obj.RV, lastBookmark)
			}
			if !c.inScope(w.Namespace, ev.Obj.Key) && c.inRun[nsOf(ev.Obj.Key)] {
				c.r.add(GWatchOrder, "%s: event for %s outside the watched range", desc, ev.Obj.Key)
			}
			last = max(last, ev.Obj.RV)
			delivered[ev.Obj.RV] = true
			// The event's type follows from the history before it.
			if e, ok := c.log[ev.Obj.RV]; ok && c.complete(nsOf(e.Key), ev.Obj.RV-1) {
				want := "MODIFIED"
				switch {
				case e.Deleted:
					want = "DELETED"
				case !e.PrevExists:
					want = "ADDED"
				}
				if ev.Type != want {
					c.r.add(GWatchType, "%s: %s %s@%d, the history says %s", desc, ev.Type, ev.Obj.Key, ev.Obj.RV, want)
				}
			}
		}
		// No gap: every write of the range between the start and the last
		// revision delivered (event or bookmark) was delivered.
		end := max(last, lastBookmark)
		for _, r := range c.rvs {
			if r <= s {
				continue
			}
			if r > end {
				break
			}
			if e := c.log[r]; c.inScope(w.Namespace, e.Key) && !delivered[r] {
				c.r.add(GWatchNoGap, "%s delivered up to %d but not %s at %d (seen by %s)", desc, end, e, r, e.Src)
			}
		}
	}
}

// initialState checks a WatchList's initial events against the state at its
// initial-events-end bookmark.
func (c *checker) initialState(w *Watch, desc string, b uint64, first int) {
	var initial []Object
	for _, ev := range w.Events[:first-1] {
		if ev.Type != "ADDED" {
			c.r.add(GWatchListState, "%s: initial event %s %s", desc, ev.Type, ev.Obj.Key)
			continue
		}
		if c.inScope(w.Namespace, ev.Obj.Key) {
			initial = append(initial, ev.Obj)
		}
	}
	var reqRV uint64
	fmt.Sscan(w.RV, &reqRV)
	if w.RV == "" {
		if f := c.freshness(w.Call); b < f {
			c.r.add(GWatchListState, "%s: initial events end at %d, but a write at %d was acknowledged before it was sent", desc, b, f)
		}
	} else if b < reqRV {
		c.r.add(GWatchListState, "%s: initial events end at %d, before the requested %d", desc, b, reqRV)
	}
	c.noFuture(desc, w.Namespace, b, w.Events[first-1].At)
	if !c.complete(w.Namespace, b) {
		c.r.Skipped++
		return
	}
	c.r.InitialStates++
	sort.Slice(initial, func(i, j int) bool { return initial[i].Key < initial[j].Key })
	for i := 1; i < len(initial); i++ {
		if initial[i].Key == initial[i-1].Key {
			c.r.add(GWatchListState, "%s: %s twice in the initial events", desc, initial[i].Key)
		}
	}
	if d := diffState(initial, c.stateAt(w.Namespace, b)); d != "" {
		c.r.add(GWatchListState, "%s: initial events at %d: %s", desc, b, d)
	}
}
