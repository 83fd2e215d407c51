// This file holds the postgres command: annex's native PostgreSQL backend
// beside annex's etcd backend on kine, on one PostgreSQL server.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/e2e/internal/load"
)

// pgBackend is one way of keeping the example's objects in PostgreSQL.
type pgBackend struct {
	name string
	db   string // the prefix of its databases' names
	// start runs one server (with what it needs) on the database at dsn,
	// its files in dir; called again on the same dsn with another dir, it
	// starts a second replica.
	start func(ctx context.Context, dsn, dir string, flags ...string) (load.Target, func(), error)
	// preload adds objects big-0 … big-<n-1>, copies of the object tmpl,
	// to the database's tables directly (the servers stopped).
	preload func(ctx context.Context, dsn string, n int) error
}

// postgresCmd runs `annexload postgres`: one PostgreSQL (fsync on) with a
// database per server; annex with --storage-backend=postgres, and annex with
// --etcd-servers pointed at kine (built from the Go module proxy at
// binaries.KineVersion) on that PostgreSQL; the same scenarios on each,
// alternating who goes first, --passes times; each cell is the median pass.
// Each pass also starts a second replica on the same database (a second
// kine for kine) and measures the delivery of the first one's writes to
// the second one's watchers. Then, for each of --rows, a database holding
// that many objects (loaded by SQL in each backend's own tables) is
// measured with the watch cache off: GET, a page, a count.
func postgresCmd(args []string) error {
	fs := flag.NewFlagSet("postgres", flag.ContinueOnError)
	short := fs.Bool("short", false, "a few seconds per scenario")
	passes := fs.Int("passes", 1, "runs of the scenarios on each server")
	objects := fs.Int("objects", 0, "objects created and updated (0: the size's, 10,000 or 300 short)")
	watchers := fs.Int("watchers", 0, "watchers of the fan-out scenarios (0: the size's, 1,000 or 50 short)")
	rowsFlag := fs.String("rows", "", "comma-separated sizes of the large-collection phase (10000,1000000); empty skips it")
	watchOnly := fs.Bool("watch-only", false, "only the one-process watch fan-out, on each backend and on bbolt as the reference")
	profile := fs.String("profile", "", "with --watch-only: write each server's CPU profile over each watch scenario into this directory")
	across := fs.Bool("across", false, "with --watch-only: the watchers on a second replica of each backend, the writes on the first (where kine polls)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*watchOnly && (*across || *profile != "") {
		return errors.New("--across and --profile apply only with --watch-only")
	}
	var rows []int
	for _, f := range strings.Split(*rowsFlag, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1000 {
			return fmt.Errorf("--rows: %q is not a size of at least 1000", f)
		}
		rows = append(rows, n)
	}
	sizes := load.Full()
	lostWatchers, perWriter := 20, 100
	if *short {
		sizes = load.Short()
		lostWatchers, perWriter = 5, 10
	}
	if *objects > 0 {
		sizes.Objects, sizes.Updates = *objects, *objects
	}
	if *watchers > 0 {
		sizes.Watchers = *watchers
	}
	ctx := context.Background()
	pg, err := binaries.StartPostgresProcess(binaries.PostgresOptions{Fsync: true})
	if err != nil {
		return err
	}
	defer pg.Remove()
	kine, err := binaries.Build(ctx, binaries.KineModule())
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "annexload-postgres-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	backends := []pgBackend{
		{name: "annex on postgres", db: "native", preload: preloadNative,
			start: func(ctx context.Context, dsn, dir string, flags ...string) (load.Target, func(), error) {
				return load.StartAnnexWith(ctx, dir, append([]string{"--storage-backend", "postgres", "--postgres-dsn", dsn}, flags...)...)
			}},
		{name: "annex on kine " + binaries.KineVersion + " on postgres", db: "kine", preload: preloadKine,
			start: func(ctx context.Context, dsn, dir string, flags ...string) (load.Target, func(), error) {
				k, err := binaries.StartKineProcess(kine, dsn, filepath.Join(dir, "kine.log"))
				if err != nil {
					return load.Target{}, nil, err
				}
				t, stop, err := load.StartAnnexWith(ctx, dir, append([]string{"--etcd-servers", k.ClientURL}, flags...)...)
				if err != nil {
					_ = k.Stop()
					return load.Target{}, nil, err
				}
				t.PIDs = append(t.PIDs, k.PID())
				return t, func() { stop(); _ = k.Stop() }, nil
			}},
	}
	if *watchOnly {
		if *across { // bbolt has no second replica
			return watchOnlyPasses(ctx, pg, backends, dir, sizes, *passes, *profile, true)
		}
		return watchOnlyPasses(ctx, pg, append(backends, bboltReference), dir, sizes, *passes, *profile, false)
	}
	mkdir := func(parts ...string) (string, error) {
		d := filepath.Join(append([]string{dir}, parts...)...)
		return d, os.MkdirAll(d, 0o755)
	}
	// pass runs the scenarios on one backend: one replica, then a second
	// on the same database.
	pass := func(b pgBackend, n int) ([]load.Result, error) {
		dsn, err := pg.CreateDatabase(fmt.Sprintf("%s%d", b.db, n))
		if err != nil {
			return nil, err
		}
		d1, err := mkdir(fmt.Sprintf("%s-%d", b.db, n), "a")
		if err != nil {
			return nil, err
		}
		t, stop, err := b.start(ctx, dsn, d1)
		if err != nil {
			return nil, err
		}
		defer stop()
		rs := []load.Result{
			t.Create("obj", sizes.Objects, sizes.Clients),
			t.Update("obj", sizes.Objects, sizes.Updates, sizes.Clients),
			t.List("limit=500", sizes.Lists, 1),
			t.Watch(ctx, sizes.Watchers, sizes.WriteRate, sizes.WatchFor),
			t.WatchWriters(ctx, lostWatchers, 32, perWriter),
		}
		d2, err := mkdir(fmt.Sprintf("%s-%d", b.db, n), "b")
		if err != nil {
			return nil, err
		}
		t2, stop2, err := b.start(ctx, dsn, d2)
		if err != nil {
			return nil, fmt.Errorf("second replica: %w", err)
		}
		defer stop2()
		return append(rs,
			t2.WatchAcross(ctx, t, sizes.Watchers, sizes.WriteRate, sizes.WatchFor),
			t2.WatchWritersAcross(ctx, t, lostWatchers, 32, perWriter),
		), nil
	}
	results := make([][][]load.Result, len(backends)) // backend, pass, scenario
	for n := range *passes {
		for k := range backends {
			i := (k + n) % len(backends)
			rs, err := pass(backends[i], n)
			if err != nil {
				return fmt.Errorf("%s: %w", backends[i].name, err)
			}
			results[i] = append(results[i], rs)
			fmt.Fprintf(os.Stderr, "pass %d: %s done\n", n+1, backends[i].name)
		}
	}
	names := make([]string, len(backends))
	medians := make([][]load.Result, len(backends))
	for i, b := range backends {
		names[i], medians[i] = b.name, load.Median(results[i])
	}
	for _, n := range rows {
		for i, b := range backends {
			rs, err := rowsPhase(ctx, pg, b, dir, n, func(s string) { fmt.Fprintf(os.Stderr, "%s, %d rows: %s\n", b.name, n, s) })
			if err != nil {
				return fmt.Errorf("%s, %d rows: %w", b.name, n, err)
			}
			medians[i] = append(medians[i], rs...)
		}
	}
	load.Table(os.Stdout, names, medians)
	load.Spread(os.Stdout, names, results)
	for _, r := range medians[0] {
		if r.Lost > 0 {
			return fmt.Errorf("annex on postgres: %s: %d events lost", r.Scenario, r.Lost)
		}
	}
	return nil
}

// rowsPhase measures b with a collection of n objects: a server creates the
// object tmpl and stops; preload copies it n-1 times by SQL; the server starts with its watch cache (the time to
// ready is its first list of the collection from the database), then
// without it, and GETs, pages, counts and a walk through the pages are
// timed, one request at a time.
func rowsPhase(ctx context.Context, pg *binaries.PostgresServer, b pgBackend, dir string, n int, log func(string)) ([]load.Result, error) {
	db := fmt.Sprintf("%s_rows%d", b.db, n)
	dsn, err := pg.CreateDatabase(db)
	if err != nil {
		return nil, err
	}
	defer func() { _ = pg.SQL("postgres", `DROP DATABASE "`+db+`"`) }()
	d := filepath.Join(dir, db)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	t, stop, err := b.start(ctx, dsn, d)
	if err != nil {
		return nil, err
	}
	err = t.CreateOne("tmpl")
	stop()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := b.preload(ctx, dsn, n-1); err != nil {
		return nil, fmt.Errorf("preload: %w", err)
	}
	log(fmt.Sprintf("preloaded by SQL in %v", time.Since(start).Round(time.Second)))

	t, stop, err = b.start(ctx, dsn, d)
	if err != nil {
		return nil, err
	}
	ready, err := t.WaitReadyz(10 * time.Minute)
	stop()
	if err != nil {
		return nil, fmt.Errorf("with the watch cache: %w", err)
	}
	log(fmt.Sprintf("ready with the watch cache in %v", ready.Round(time.Millisecond)))
	out := []load.Result{{Scenario: fmt.Sprintf("start → ready at %d rows, watch cache on (ms)", n), Ops: int(ready.Milliseconds())}}

	t, stop, err = b.start(ctx, dsn, d, "--watch-cache=false")
	if err != nil {
		return nil, err
	}
	defer stop()
	out = append(out,
		t.GetLatency(n, "big", n-1, 300),
		t.FirstPageLatency(n, 10),
		t.CountLatency(n, 10),
		// A whole walk of a million objects takes kine hours (each page
		// counts what follows it): the first pages, within a budget.
		t.WalkLatency(n, 100, 90*time.Second),
	)
	return out, nil
}

// bboltReference is annex on its embedded bbolt store: the same server and
// watch cache without PostgreSQL, the reference for what the watch cache's
// fan-out costs by itself.
var bboltReference = pgBackend{name: "annex on bbolt (reference)", db: "bbolt",
	start: func(ctx context.Context, dsn, dir string, flags ...string) (load.Target, func(), error) {
		return load.StartAnnexWith(ctx, dir, flags...)
	}}

// watchOnlyPasses runs `annexload postgres --watch-only`: the one-process
// watch fan-out scenario on each backend (a fresh database or data
// directory each time), or with across the watchers on a second replica
// of the first's database, in rotating order, passes times; then the median
// table, each pass, and the p99 ratios of each pass (within one pass the
// backends ran back to back on the same machine). With profileDir, each
// server's CPU profile over its watch scenario is written there.
func watchOnlyPasses(ctx context.Context, pg *binaries.PostgresServer, backends []pgBackend, dir string, sizes load.Sizes, passes int, profileDir string, across bool) error {
	if profileDir != "" {
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			return err
		}
	}
	results := make([][][]load.Result, len(backends)) // backend, pass, scenario
	for n := range passes {
		for k := range backends {
			i := (k + n) % len(backends)
			b := backends[i]
			dsn, err := pg.CreateDatabase(fmt.Sprintf("%s%d", b.db, n))
			if err != nil {
				return err
			}
			d := filepath.Join(dir, fmt.Sprintf("%s-%d", b.db, n))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			t, stop, err := b.start(ctx, dsn, d)
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			watched, stopWatched := t, func() {}
			if across {
				d2 := filepath.Join(d, "b")
				if err := os.MkdirAll(d2, 0o755); err != nil {
					stop()
					return err
				}
				if watched, stopWatched, err = b.start(ctx, dsn, d2); err != nil {
					stop()
					return fmt.Errorf("%s, second replica: %w", b.name, err)
				}
			}
			profiled := make(chan error, 1)
			if profileDir != "" {
				path := filepath.Join(profileDir, fmt.Sprintf("%s-pass%d.pprof", b.db, n+1))
				go func() { profiled <- watched.Profile(ctx, sizes.WatchFor, path) }()
			} else {
				profiled <- nil
			}
			var r load.Result
			if across {
				r = watched.WatchAcross(ctx, t, sizes.Watchers, sizes.WriteRate, sizes.WatchFor)
			} else {
				r = t.Watch(ctx, sizes.Watchers, sizes.WriteRate, sizes.WatchFor)
			}
			err = <-profiled
			stopWatched()
			stop()
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			results[i] = append(results[i], []load.Result{r})
			fmt.Fprintf(os.Stderr, "pass %d: %s: from the ack p50 %v p99 %v (%d of %d events before their ack); from the send p50 %v p99 %v; lost %d; watches ended by the server %d\n", n+1, b.name,
				r.Quantile(0.5).Round(10*time.Microsecond), r.Quantile(0.99).Round(10*time.Microsecond), r.Early, len(r.Latencies),
				fromSend(r, 0.5).Round(10*time.Microsecond), fromSend(r, 0.99).Round(10*time.Microsecond), r.Lost, r.Ended)
		}
	}
	names := make([]string, len(backends))
	medians := make([][]load.Result, len(backends))
	for i, b := range backends {
		names[i], medians[i] = b.name, load.Median(results[i])
	}
	load.Table(os.Stdout, names, medians)
	load.Spread(os.Stdout, names, results)
	for _, m := range []struct {
		label string
		of    func(load.Result) time.Duration
	}{
		{"p99 from the ack", func(r load.Result) time.Duration { return r.Quantile(0.99) }},
		{"p99 from the send", func(r load.Result) time.Duration { return fromSend(r, 0.99) }},
		{"p50 from the send", func(r load.Result) time.Duration { return fromSend(r, 0.5) }},
	} {
		fmt.Printf("%s, ratios of each pass:\n", m.label)
		for i := range backends {
			for j := i + 1; j < len(backends); j++ {
				cells := make([]string, passes)
				for n := range passes {
					a, b := m.of(results[i][n][0]), m.of(results[j][n][0])
					cells[n] = "—"
					if b > 0 {
						cells[n] = fmt.Sprintf("%.2f", float64(a)/float64(b))
					}
				}
				fmt.Printf("  %s ÷ %s: %s\n", backends[i].name, backends[j].name, strings.Join(cells, " | "))
			}
		}
	}
	return nil
}

// fromSend is the q quantile of r's watch latencies counted from the send.
func fromSend(r load.Result, q float64) time.Duration {
	if len(r.FromSend) == 0 {
		return 0
	}
	return r.FromSend[min(len(r.FromSend)-1, int(q*float64(len(r.FromSend))))]
}
