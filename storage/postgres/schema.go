// This file holds the tables and the SQL of the store.
//
//	<t>_revision   one row: the store's revision. Every write transaction
//	               (a group of writes, see group.go) locks it first and
//	               advances it by the writes it commits: transactions queue
//	               on that row lock, so they commit one after the other, in
//	               revision order, and a reader never sees revision N+1
//	               without N.
//	<t>_log        one row per write: revision (primary key), key, the
//	               key's previous revision (0 for a create), deleted, and
//	               the stored value (NULL for a delete). Every object's
//	               bytes are stored once, here, with their resourceVersion
//	               spliced in.
//	<t>_kv         the latest state: key → the revision of its log row.
//	<t>_compaction one row: the compacted revision, and the revision up to
//	               which the log has been pruned.
//	<t>_counts     prefix → the number of keys under it, for every prefix
//	               ending in "/" of every key: a count, and the
//	               remainingItemCount of a first page, are one row read,
//	               not a scan of a million keys. Writes keep it in their
//	               transaction; <t>_revision.counted is the revision it is
//	               right at: a writer that does not keep it (an older annex
//	               during an upgrade) leaves counted behind, readers then
//	               count the keys, and recount rebuilds it.

package postgres

import "strings"

// sql holds the statements of one table prefix.
type sql struct {
	channel string

	schema       []string
	schemaDone   string
	current      string
	listState    string
	compaction   string
	lock         string
	states       string
	advance      string
	addCounts    string
	counted      string
	countOf      string
	recount      []string
	create       string
	update       string
	remove       string
	notify       string
	get          string
	kvPage       string
	kvPageAfter  string
	values       string
	changed      string
	changedAfter string
	present      string
	countFrom    string
	countRange   string
	readLog      string
	setCompact   string
	pruneOld     string
	pruneDel     string
	setPruned    string
}

func newSQL(t string) sql {
	r := strings.NewReplacer("{t}", t)
	q := func(s string) string { return r.Replace(s) }
	return sql{
		channel: t + "_events",
		// Writers lock the revision row first, then write the other
		// tables: so does the schema's transaction (the ALTER locks the
		// whole table), lest a writer holding the row wait for a table
		// the schema holds while the schema waits for the row.
		schema: []string{
			q(`CREATE TABLE IF NOT EXISTS {t}_revision (id smallint PRIMARY KEY CHECK (id = 1), revision bigint NOT NULL)`),
			// -1: never counted (tables of an older annex, or new ones).
			q(`ALTER TABLE {t}_revision ADD COLUMN IF NOT EXISTS counted bigint NOT NULL DEFAULT -1`),
			// The first write gets 2: no list carries resourceVersion "0".
			q(`INSERT INTO {t}_revision (id, revision) VALUES (1, 1) ON CONFLICT DO NOTHING`),
			q(`CREATE TABLE IF NOT EXISTS {t}_compaction (id smallint PRIMARY KEY CHECK (id = 1), compacted bigint NOT NULL, pruned bigint NOT NULL)`),
			q(`INSERT INTO {t}_compaction VALUES (1, 0, 0) ON CONFLICT DO NOTHING`),
			q(`CREATE TABLE IF NOT EXISTS {t}_log (revision bigint PRIMARY KEY, key text COLLATE "C" NOT NULL,
				prev_revision bigint NOT NULL, deleted boolean NOT NULL, value bytea)`),
			// Reads of a past state look up a key's revisions.
			q(`CREATE INDEX IF NOT EXISTS {t}_log_key ON {t}_log (key, revision)`),
			q(`CREATE TABLE IF NOT EXISTS {t}_kv (key text COLLATE "C" PRIMARY KEY, revision bigint NOT NULL)`),
			q(`CREATE TABLE IF NOT EXISTS {t}_counts (prefix text COLLATE "C" PRIMARY KEY, n bigint NOT NULL)`),
		},
		// Whether the schema is there already, as this version makes it
		// (its last additions exist): then New takes no lock at all.
		schemaDone: q(`SELECT to_regclass('{t}_counts') IS NOT NULL AND EXISTS (SELECT 1 FROM pg_attribute
			WHERE attrelid = to_regclass('{t}_revision') AND attname = 'counted' AND NOT attisdropped)`),
		current: q(`SELECT r.revision, c.compacted FROM {t}_revision r, {t}_compaction c`),
		// current, and whether the counts are right.
		listState:  q(`SELECT r.revision, c.compacted, r.revision = r.counted FROM {t}_revision r, {t}_compaction c`),
		compaction: q(`SELECT compacted, pruned FROM {t}_compaction`),
		// A write transaction takes the revision row first (every writer
		// of every replica queues here), then reads the state of the keys
		// it writes: nothing else can change them until it commits.
		lock:   q(`SELECT revision FROM {t}_revision FOR UPDATE`),
		states: q(`SELECT key, revision FROM {t}_kv WHERE key = ANY($1)`),
		// The counts stay right only if they were right at the revision
		// this transaction started from.
		advance: q(`UPDATE {t}_revision SET revision = $1, counted = CASE WHEN counted = revision THEN $1 ELSE counted END`),
		// $1 prefixes, $2 their changes.
		addCounts: q(`INSERT INTO {t}_counts (prefix, n) SELECT * FROM unnest($1::text[], $2::bigint[])
			ON CONFLICT (prefix) DO UPDATE SET n = {t}_counts.n + EXCLUDED.n`),
		// Whether the counts are right, and the count of prefix $1.
		counted: q(`SELECT r.revision = r.counted, coalesce((SELECT n FROM {t}_counts WHERE prefix = $1), 0) FROM {t}_revision r`),
		countOf: q(`SELECT coalesce((SELECT n FROM {t}_counts WHERE prefix = $1), 0)`),
		// Run in a transaction that holds the revision row: every prefix
		// of every key ("/a/b/c" has "/", "/a/", "/a/b/").
		recount: []string{
			q(`DELETE FROM {t}_counts`),
			// The keys per parent ("/a/b" for "/a/b/c"; few), then the
			// prefixes of each parent.
			q(`INSERT INTO {t}_counts (prefix, n)
				SELECT array_to_string(d.p[1:i], '/') || '/', sum(d.n)
				FROM (SELECT string_to_array(parent || '/', '/') p, n
					FROM (SELECT left(key, length(key) - strpos(reverse(key), '/')) parent, count(*) n FROM {t}_kv GROUP BY 1) k) d,
					generate_series(1, cardinality(d.p) - 1) i
				GROUP BY 1`),
			q(`UPDATE {t}_revision SET counted = revision`),
		},
		// $1 key, $2 revision, $3 value, $4 expected revision. Each writes
		// the log row only when the key was in the expected state, which
		// the transaction checked under the lock; were it not (a writer
		// that ignores the lock), the NULL key fails the statement, and
		// the whole transaction with it, instead of committing the rest of
		// a group without this write.
		create: q(`WITH k AS (INSERT INTO {t}_kv (key, revision) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING key)
			INSERT INTO {t}_log (revision, key, prev_revision, deleted, value) VALUES ($2, (SELECT key FROM k), 0, false, $3)`),
		update: q(`WITH k AS (UPDATE {t}_kv SET revision = $2 WHERE key = $1 AND revision = $4 RETURNING key)
			INSERT INTO {t}_log (revision, key, prev_revision, deleted, value) VALUES ($2, (SELECT key FROM k), $4, false, $3)`),
		remove: q(`WITH k AS (DELETE FROM {t}_kv WHERE key = $1 AND revision = $3 RETURNING key)
			INSERT INTO {t}_log (revision, key, prev_revision, deleted, value) VALUES ($2, (SELECT key FROM k), $3, true, NULL)`),
		notify: `SELECT pg_notify($1, $2)`,
		get: q(`SELECT r.revision, k.revision, l.value FROM {t}_revision r
			LEFT JOIN {t}_kv k ON k.key = $1 LEFT JOIN {t}_log l ON l.revision = k.revision`),
		// $1 from (inclusive), $2 end (exclusive), $3 limit.
		kvPage: q(`SELECT key, revision FROM {t}_kv WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3`),
		// The same from $1 exclusive (text holds no NUL: a continue
		// token's "key\x00" is "after key").
		kvPageAfter: q(`SELECT key, revision FROM {t}_kv WHERE key > $1 AND key < $2 ORDER BY key LIMIT $3`),
		values:      q(`SELECT revision, value FROM {t}_log WHERE revision = ANY($1)`),
		// The keys in [$1, $2) written after $3, each with its revision at
		// $3 (the previous revision of its first write after $3).
		changed: q(`SELECT DISTINCT ON (key) key, prev_revision FROM {t}_log
			WHERE revision > $3 AND key >= $1 AND key < $2 ORDER BY key, revision`),
		changedAfter: q(`SELECT DISTINCT ON (key) key, prev_revision FROM {t}_log
			WHERE revision > $3 AND key > $1 AND key < $2 ORDER BY key, revision`),
		present:    q(`SELECT key FROM {t}_kv WHERE key = ANY($1)`),
		countFrom:  q(`SELECT count(*) FROM {t}_kv WHERE key > $1 AND key < $2`),
		countRange: q(`SELECT count(*) FROM {t}_kv WHERE key >= $1 AND key < $2`),
		// The log after $1, at most $2 rows, each with its previous value.
		readLog: q(`SELECT l.revision, l.key, l.deleted, l.prev_revision, l.value, p.value
			FROM {t}_log l LEFT JOIN {t}_log p ON p.revision = l.prev_revision
			WHERE l.revision > $1 ORDER BY l.revision LIMIT $2`),
		setCompact: q(`UPDATE {t}_compaction SET compacted = GREATEST(compacted, $1)`),
		// Pruning (lo, hi]: the rows those writes superseded, and the
		// deletions themselves, go; the latest row of every key stays.
		pruneOld: q(`DELETE FROM {t}_log WHERE revision IN
			(SELECT prev_revision FROM {t}_log WHERE revision > $1 AND revision <= $2 AND prev_revision > 0)`),
		pruneDel:  q(`DELETE FROM {t}_log WHERE revision > $1 AND revision <= $2 AND deleted`),
		setPruned: q(`UPDATE {t}_compaction SET pruned = GREATEST(pruned, $1)`),
	}
}
