// This file holds the postgres command: annex's native PostgreSQL backend
// beside annex's etcd backend on kine, on one PostgreSQL server.

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/e2e/internal/load"
)

// postgresCmd runs `annexload postgres`: one PostgreSQL (fsync on) with a
// database per server; annex with --storage-backend=postgres, and annex with
// --etcd-servers pointed at kine (built from the Go module proxy at
// binaries.KineVersion) on that PostgreSQL; the same scenarios on each,
// alternating who goes first, --passes times; each cell is the median pass.
func postgresCmd(args []string) error {
	fs := flag.NewFlagSet("postgres", flag.ContinueOnError)
	short := fs.Bool("short", false, "a few seconds per scenario")
	passes := fs.Int("passes", 1, "runs of the scenarios on each server")
	objects := fs.Int("objects", 0, "objects created and updated (0: the size's, 10,000 or 300 short)")
	watchers := fs.Int("watchers", 0, "watchers of the fan-out scenario (0: the size's, 1,000 or 50 short)")
	if err := fs.Parse(args); err != nil {
		return err
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
	scenarios := func(t load.Target) []load.Result {
		return []load.Result{
			t.Create("obj", sizes.Objects, sizes.Clients),
			t.Update("obj", sizes.Objects, sizes.Updates, sizes.Clients),
			t.List("limit=500", sizes.Lists, 1),
			t.Watch(ctx, sizes.Watchers, sizes.WriteRate, sizes.WatchFor),
			t.WatchWriters(ctx, lostWatchers, 32, perWriter),
		}
	}
	type server struct {
		name  string
		start func(pass int) (load.Target, func(), error)
	}
	servers := []server{
		{"annex on postgres", func(pass int) (load.Target, func(), error) {
			dsn, err := pg.CreateDatabase(fmt.Sprintf("native%d", pass))
			if err != nil {
				return load.Target{}, nil, err
			}
			return load.StartAnnexWith(ctx, filepath.Join(dir, fmt.Sprintf("native-%d", pass)), "--storage-backend", "postgres", "--postgres-dsn", dsn)
		}},
		{"annex on kine " + binaries.KineVersion + " on postgres", func(pass int) (load.Target, func(), error) {
			dsn, err := pg.CreateDatabase(fmt.Sprintf("kine%d", pass))
			if err != nil {
				return load.Target{}, nil, err
			}
			d := filepath.Join(dir, fmt.Sprintf("kine-%d", pass))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return load.Target{}, nil, err
			}
			k, err := binaries.StartKineProcess(kine, dsn, filepath.Join(d, "kine.log"))
			if err != nil {
				return load.Target{}, nil, err
			}
			t, stop, err := load.StartAnnexWith(ctx, d, "--etcd-servers", k.ClientURL)
			if err != nil {
				_ = k.Stop()
				return load.Target{}, nil, err
			}
			t.PIDs = append(t.PIDs, k.PID())
			return t, func() { stop(); _ = k.Stop() }, nil
		}},
	}
	results := make([][][]load.Result, len(servers)) // server, pass, scenario
	for pass := range *passes {
		for k := range servers {
			i := (k + pass) % len(servers)
			if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("native-%d", pass)), 0o755); err != nil {
				return err
			}
			t, stop, err := servers[i].start(pass)
			if err != nil {
				return fmt.Errorf("%s: %w", servers[i].name, err)
			}
			rs := scenarios(t)
			stop()
			results[i] = append(results[i], rs)
			fmt.Fprintf(os.Stderr, "pass %d: %s done\n", pass+1, servers[i].name)
		}
	}
	names := make([]string, len(servers))
	medians := make([][]load.Result, len(servers))
	for i, s := range servers {
		names[i], medians[i] = s.name, load.Median(results[i])
	}
	load.Table(os.Stdout, names, medians)
	for _, r := range medians[0] {
		if r.Lost > 0 {
			return fmt.Errorf("annex on postgres: %s: %d events lost", r.Scenario, r.Lost)
		}
	}
	return nil
}
