// This file holds the recorded history: what each client asked, when, and
// what it got back.

package robustness

import (
	"sync"
	"time"
)

// OpKind names a request a client made.
type OpKind string

// The requests of the workload.
const (
	OpCreate OpKind = "create" // POST
	OpGet    OpKind = "get"    // GET of one object
	OpUpdate OpKind = "update" // PUT with metadata.resourceVersion (a precondition)
	OpPatch  OpKind = "patch"  // merge patch without resourceVersion (unconditional)
	OpDelete OpKind = "delete" // DELETE, with or without preconditions.resourceVersion
	OpList   OpKind = "list"   // LIST, paginated or not
)

// Outcome classifies a response.
type Outcome string

// Outcomes. Unknown is a request whose effect is unknown: no response
// (transport error, timeout, the server killed) or a 5xx/429, after which a
// write may or may not have been applied.
const (
	OK            Outcome = "ok"
	NotFound      Outcome = "not-found"      // 404
	AlreadyExists Outcome = "already-exists" // 409 AlreadyExists
	Conflict      Outcome = "conflict"       // 409 Conflict
	Expired       Outcome = "expired"        // 410
	Unknown       Outcome = "unknown"
	// Refused is a request that never reached a server: the connection was
	// refused (the server is down). It has no effect.
	Refused  Outcome = "refused"
	Rejected Outcome = "rejected" // any other answer: a harness or server bug
)

// Object is what the history keeps of an object: its key
// ("namespace/name"), resourceVersion and the value the workload writes
// (spec.owner, unique per write).
type Object struct {
	Key   string
	RV    uint64
	Value string
}

// Op is one request and its response. Times are nanoseconds since the
// history's start, on the monotonic clock.
type Op struct {
	Client int
	Server string // which server (and incarnation) was asked
	Kind   OpKind
	// Single-object requests.
	Key          string
	Value        string // create, update, patch: the value written
	Precondition uint64 // update (always), delete (optional): the RV required; 0 none
	// Reads: resourceVersion and resourceVersionMatch as sent; for a get
	// only "" (consistent) and "0" are used.
	RV, Match string
	Namespace string // list: the namespace listed, "" for all
	Limit     int    // list: page size, 0 unpaginated
	GapFill   bool   // list: an exact list the harness made to fill a watch gap

	Call, Return int64
	Outcome      Outcome
	Status       int    // HTTP status, 0 without a response
	Err          string // the error or Status message, for reports

	Obj    *Object  // get, create, update, patch, delete: the object returned
	ListRV uint64   // list: metadata.resourceVersion (of the first page)
	Items  []Object // list: every item of every page
	Pages  int      // list: pages read
	PageRV []uint64 // list: each page's resourceVersion
}

// WatchEvent is one event a watch delivered.
type WatchEvent struct {
	Type       string // ADDED, MODIFIED, DELETED, BOOKMARK
	Obj        Object // for a bookmark only RV
	InitialEnd bool   // a bookmark with the k8s.io/initial-events-end annotation
	At         int64
}

// Watch is one watch request and what it delivered until it ended.
type Watch struct {
	ID          int
	Client      int
	Server      string
	Namespace   string // "" for all namespaces
	RV          string // resourceVersion as sent
	SendInitial bool   // WatchList: sendInitialEvents=true, resourceVersionMatch=NotOlderThan
	// ExpectExpired marks a watch the harness made from a revision it knows
	// to be outside the server's window (before a restart): it must end with
	// 410.
	ExpectExpired bool
	Call          int64
	Events        []WatchEvent
	End           int64
	// Ended says how it ended: "expired" (410, as a response or an ERROR
	// event), "throttled" (429 with Retry-After: retry later), "error"
	// (another ERROR event or status), "closed" (the server
	// closed it cleanly), "cut" (transport error), "stopped" (by the client).
	Ended  string
	Status int
	Err    string
}

// Fault is a fault the harness injected, for reports and for the checker's
// window rules.
type Fault struct {
	Kind   string // "kill", "pause", "kill-replica", "restart-etcd", "restart-postgres", "compact"
	Target string
	At     int64 // when it was injected
	Done   int64 // when the target served again
	// Revision is, for a compaction, the revision compacted.
	Revision uint64
}

// Epoch is a period in which one server incarnation serves from one watch
// cache: it starts when the server is first seen serving (after a start, a
// restart, or a restart of etcd) with FirstRV, the resourceVersion of a
// consistent list it answered then. The cache's window starts at or before
// FirstRV.
type Epoch struct {
	Server  string
	Start   int64
	FirstRV uint64
}

// History is everything one run recorded. Its methods are safe for
// concurrent use while the run goes on; the checker reads it after.
type History struct {
	start time.Time

	mu      sync.Mutex
	Ops     []Op
	Watches []*Watch
	Faults  []Fault
	Epochs  []Epoch
	// Namespaces are the namespaces the workload writes; everything else
	// the server holds is ignored.
	Namespaces []string
	// BaseRV is the revision at which the run's namespaces were empty: the
	// resourceVersion of the first consistent list.
	BaseRV uint64
	// RingSize is the server's watch-cache window in events.
	RingSize int
	// EtcdRestarted says etcd was restarted during the run: the replicas'
	// caches may have re-listed at a revision nobody observed, so the
	// window rule for 410 is not applied after it.
	EtcdRestartAt int64
	// VisualizationDir is where Check writes porcupine's HTML for a key
	// that is not linearizable; empty means os.TempDir() (kept after the
	// run, for a person to open).
	VisualizationDir string
	nextWatch        int
}

// NewHistory starts a history now.
func NewHistory(namespaces []string, ringSize int) *History {
	return &History{start: time.Now(), Namespaces: namespaces, RingSize: ringSize, EtcdRestartAt: -1}
}

// Now is the time since the history started, in nanoseconds.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// AddOp records a finished request.
func (h *History) AddOp(op Op) {
	h.mu.Lock()
	h.Ops = append(h.Ops, op)
	h.mu.Unlock()
}

// NewWatch registers a watch about to be sent; the caller fills it in and
// must not touch it after the run.
func (h *History) NewWatch(w *Watch) *Watch {
	h.mu.Lock()
	w.ID = h.nextWatch
	h.nextWatch++
	h.Watches = append(h.Watches, w)
	h.mu.Unlock()
	return w
}

// AddFault records an injected fault.
func (h *History) AddFault(f Fault) {
	h.mu.Lock()
	h.Faults = append(h.Faults, f)
	h.mu.Unlock()
}

// AddEpoch records that a server incarnation serves.
func (h *History) AddEpoch(e Epoch) {
	h.mu.Lock()
	h.Epochs = append(h.Epochs, e)
	h.mu.Unlock()
}

// Clone returns a deep copy, for self-tests that break a recorded history.
func (h *History) Clone() *History {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := &History{start: h.start, Namespaces: h.Namespaces, BaseRV: h.BaseRV, RingSize: h.RingSize,
		EtcdRestartAt: h.EtcdRestartAt, nextWatch: h.nextWatch}
	for _, op := range h.Ops {
		if op.Obj != nil {
			o := *op.Obj
			op.Obj = &o
		}
		op.Items = append([]Object(nil), op.Items...)
		op.PageRV = append([]uint64(nil), op.PageRV...)
		c.Ops = append(c.Ops, op)
	}
	for _, w := range h.Watches {
		cw := *w
		cw.Events = append([]WatchEvent(nil), w.Events...)
		c.Watches = append(c.Watches, &cw)
	}
	c.Faults = append([]Fault(nil), h.Faults...)
	c.Epochs = append([]Epoch(nil), h.Epochs...)
	return c
}
