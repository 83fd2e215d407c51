// Package postgres is a [storage.Interface] kept in PostgreSQL
// (github.com/jackc/pgx/v5): the database many teams already run, managed,
// replicated and backed up. Several annex replicas on one database serve the
// same objects, each with its watch cache fed from the database.
//
// # Usage
//
//	s, err := postgres.Config{DSN: "postgres://annex@db:5432/annex?sslmode=verify-full"}.Open(ctx, postgres.Options{})
//	if err != nil { ... }
//	defer s.Close()
//	go s.Start(ctx) // periodic compaction
//
// [Config.AddFlags] binds --postgres-dsn; package kubeflags opens the store
// for --storage-backend=postgres. [New] takes a pool the caller made. A
// password in the DSN is never logged: errors and logs show
// [Config.Redacted].
//
// # Revisions
//
// Every write transaction first locks the one row of <table>_revision,
// takes the next revisions for its writes and advances the row by as many.
// The row lock queues transactions (of every replica), so they commit one
// after the other: commit order is revision order, a failed write
// (conflict, existing key) uses up no revision, and a reader never sees
// revision N+1 without N, unlike a sequence, which hands out numbers that
// commit out of order. The
// revision is spliced into the object's bytes before they are stored (and
// encrypted, with a [value.Transformer]), as on bbolt: a read copies them.
// Create inserts the key only when it is absent; Update and Delete commit
// only when the key's revision is still the one read (optimistic
// concurrency, retried by backend.GuaranteedUpdate), with the errors of the
// other backends.
//
// Writers of one store share transactions (group commit): one goroutine
// takes every write waiting at that moment (up to 128) and commits them in
// one transaction of two pipelined round trips, with one WAL flush; a
// write that finds its key in another state is a conflict that leaves the
// others alone, and a write is acknowledged only after COMMIT. A lone
// write waits for no timer. Write throughput grows with the number of
// concurrent writers, up to the group's size, instead of being bounded by
// one commit's latency; replicas still take turns on the revision row.
//
// # Watch
//
// A write NOTIFYs the store's channel at commit. The notification is only a
// wake-up: one goroutine per store reads the log table after the last
// revision it has, in order, into a ring of recent events (decoded once);
// every watcher reads the ring, or the table when it is further behind. A
// dropped notification or connection delays events (the log is also read
// every PollInterval, and after reconnecting) but never loses one, and a
// watch from revision N resumes exactly after N. [Store.RequestProgress]
// makes the reader catch up with everything committed, then sends a
// bookmark to every watcher that asked for progress notifications: the
// watch cache's consistent reads rely on it.
//
// # History and compaction
//
// The log keeps every write after the compacted revision and the latest
// write of every key. [Store.Compact] at R records R (reads, continue tokens
// and watches at or before R fail with ErrExpired from then on), then prunes
// the rows replaced at or before R and the deletions, CompactionBatch
// revisions per transaction; pruning never touches the revision row, so it
// never blocks writers. [Store.Start] compacts every CompactionInterval at
// the revision current one interval earlier.
//
// Reads of the latest state use <table>_kv (key → revision; gets and pages
// are index lookups and range scans of its primary key); a read at a past
// revision (the pages after the first of a paged list) merges it with the
// few keys written since, read from the log by revision. Writes keep the
// number of keys under every prefix ending in "/" in <table>_counts, in
// their transaction: a count, and the remainingItemCount of a first page,
// read one row, and a continue token carries the count on to the next
// page, so no page walks the keys after it (a million keys take about
// 100 ms to count). Tables an older annex wrote to are recounted, holding
// the revision row, when a store opens them and by Start.
package postgres
