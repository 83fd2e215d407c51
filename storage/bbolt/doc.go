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
// The file has three buckets:
//
//   - "objects": key → 8-byte big-endian mod revision, then the object's
//     JSON. The JSON is final: metadata.resourceVersion inside it is the mod
//     revision, written before the commit.
//   - "events": 8-byte big-endian revision → one log entry per committed
//     write: its kind (put or delete), the key, the new value (for a delete,
//     the last state with the deletion's resource version) and the previous
//     record ("objects" form, empty if the key did not exist).
//   - "meta": "revision" (the last committed revision) and "compacted" (the
//     compacted revision), both 8-byte big-endian.
//
// The revision is written in the same transaction as the writes, so it never
// goes backwards across restarts, and the event log survives restarts: a
// watch may resume from any revision after the compacted one.
//
// # Durability and group commit
//
// One goroutine, the commit loop, writes to the file. When it is free it takes
// every write queued at that moment (up to [Options].MaxBatchSize) and
// commits them in one bbolt transaction, so concurrent writers share one
// commit and its fsyncs, and a lone writer is committed at once (no batch
// timer, unlike bbolt's Batch). Each write of a batch gets its own revision;
// a write whose check fails (the key exists, the mod revision changed) takes
// none. A write is acknowledged, and its revision published to readers of
// CurrentRevision and to watchers, only after its transaction committed:
// with fsync on (the default; only [Options].UnsafeNoSync turns it off) an
// acknowledged write survives a process kill or a machine crash. Reads run in
// their own short bbolt read transactions, concurrently with the commit loop,
// and copy what they return out of the file before the transaction ends.
//
// Update (GuaranteedUpdate) reads the current state (or uses the cached one it
// is given), calls the UpdateFunc outside any transaction, and hands the
// result to the commit loop with the mod revision it was computed from; the
// loop commits it only if the key still has that mod revision, and otherwise
// returns the current record, from which Update retries.
//
// # History, snapshot reads and compaction
//
// The latest state is the "objects" bucket. The state at an older revision R
// under a prefix is the current state with, for every key changed after R,
// the previous record of its first change after R (absent if it was created
// after R). Exact lists and every page after the first are served that way,
// each in one read transaction: no transaction is held across requests.
//
// Compaction at revision C records C as compacted and deletes the log
// entries at and before C (in chunks, so a long history never makes one
// huge transaction). From then on, requests for a revision at or before C
// fail with [storage.ErrExpired]: watches from it, exact lists at it, and
// continue tokens of lists read at it (which also carry a fresh token that
// continues at the latest revision). Compact never compacts the current
// revision: a revision at or beyond it is lowered to the current revision
// minus one. [Store.Start] runs the periodic compactor: every
// [Options].CompactionInterval (default 5 minutes) it compacts to the
// revision that was current [Options].HistoryRetention ago (default 5
// minutes), as kube-apiserver does with etcd. Without Start, history is only
// dropped by explicit Compact calls and the log grows with every write.
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
//   - Every write is stored twice (object and log entry), plus the previous
//     state in the log: the file is about twice the data plus the retained
//     history. bbolt files do not shrink; deleted space is reused.
//   - Each watcher reads and decodes the log itself; put the watch cache
//     (package watch) in front of the store to fan events out to many
//     clients.
//   - UnsafeNoSync loses durability on a machine crash or power loss, and may
//     corrupt the file; use it only for tests and bulk loads.
package bbolt
