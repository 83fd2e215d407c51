// This file holds the preloads of the large-collection phase: copies of one
// object written by SQL straight into each backend's own tables (one
// INSERT … SELECT over generate_series each, with the servers stopped), so
// that a million objects take seconds, not the quarter of an hour a million
// creates through the API would.

package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// preloadNative copies the object tmpl of annex's native store (tables
// annex_*, the default prefix) as big-0 … big-<n-1>, each in the log and the
// latest state at a revision of its own after the current one, with that
// revision spliced into its bytes, as a create would.
func preloadNative(ctx context.Context, dsn string, n int) error {
	return withConn(ctx, dsn, func(conn *pgx.Conn) error {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var rev int64
			if err := tx.QueryRow(ctx, `SELECT revision FROM annex_revision FOR UPDATE`).Scan(&rev); err != nil {
				return err
			}
			var key, value string
			var trev int64
			if err := tx.QueryRow(ctx, `SELECT k.key, convert_from(l.value, 'UTF8'), l.revision FROM annex_kv k
				JOIN annex_log l ON l.revision = k.revision WHERE k.key LIKE '%/tmpl'`).Scan(&key, &value, &trev); err != nil {
				return fmt.Errorf("the template object: %w", err)
			}
			prefix := key[:len(key)-len("tmpl")]
			if _, err := tx.Exec(ctx, `INSERT INTO annex_log (revision, key, prev_revision, deleted, value)
				SELECT $1::bigint + i + 1, $2::text || 'big-' || i, 0, false,
					convert_to(replace(replace($3::text, '"name":"tmpl"', '"name":"big-' || i || '"'),
						'"resourceVersion":"' || $4::bigint || '"', '"resourceVersion":"' || ($1::bigint + i + 1) || '"'), 'UTF8')
				FROM generate_series(0, $5::bigint - 1) i`, rev, prefix, value, trev, n); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO annex_kv (key, revision) SELECT key, revision FROM annex_log WHERE revision > $1`, rev); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE annex_revision SET revision = $1`, rev+int64(n))
			return err
		})
		if err != nil {
			return err
		}
		return vacuum(ctx, conn, `SELECT count(*) FROM annex_log WHERE key LIKE '%/big-%'
			AND position(('"resourceVersion":"' || revision || '"')::bytea IN value) = 0`)
	})
}

// preloadKine copies kine's row of the object tmpl (etcd's value, whose
// resourceVersion is empty) as big-0 … big-<n-1>, each a create of its
// own (kine's id sequence gives each its revision).
func preloadKine(ctx context.Context, dsn string, n int) error {
	return withConn(ctx, dsn, func(conn *pgx.Conn) error {
		tag, err := conn.Exec(ctx, `INSERT INTO kine (name, created, deleted, create_revision, prev_revision, lease, value, old_value)
			SELECT left(t.name, length(t.name) - 4) || 'big-' || i, t.created, t.deleted, t.create_revision, t.prev_revision, t.lease,
				convert_to(replace(convert_from(t.value, 'UTF8'), '"name":"tmpl"', '"name":"big-' || i || '"'), 'UTF8'), t.old_value
			FROM (SELECT * FROM kine WHERE name LIKE '%/tmpl' ORDER BY id DESC LIMIT 1) t, generate_series(0, $1::bigint - 1) i`, n)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != int64(n) {
			return fmt.Errorf("inserted %d rows, want %d (no template object?)", tag.RowsAffected(), n)
		}
		return vacuum(ctx, conn, `SELECT count(*) FROM kine WHERE name LIKE '%/big-%'
			AND position(('"name":"' || substr(name, length(name) - position('/' IN reverse(name)) + 2) || '"')::bytea IN value) = 0`)
	})
}

func withConn(ctx context.Context, dsn string, f func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return f(conn)
}

// vacuum checks that the copies are what they should be (check counts the
// bad ones), then vacuums and analyzes the database, as autovacuum would
// soon after a bulk load: both backends are measured on tables with fresh
// statistics and visibility maps.
func vacuum(ctx context.Context, conn *pgx.Conn, check string) error {
	var bad int64
	if err := conn.QueryRow(ctx, check).Scan(&bad); err != nil {
		return fmt.Errorf("checking the copies: %w", err)
	}
	if bad != 0 {
		return fmt.Errorf("%d copies were not rewritten (name or resourceVersion)", bad)
	}
	_, err := conn.Exec(ctx, `VACUUM ANALYZE`)
	return err
}
