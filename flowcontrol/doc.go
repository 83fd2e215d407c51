// Package flowcontrol is API Priority and Fairness: kube's
// flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations,
// shuffle-sharded fair queues, seats, and 429 with Retry-After, so one noisy
// client never starves the others.
//
// # Use
//
//	fc, err := flowcontrol.New(flowcontrol.Config{Registerer: reg})
//	handler = fc.Filter(handler)        // after authentication and impersonation, before authorization
//	go fc.Start(ctx)                    // file reloads, the cluster's objects, seat borrowing
//	mux.Handle("/debug/api_priority_and_fairness/", authorized(fc.DebugHandler()))
//
// [Config.AddFlags] binds kube's flags: --enable-priority-and-fairness,
// --max-requests-inflight, --max-mutating-requests-inflight and
// --flowcontrol-config-file.
//
// # Configuration
//
// With no files, the configuration is kube's mandatory objects (exempt,
// catch-all) and suggested ones (system, node-high, leader-election,
// workload-high, workload-low, global-default, probes, ...), as a new
// cluster has them ([DefaultConfiguration]). Files ([Parse], [LoadFiles]:
// multi-document YAML, Lists, strict decoding, kube's defaulting and
// validation) add to them and replace those of the same name. With
// [Config].Cluster, the cluster's objects are the configuration once listed
// (a k8s.io/apiserver server does the same); the mandatory objects are
// added when missing, and FlowSchemas naming a missing level are ignored.
// Objects without a UID get [StableUID], so the response headers
// X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID are the
// same on every replica.
//
// # Seats
//
// The server's seats (--max-requests-inflight + --max-mutating-requests-inflight,
// 600 by default) are shared by the limited levels in proportion to their
// nominalConcurrencyShares (rounded up). Every 10 seconds, Start re-allocates
// them from each level's smoothed seat demand within
// [nominal − lendable, nominal + borrowing limit], as kube does; a level
// starts at nominal − lendable/2. A request's width: a LIST (or a watch that
// sends initial events) one seat per 100 objects ([ObjectCounter]), at most
// 10 and the level's maximum; a write one seat, and when ten or more watches
// will see it ([Config].WatchCount, or the watches in flight through the
// filter) extra seats for 5ms per ten watches after it; anything else one
// seat. A watch holds its seats only until its handler calls
// filters.WatchInitialized.
//
// # Queuing
//
// A Queue level deals each flow (schema and distinguisher: user, namespace,
// or none) a hand of queues from a hash of the flow, and enqueues to the
// hand's queue with the least waiting work; dispatch picks the queue whose
// oldest request has the smallest virtual finish time. Two departures from
// kube's queueset, both so that a flow that was idle gets the next free
// seat while another floods the level with long requests: a queue's
// virtual start counts the time its running requests have run so far
// (kube charges G = 3 ms at dispatch and corrects it only when the request
// finishes), and a queue that becomes active starts at the current virtual
// time or, when earlier, one G before the earliest waiting queue. A request is
// rejected when its queue is full and the seats are taken; one that waits a
// quarter of its time to its deadline (15s without one) is rejected and
// never runs. A Reject level runs what fits and rejects the rest. The exempt
// level (system:masters, and the probes) runs everything. A rejection is 429
// with a TooManyRequests Status, message "Too many requests, please try
// again later.", and an adaptive Retry-After (1 to 32 seconds).
//
// # Caveats
//
// Simplifications of kube: LIST width uses kube's object-count estimate
// (every LIST counted as served from the cache) rather than the size-based
// one; a reconfiguration clamps a level's current seats into its new bounds
// and leaves the fair re-allocation to the next period; virtual time is a
// float64 without kube's epoch advance. A removed level keeps dispatching
// the requests it holds until it is empty. With Disabled, the filter is
// kube's max-in-flight limit (read-only and mutating), and Start only waits.
package flowcontrol
