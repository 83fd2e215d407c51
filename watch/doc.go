// Package watch is annex's watch cache: a [Cacher] wraps any
// storage.Interface, keeps the objects of one resource prefix in memory, and
// serves watches, lists and gets from there, fanning every change out to
// thousands of watchers while the store sees one watch. A Cacher is a
// storage.Interface itself, so the REST layer does not change when it is on.
//
// # Usage
//
//	c, err := watch.New(store, watch.Config{
//		Prefix:     storage.ResourcePrefix(group, plural, ""),
//		Registerer: reg,
//	})
//	if err != nil { ... }
//	go c.Start(ctx)   // list, then watch the store, until ctx is done
//	// c.Ready(ctx) fails until the initial list is in; serve c as the
//	// resource's storage.Interface.
//
// # The model
//
// Start lists the prefix once and then holds one upstream watch on it (with
// ProgressNotify, so an idle prefix still advances). Every upstream event is
// applied by one goroutine, under the cacher's lock, in revision order:
//
//   - to the current state, a B-tree of [storage.Object] (bytes plus parsed
//     metadata whose strings are views into the bytes, never decoded again).
//     A GET looks the tree up under the cacher's read lock; a reader that
//     walks the state (a LIST, a watch's initial events) takes an immutable
//     copy-on-write clone of it, made on the first such read after a change
//     and shared until the next one, and walks it without a lock;
//   - to the ring of the last [Config].RingSize events, so a watch can start
//     from any revision in the ring and an exact list (or the next page of a
//     list) at such a revision is served from memory with snapshot
//     semantics: the state at a past revision is rebuilt on demand from the
//     current one, the later events undone, and kept with its event for the
//     next page. An event keeps no clone of its own (each would hold the
//     node copies of the next write: about 2 KiB per event);
//   - to the dispatch shards, which deliver it to the watchers.
//
// # Fan-out
//
// Watchers are spread round robin over [Config].DispatchWorkers shards
// (GOMAXPROCS by default), each a goroutine with its own queue and its own
// index of watchers. Every shard receives every event, every bookmark and
// every watcher registration and removal in one order, the order in which
// they were queued under the cacher's lock, and works through its queue on
// its own: per-watcher order and gap-freedom need no barrier between shards,
// and the fan-out of one event runs on every core. A new watcher is queued
// after the events its initial events or ring replay already cover, so it
// sees each later event exactly once. A shard's index holds each watcher
// by its exact key (a single-object watch), by one value of an indexed
// field its predicate requires ([FieldMatcher]; "metadata.name" always, plus
// [Config].IndexFields), or else by its prefix, so an event visits only the
// watchers of its key, of the prefixes of its key (namespace, whole
// resource) and of its field values.
//
// An event is translated once per form a watcher can see it in (as stored;
// ADDED for a watcher whose predicate the object starts matching; DELETED
// for one it stops matching), and every watcher gets a copy of one of them;
// a delivery takes no lock and allocates nothing while the watcher keeps up
// (a non-blocking send to its channel). Each event carries one
// [storage.EventMemo], shared by every watcher in every shard that receives
// it, so the REST layer encodes each frame (per event type and output kind)
// once however many watchers write it. When a shard has more than 256
// events queued, the upstream loop waits for it: a fan-out that cannot keep
// up slows the intake rather than queueing without bound.
//
// # Watch semantics
//
// A watch from "" (after the cache caught up with the store's current
// revision) or "0" (at once) first sends the current state as ADDED events
// in key order, then the changes. A watch from N replays the ring after N;
// N older than the ring (or compacted through [Cacher.Compact]) gets one
// EventError with storage.ErrExpired ("too old resource version: N (oldest)"),
// which the REST layer turns into a 410 ERROR event. N beyond the store's
// revision fails with storage.ErrTooLargeResourceVersion. A watch-list
// (WatchOptions.SendInitialEvents) sends the state, then a bookmark with
// Event.InitialEventsEnd at the state's revision, then the changes.
// Predicates see both states of a change: old matched and new not →
// DELETED (the old state at the change's revision), new matched and old not
// → ADDED, both → MODIFIED. Watchers with ProgressNotify get a bookmark with
// the cache's revision every [Config].BookmarkInterval (a minute, as
// Kubernetes) from their start, one 2 seconds before their context's
// deadline, and one after RequestProgress.
//
// # Slow watchers
//
// A shard never blocks on a watcher. It sends to a watcher's small result channel
// when there is room, and otherwise queues the event for that watcher, where
// a goroutine that exists only while the queue is non-empty moves it on. A
// watcher is cut off (storage.EventError carrying [ErrSlowWatcher] and
// storage.ErrExpired, then its channel closes; counted in
// apiserver_terminated_watchers_total) when its queue exceeds
// [Config].WatcherBuffer, when it has been behind for longer than
// [Config].MaxLag, or when the events queued across all watchers exceed
// [Config].DispatchBudget. The others never wait for it.
//
// # Reads
//
// Get and List with "0" answer from memory at once; "" first waits (up to
// [Config].ConsistentReadWait, asking the store for a progress bookmark) for
// the cache to reach the store's current revision, and falls back to the
// store on timeout; "N" waits for N likewise. Exact lists and continue tokens
// are served from the states the ring rebuilds; a revision outside the
// ring or at or before the compacted revision goes to the store, which
// answers ErrExpired where it must. Keys outside the prefix, and everything while the cache is
// not ready, go to the store. Writes always go to the store; Update and
// Delete pass the cached state as Cached to save a read (only once the cache
// has applied every write made through it, so the state is not known stale).
//
// A long LIST walk (a label selector over many objects) runs in turns on at
// most [Scans].Cores cores, GOMAXPROCS-1 by default, shared by every cache
// of a server through [Config].Scans: a core stays free for short requests,
// and Go reads the network at once only on a core that runs out of work.
// On Linux a scan's thread also asks the kernel for its shortest time slice
// while it walks, so that whatever wakes on the scan's core runs within
// 0.1 ms rather than after the scan's slice.
//
// # Computed resources
//
// A resource computed on read (not stored) is watched through a [Feed]: its
// program puts each object when it changes, and a Cacher over the feed
// serves the watches. [OnDemand] makes the feed and its Cacher only while
// someone watches: the first watch runs the program's event source, which
// primes a new feed with the current objects (no events) and calls
// [Feed.Synced]; the session ends Linger after the last watcher, and with
// it every copy of the objects. Revisions continue from one session to the
// next, so a watch from a revision before the current session's priming is
// ErrExpired, as kube's cache answers one it no longer holds.
//
// # Caveats
//
//   - Initial events are collected under the cacher's lock: a watch from ""
//     on a very large prefix delays dispatch by that long.
//   - A re-list (after the upstream watch failed) ends every watcher with
//     ErrRelisted (and storage.ErrExpired): the clients re-list.
//   - Stop closes the watcher's channel once its shard reaches the request in
//     its queue (the shard may be sending to it at that moment), which is
//     prompt unless the fan-out is far behind.
//   - The cache honours compaction only when it goes through Cacher.Compact;
//     the store's own periodic compaction does not shrink the ring.
package watch
