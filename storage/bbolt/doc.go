// Package bbolt is annex's embedded default storage backend: a
// [storage.Interface] kept in one bbolt (go.etcd.io/bbolt) file, with a global
// revision counter, an event log for watches and snapshot reads, periodic
// compaction, and group commit.
//
// # Usage
//
//	s, err := bbolt.Open(filepath.Join(dataDir, "annex.db"), bbolt.Options{})
//	if err != nil { ... }
//	defer s.Close()
//	go s.Start(ctx) // periodic compaction; returns when ctx is done
//
// One Store serves every resource: keys are full paths (see
// [storage.ObjectKey]).
//
// # File layout
//
// The file has three buckets, and every object's JSON is stored once:
//
//   - "events", the log: 8-byte big-endian revision → one entry per committed
//     write: its kind (put or delete), the key, the revision of the key's
//     previous state (0 if it did not exist) and, for a put, the object's
//     JSON. The JSON is final: metadata.resourceVersion inside it is the
//     entry's revision, spliced in at commit. A delete carries no JSON: the
//     deleted state is the previous one with the deletion's resource version.
//   - "objects", the index of the latest state: key → its mod revision (8
//     bytes), the log entry that holds its JSON. A Get is two lookups; a
//     List walks the index and reads each object's entry.
//   - "meta": "format" (the layout version, 2; Open refuses other files),
//     "revision" (1, written when the file is created), "compacted" (the
//     compacted revision, written only by Compact) and "pruned" (how far
//     compaction has pruned the log).
//
// The current revision is that of the last log entry (compaction never
// removes it), or 1 while the log is empty: a new store is at revision 1 and
// its first write gets 2, so no list carries resourceVersion "0", as with
// etcd. Nothing but the two buckets a write changes is written per commit, so
// the revision never goes backwards across restarts, and the log survives
// restarts: a watch may resume from any revision after the compacted one.
//
// # Durability and group commit
//
// Writers commit for each other; there is no commit goroutine. A write joins
// the pending list; if no transaction is under way, its writer becomes the
// leader and commits, in its own goroutine, every write pending at that
// moment (up to [Options].MaxBatchSize) in one bbolt transaction. So a lone
// writer commits at once with no hand-off and no batch timer (unlike bbolt's
// Batch), and writers that arrive during a transaction share the next one
// and its fsyncs: when a transaction ends, the leader hands the leadership to
// the writer of the first pending write. Each write of a batch gets its own
// revision; a write whose check fails (the key exists, the mod revision
// changed) takes none. A write is acknowledged, and its revision published to
// readers of CurrentRevision and to watchers, only after its transaction
// committed: with fsync on (the default; only [Options].UnsafeNoSync turns it
// off) an acknowledged write survives a process kill or a machine crash. A
// writer whose ctx ends before its write was taken into a transaction gets
// the ctx error and the write is never committed; once taken, it waits for
// the outcome. Reads run in their own short bbolt read transactions,
// concurrently with the writer, and copy what they return out of the file
// before the transaction ends. The freelist is not written at each commit
// (NoFreelistSync, as etcd): bbolt rebuilds it when the file is opened.
//
// Update (GuaranteedUpdate) reads the current state (or uses the cached one it
// is given), calls the UpdateFunc outside any transaction, and hands the
// result to the group commit with the mod revision it was computed from; the
// write commits only if the key still has that mod revision, and otherwise
// returns the current state, from which Update retries.
//
// # History, snapshot reads and compaction
//
// The latest state is the "objects" index. The state at an older revision R
// under a prefix is the current state with, for every key changed after R,
// the previous state named by its first change after R (absent if it was
// created after R). Exact lists and every page after the first are served
// that way, each in one read transaction: no transaction is held across
// requests.
//
// Compaction at revision C records C as compacted, then prunes the log at
// and before C down to the states live at C: the current values of keys not
// changed since C, and the previous states of the first changes after C,
// which watches (for the previous state of an event) and snapshot reads
// after C still read. It visits the entries after the last pruned revision
// up to C in order and deletes the entry each one superseded, and each
// delete's own entry, in chunks of transactions that record how far they got
// (an interrupted pruning resumes at the next Compact). From then on,
// requests for a revision at or before C fail with [storage.ErrExpired]:
// watches from it, exact lists at it, and continue tokens of lists read at it
// (which also carry a fresh token that continues at the latest revision).
// Compact never compacts the current revision: a revision at or beyond it is
// lowered to the current revision minus one. [Store.Start] runs the periodic
// compactor: every [Options].CompactionInterval (default 5 minutes) it
// compacts to the revision that was current [Options].HistoryRetention ago
// (default 5 minutes), as kube-apiserver does with etcd. Without Start,
// history is only dropped by explicit Compact calls and the log grows with
// every write.
//
// # Watch
//
// Each watcher is a goroutine that reads the event log from its own position,
// in short read transactions, and sends the events its key or prefix and
// predicate select; writers only signal that a revision was published. Events
// therefore come in revision order, without gaps or duplicates, whatever
// happens to other watchers. A watcher whose consumer stops reading buffers
// up to 100 events and then simply stops reading the log: it never blocks
// writers or other watchers, and it catches up from the log when its
// consumer reads again. If compaction passes its position meanwhile, it ends
// with an [storage.EventError] carrying [storage.ErrExpired] (the client
// re-lists, as after a 410). A watch from "" or "0" first sends the state
// current when Watch is called, read in one transaction, as ADDED events.
// Watchers that asked for ProgressNotify get a bookmark every
// [Options].ProgressInterval, and after RequestProgress once they have sent
// every event up to the revision current at the request.
//
// # Caveats
//
//   - Only one process may open the file; Open waits up to
//     [Options].LockTimeout for the lock.
//   - A snapshot read at an old revision scans the log from that revision to
//     the current one: its cost grows with the writes since, bounded by the
//     retention window.
//   - The file holds the latest state plus the retained history: each write
//     stores its JSON once (a delete stores none), and an entry is pruned
//     only once it is neither current nor needed after the compacted
//     revision. bbolt files do not shrink; deleted space is reused.
//   - Each watcher reads and decodes the log itself; put the watch cache
//     (package watch) in front of the store to fan events out to many
//     clients.
//   - UnsafeNoSync loses durability on a machine crash or power loss, and may
//     corrupt the file; use it only for tests and bulk loads.
package bbolt
