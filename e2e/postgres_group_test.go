// This file tests the PostgreSQL store's group commit: concurrent writes of
// one store share a transaction, with revisions contiguous in commit order,
// conflicts inside a group, and one write's failure failing no other.

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/postgres"
	"github.com/annexapi/annex/storage/value"
)

func widgetJSON(name, v string) []byte {
	return []byte(`{"apiVersion":"storagetest.annex.dev/v1","kind":"Widget","metadata":{"name":"` + name +
		`","namespace":"ns"},"spec":{"value":"` + v + `"}}`)
}

// refusing stores values as they are, and refuses the keys that hold
// "refused".
type refusing struct{ value.Identity }

func (refusing) TransformToStorage(ctx context.Context, data []byte, key string) ([]byte, error) {
	if strings.Contains(key, "refused") {
		return nil, errors.New("refused by the test transformer")
	}
	return data, nil
}

// holdRevision locks table's revision row from a transaction of its own,
// as another replica's write would, and returns the function that commits
// it. waiting then reports once a writer of the store waits for the lock.
func holdRevision(t *testing.T, pool *pgxpool.Pool, table string) (release func(), waitForWriter func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT revision FROM "+pgx.Identifier{table + "_revision"}.Sanitize()+" FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	release = func() {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitForWriter = func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no writer waits for the revision row after 10s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	return release, waitForWriter
}

// transactions is how many transactions wrote the log rows of keys (rows
// one transaction inserted share its xmin).
func transactions(t *testing.T, pool *pgxpool.Pool, table string, keys []string) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), "SELECT count(DISTINCT xmin::text) FROM "+pgx.Identifier{table + "_log"}.Sanitize()+
		" WHERE key = ANY($1)", keys).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPostgresGroupCommit(t *testing.T) {
	_, pool := pgPool(t)
	ctx := context.Background()
	const table = "grouped"
	s, err := postgres.New(ctx, pool, postgres.Options{Table: table, CompactionInterval: -1, Transformer: refusing{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	t.Run("concurrent_writes_share_transactions", func(t *testing.T) {
		const n = 64
		base, err := s.CurrentRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		release, waitForWriter := holdRevision(t, pool, table)
		keys := make([]string, n)
		revs := make([]uint64, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			keys[i] = fmt.Sprintf("/widgets/ns/shared-%d", i)
			wg.Go(func() {
				o, err := s.Create(ctx, keys[i], widgetJSON(fmt.Sprintf("shared-%d", i), "v"))
				revs[i], errs[i] = o.ResourceVersion, err
			})
		}
		waitForWriter()
		release()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create %s: %v", keys[i], err)
			}
		}
		slices.Sort(revs)
		for i, r := range revs {
			if r != base+1+uint64(i) {
				t.Fatalf("revisions %v: want %d..%d, contiguous", revs, base+1, base+n)
			}
		}
		// The committer held one write while the row was locked; the
		// others queued meanwhile and went together.
		if got := transactions(t, pool, table, keys); got > n/4 {
			t.Errorf("%d creates took %d transactions; want them grouped (at most %d)", n, got, n/4)
		}
		cur, err := s.CurrentRevision(ctx)
		if err != nil || cur != base+n {
			t.Errorf("current revision %d (%v), want %d", cur, err, base+n)
		}
	})

	t.Run("conflicts_inside_a_group", func(t *testing.T) {
		// 16 writers × 8 increments of one counter: every write of a
		// group but one conflicts, is retried from a fresh read, and
		// none is lost.
		const key = "/widgets/ns/counter"
		if _, err := s.Create(ctx, key, widgetJSON("counter", "0")); err != nil {
			t.Fatal(err)
		}
		base, err := s.CurrentRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16*8)
		for range 16 {
			wg.Go(func() {
				for range 8 {
					_, err := s.Update(ctx, key, storage.UpdateOptions{}, func(cur storage.Object) ([]byte, error) {
						var w struct {
							Spec struct{ Value string } `json:"spec"`
						}
						if err := json.Unmarshal(cur.Data, &w); err != nil {
							return nil, err
						}
						v, err := strconv.Atoi(w.Spec.Value)
						if err != nil {
							return nil, err
						}
						return widgetJSON("counter", strconv.Itoa(v+1)), nil
					})
					if err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("update: %v", err)
		}
		o, err := s.Get(ctx, key, storage.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(o.Data), `"value":"128"`) {
			t.Errorf("counter after 128 increments: %s", o.Data)
		}
		if o.ResourceVersion != base+128 {
			t.Errorf("counter at revision %d, want %d: a conflict used up a revision", o.ResourceVersion, base+128)
		}
	})

	t.Run("one_write_at_fault_fails_alone", func(t *testing.T) {
		// A write the transformer refuses (before any statement) and a
		// key PostgreSQL refuses (its index entry is too large: the
		// transaction fails) queued with good writes: only they fail.
		long := make([]byte, 9000)
		for i := range long {
			long[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rand.IntN(36)]
		}
		keys := []string{"/widgets/ns/refused", "/widgets/ns/" + string(long)}
		for i := range 16 {
			keys = append(keys, fmt.Sprintf("/widgets/ns/good-%d", i))
		}
		base, err := s.CurrentRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		release, waitForWriter := holdRevision(t, pool, table)
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i, k := range keys {
			wg.Go(func() {
				_, errs[i] = s.Create(ctx, k, widgetJSON("w", "v"))
			})
		}
		waitForWriter()
		release()
		wg.Wait()
		var se *storage.Error
		if !errors.As(errs[0], &se) || !errors.Is(errs[0], storage.ErrInvalidObject) || !strings.Contains(errs[0].Error(), "refused by the test transformer") {
			t.Errorf("refused write: %v, want ErrInvalidObject with the transformer's error", errs[0])
		}
		if errs[1] == nil || !strings.Contains(errs[1].Error(), "index row") {
			t.Errorf("write of a key too long to index: %v, want PostgreSQL's error", errs[1])
		}
		for i, err := range errs[2:] {
			if err != nil {
				t.Errorf("good write %s: %v", keys[i+2], err)
			}
		}
		cur, err := s.CurrentRevision(ctx)
		if err != nil || cur != base+16 {
			t.Errorf("current revision %d (%v), want %d (16 good writes, no revision for the others)", cur, err, base+16)
		}
		for _, k := range keys[:2] {
			if _, err := s.Get(ctx, k, storage.GetOptions{}); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("get %.40s…: %v, want ErrNotFound", k, err)
			}
		}
	})

	t.Run("delete_and_create_of_one_key_in_a_group", func(t *testing.T) {
		const key = "/widgets/ns/again"
		o, err := s.Create(ctx, key, widgetJSON("again", "1"))
		if err != nil {
			t.Fatal(err)
		}
		release, waitForWriter := holdRevision(t, pool, table)
		var wg sync.WaitGroup
		var delErr error
		var created []storage.Object
		var mu sync.Mutex
		wg.Go(func() {
			_, delErr = s.Delete(ctx, key, storage.DeleteOptions{Preconditions: storage.Preconditions{ResourceVersion: o.Meta.ResourceVersion}})
		})
		for range 4 {
			wg.Go(func() {
				c, err := s.Create(ctx, key, widgetJSON("again", "2"))
				if err == nil {
					mu.Lock()
					created = append(created, c)
					mu.Unlock()
				} else if !errors.Is(err, storage.ErrAlreadyExists) {
					t.Errorf("create: %v, want success or ErrAlreadyExists", err)
				}
			})
		}
		waitForWriter()
		release()
		wg.Wait()
		if delErr != nil {
			t.Fatalf("delete: %v", delErr)
		}
		// Whatever the order, at most one create after the delete wins,
		// and the key is as the last write left it.
		if len(created) > 1 {
			t.Fatalf("%d creates of one key succeeded", len(created))
		}
		g, err := s.Get(ctx, key, storage.GetOptions{})
		switch {
		case len(created) == 1 && (err != nil || g.ResourceVersion != created[0].ResourceVersion):
			t.Errorf("get after delete and create: %v %d, want revision %d", err, g.ResourceVersion, created[0].ResourceVersion)
		case len(created) == 0 && !errors.Is(err, storage.ErrNotFound):
			t.Errorf("get after delete: %v, want ErrNotFound", err)
		}
	})
}

// TestPostgresCounts checks the counts the store keeps per prefix: exact
// after creates and deletes, still exact (counted from the keys) after a
// write that did not keep them (an older annex), and rebuilt when a store
// opens the tables again.
func TestPostgresCounts(t *testing.T) {
	_, pool := pgPool(t)
	ctx := context.Background()
	const table = "counted"
	open := func() *postgres.Store {
		s, err := postgres.New(ctx, pool, postgres.Options{Table: table, CompactionInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := open()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			ns := []string{"a", "b"}[i%2]
			if _, err := s.Create(ctx, fmt.Sprintf("/widgets/%s/w%02d", ns, i), widgetJSON(fmt.Sprintf("w%02d", i), "v")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range 10 { // five of a, five of b
		if _, err := s.Delete(ctx, fmt.Sprintf("/widgets/%s/w%02d", []string{"a", "b"}[i%2], i), storage.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A key right under the prefix counts in it, not in a namespace.
	if _, err := s.Create(ctx, "/widgets/top", widgetJSON("top", "v")); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want map[string]int64) {
		t.Helper()
		for prefix, n := range want {
			got, err := s.Count(ctx, prefix)
			if err != nil || got != n {
				t.Errorf("%s: Count(%s) = %d, %v; want %d", when, prefix, got, err, n)
			}
			// A client's count: the first page's remainingItemCount.
			res, err := s.List(ctx, prefix, storage.ListOptions{Limit: 1})
			if err != nil || res.RemainingItemCount == nil || *res.RemainingItemCount != n-1 {
				rem := "none"
				if res.RemainingItemCount != nil {
					rem = strconv.FormatInt(*res.RemainingItemCount, 10)
				}
				t.Errorf("%s: first page of %s: remaining %s, %v; want %d", when, prefix, rem, err, n-1)
			}
		}
	}
	fresh := func() bool {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT revision = counted FROM counted_revision`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	check("after the writes", map[string]int64{"/widgets/a": 15, "/widgets/b": 15, "/widgets": 31})
	if !fresh() {
		t.Error("the counts are behind after the store's own writes")
	}

	// A write as an annex before the counts makes it.
	_, err := pool.Exec(ctx, `WITH r AS (UPDATE counted_revision SET revision = revision + 1 RETURNING revision),
		k AS (INSERT INTO counted_kv (key, revision) SELECT '/widgets/a/older', revision FROM r)
		INSERT INTO counted_log (revision, key, prev_revision, deleted, value)
		SELECT revision, '/widgets/a/older', 0, false, convert_to('{"apiVersion":"storagetest.annex.dev/v1","kind":"Widget","metadata":{"name":"older","namespace":"a","resourceVersion":"' || revision || '"},"spec":{"value":"v"}}', 'UTF8') FROM r`)
	if err != nil {
		t.Fatal(err)
	}
	if fresh() {
		t.Fatal("the counts claim to be right after a write that did not keep them")
	}
	check("after an older writer", map[string]int64{"/widgets/a": 16, "/widgets/b": 15, "/widgets": 32})
	if _, err := s.Create(ctx, "/widgets/b/newer", widgetJSON("newer", "v")); err != nil {
		t.Fatal(err)
	}
	check("after an older writer, then a write", map[string]int64{"/widgets/a": 16, "/widgets/b": 16, "/widgets": 33})

	s = open() // rebuilds them
	if !fresh() {
		t.Error("the counts are still behind after a store opened the tables")
	}
	check("after the rebuild", map[string]int64{"/widgets/a": 16, "/widgets/b": 16, "/widgets": 33})
	var rows int64
	if err := pool.QueryRow(ctx, `SELECT n FROM counted_counts WHERE prefix = '/widgets/a/'`).Scan(&rows); err != nil || rows != 16 {
		t.Errorf("counted_counts for /widgets/a/: %d, %v; want 16", rows, err)
	}
}

// TestPostgresOpenWhileWriting opens stores on tables other writers are
// writing: a replica that restarts under load (its schema is there), and
// one that upgrades tables an older annex keeps writing (no counts). Each
// open must succeed (a schema transaction that locked the tables in
// another order than the writers deadlocked with them), and the counts
// stay exact.
func TestPostgresOpenWhileWriting(t *testing.T) {
	_, pool := pgPool(t)
	ctx := context.Background()
	const table = "reopened"
	open := func() *postgres.Store {
		t.Helper()
		s, err := postgres.New(ctx, pool, postgres.Options{Table: table, CompactionInterval: -1})
		if err != nil {
			t.Fatalf("open while others write: %v", err)
		}
		return s
	}
	// write runs writers with f until stop is closed.
	write := func(stop <-chan struct{}, f func(w, i int) error) *sync.WaitGroup {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := f(w, i); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			})
		}
		return &wg
	}

	t.Run("restart_under_load", func(t *testing.T) {
		s := open()
		defer s.Close()
		stop := make(chan struct{})
		wg := write(stop, func(w, i int) error {
			_, err := s.Create(ctx, fmt.Sprintf("/widgets/ns/r%d-%d", w, i), widgetJSON("r", "v"))
			return err
		})
		for range 5 {
			open().Close()
		}
		close(stop)
		wg.Wait()
	})

	t.Run("upgrade_under_an_older_writer", func(t *testing.T) {
		// The tables as an annex before the counts left them.
		for _, q := range []string{`DROP TABLE reopened_counts`, `ALTER TABLE reopened_revision DROP COLUMN counted`} {
			if _, err := pool.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		stop := make(chan struct{})
		wg := write(stop, func(w, i int) error {
			// An older annex's create: the revision row first.
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var rev int64
				if err := tx.QueryRow(ctx, `UPDATE reopened_revision SET revision = revision + 1 RETURNING revision`).Scan(&rev); err != nil {
					return err
				}
				key := fmt.Sprintf("/widgets/ns/o%d-%d", w, i)
				if _, err := tx.Exec(ctx, `INSERT INTO reopened_kv (key, revision) VALUES ($1, $2)`, key, rev); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO reopened_log (revision, key, prev_revision, deleted, value) VALUES ($1, $2, 0, false, $3)`,
					rev, key, []byte(`{"apiVersion":"storagetest.annex.dev/v1","kind":"Widget","metadata":{"name":"o","namespace":"ns","resourceVersion":"`+
						strconv.FormatInt(rev, 10)+`"},"spec":{"value":"v"}}`))
				return err
			})
		})
		stores := []*postgres.Store{open(), open()}
		close(stop)
		wg.Wait()
		var want int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM reopened_kv`).Scan(&want); err != nil {
			t.Fatal(err)
		}
		for _, s := range stores {
			if got, err := s.Count(ctx, "/widgets/ns"); err != nil || got != want {
				t.Errorf("Count after an older writer: %d, %v; want %d", got, err, want)
			}
			s.Close()
		}
		s := open() // recounts
		defer s.Close()
		if got, err := s.Count(ctx, "/widgets/ns"); err != nil || got != want {
			t.Errorf("Count after the recount: %d, %v; want %d", got, err, want)
		}
	})
}
