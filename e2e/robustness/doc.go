// Package robustness is annex's robustness harness, after etcd's: it runs
// the environments example (examples/environments) as an external process,
// drives it with concurrent clients over its HTTP API under injected
// faults, records the history, and checks it against the Kubernetes storage
// contract on every run.
//
// # Running
//
//	cd e2e && go test ./robustness/                   # short mode, about 40 s
//	ANNEX_ROBUSTNESS_RUNS=200 go test -v -timeout 2h -run TestRobustness ./robustness/
//	ANNEX_ROBUSTNESS_SEED=<seed> go test -v -run TestRobustness ./robustness/  # replay a run's choices
//
// The short mode makes, per backend, one window run and three fault runs of
// 2 s of load each; the long mode makes ANNEX_ROBUSTNESS_RUNS fault runs of
// 3 s. Each run logs its figures and each backend a SUMMARY line: runs,
// operations, faults injected, violations (go test -v shows them). A
// violation fails the test with the run's seed.
//
// # A run
//
// Each run builds nothing (the example is built once per test binary with
// go build) and starts fresh servers: one standalone server on bbolt in a
// temporary data directory, or two replicas on one etcd (a real etcd, from
// internal/binaries, with fsync on, started once per test) under a fresh
// --etcd-prefix. Clients authenticate with the admin certificate of the
// kubeconfig each server writes, and send what kubectl and client-go send
// (HTTP/2, User-Agent, Accept: application/json). Four clients each loop
// over: create; get (resourceVersion "" or "0"); update by PUT with
// metadata.resourceVersion (the client's last seen, often stale, or a
// fresh read's); unconditional merge patch; delete with or without
// preconditions.resourceVersion; list in every resourceVersion mode ("",
// "0", Exact, NotOlderThan), namespaced or not, a third of them paginated with
// limit and continue; short watches from a recently observed revision, or
// WatchLists (sendInitialEvents=true, resourceVersionMatch=NotOlderThan,
// allowWatchBookmarks) from "" or a revision. Keys are 5 names in each of 2
// namespaces; every written value (spec.owner) is unique, so any object
// seen anywhere names the write that made it.
//
// One fault per run, at a random moment: kill -9 of the bbolt server
// (restarted on the same data directory and port), SIGSTOP/SIGCONT for
// 1.5 s, kill -9 of one of the two etcd replicas (restarted), kill -9 and
// restart of etcd. The first run of each backend instead has the window
// phase: more writes than the watch cache holds (1124 patches), then a
// watch from before them, which must be 410, on each server; on bbolt an
// exact list there, which the store must still serve (it keeps 5 minutes of
// history); on etcd a compaction through the etcd client (nothing in the
// example exposes compaction), after which an exact list at a compacted
// revision must be 410.
//
// A recorder watches every namespace for the whole run, resuming from its
// last delivered revision after each break; after a 410 (a restarted
// server's cache starts at its restart revision) it makes a WatchList and
// notes the revisions it could not watch, which the run fills at the end
// with an exact list at each of them. The run ends with a write the recorder
// must deliver, and a consistent list on every server.
//
// # The checks
//
// Requests without an answer (timeouts, transport errors, 5xx, 429) have an
// unknown outcome; a refused connection never reached a server and has no
// effect.
//
// Linearizability, with porcupine, per key: the model is one register per
// key (exists, resourceVersion, value) where resourceVersions strictly
// increase (they are global revisions); a create fails AlreadyExists when
// the object exists, an update with a precondition fails Conflict when the
// resourceVersion differs and NotFound when absent, an unconditional patch
// never conflicts, a delete returns the object as it was at the delete's
// revision, and a consistent get (resourceVersion "") sees the latest state.
// A write with an unknown outcome may take effect at any time after its call
// (its return is open), or never: the model is nondeterministic; when its
// value was seen, it is given that revision. Partitioning by key is sound
// because linearizability is local (a history is linearizable iff each
// object's is, Herlihy and Wing); gets at "0" and lists are not single-key
// linearizable operations and are checked as below.
//
// Cross-key, against the history of writes ordered by revision. Because the
// resourceVersion is the global revision, the writes' own revisions give
// their linearization order: the checker builds a map from revision to write
// (key, value or delete) from every observation (write responses, every
// object read or listed, every watch event; an object's resourceVersion is
// the revision of the write that made it), and reports two different writes
// at one revision. It checks that revisions follow real time (a write that
// returned before another was called has a lower revision). The history is
// complete up to a revision when the recorder's gap-free watches (and the
// gap-filling exact lists) cover everything from the run's first revision to
// it. Each list is then checked: its items equal the state at its revision
// (skipped, and counted, when the history is incomplete there), in key order
// without duplicates, every page at the first page's revision; a consistent
// list's revision is at least that of every write acknowledged before it was
// sent; an Exact list is at the revision asked, a NotOlderThan one at or
// after it; no list includes a write issued after it returned; 410 only at
// a revision the harness compacted.
//
// Watches, every one of them: events strictly increase in revision (ordered,
// unique) and lie in the watched range; no gap: every write of the range
// between the start revision and the last revision delivered (event or
// bookmark) was delivered; a bookmark never precedes an event at or below
// its revision (bookmarks are not ahead of delivered events); each event's
// type (ADDED, MODIFIED, DELETED) follows from the history; a WatchList's
// initial events equal the state at its initial-events-end bookmark's
// revision, which is fresh as a consistent list (or at least the revision
// asked). Resumable inside the window: a watch from revision r on a server
// that answered a consistent list at F <= r since it (re)started, with fewer
// than RingSize/2 revisions after r in the whole run, must not be 410
// (RingSize is watch.Config's default, 1024, which the example uses; the
// rule is not applied after an etcd restart, when a replica's cache may
// re-list at a revision nobody observed). 410 outside it: after a kill -9,
// a watch from the run's first revision on the restarted server, and after
// the window phase, one on every server, must be 410.
//
// # Self-tests
//
// TestModelStep checks the model's steps; TestCheckerCatchesBrokenHistories
// records a clean run and breaks it in one place at a time (a watch event
// removed, two swapped, a bookmark ahead of an event, a stale consistent
// get, a list missing an item, an acknowledged write lost from the final
// list, a WatchList missing an initial object, a value changed at one
// revision, a stale consistent list); TestBrokenServerCaught runs the
// workload through a reverse proxy that serves consistent GETs from the
// first answer it saw, and one that drops the second event of every watch:
// the checker must report each.
package robustness
