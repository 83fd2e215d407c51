// Command annexload drives a server the way real clients do (package
// internal/load) and prints a markdown table: creates, reads, lists,
// updates, conflicts, watch fan-out latency, and the footprint.
//
//	go run ./cmd/annexload run --short   # annex alone, a few seconds per scenario (CI)
//	go run ./cmd/annexload run           # annex alone, issue 18's sizes
//	go run ./cmd/annexload run --watchers 10000 --write-rate 20   # the same with 10,000 watchers at 20 creates/s
//	go run ./cmd/annexload compare       # annex beside the floor of its stack and k8s.io/sample-apiserver
//	go run ./cmd/annexload scale         # annex filled to 10k then 100k objects, bbolt and etcd
//	go run ./cmd/annexload audit         # create and GET throughput with and without an audit log
//	go run ./cmd/annexload postgres      # annex on PostgreSQL beside annex on kine on the same PostgreSQL
//	go run ./cmd/annexload flood         # priority and fairness under a flood that costs the server much
//	go run ./cmd/annexload tracewait F   # where the bystander's GETs waited, from flood --profile DIR --trace
//
// compare builds k8s.io/sample-apiserver, etcd and kube-apiserver from the
// Go module proxy (cached), and runs the suite on fresh servers of each and
// on the floor (load.StartFloor: net/http serving the same bytes from a
// map) in rotating order, --passes times (3 by default); each cell is the
// median pass, CPU per operation first, and the last columns the ratios
// annex ÷ floor and sample-apiserver ÷ annex; with more than one pass, each
// pass's table follows.
//
// compare --profile DIR profiles annex instead: on a fresh server it drives
// creates, GETs, full LISTs and GET+PUT updates with the suite's clients,
// each for --profile-for, and writes the server's CPU profile over each into
// DIR (create.pprof, get.pprof, list.pprof, update.pprof), with the server's
// CPU per operation over the same time on stderr.
//
// flood-a and floor-server are the processes flood and compare start (this
// executable again).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/e2e/internal/load"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "annexload:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: annexload run [--short] [--watchers N] [--write-rate R] [--watch-only] [--watch-for D] [--profile DIR] [--bin PATH] | compare [--short] [--passes N] [--profile DIR [--profile-for D]] | scale [--objects N,M] | audit [--short] [--passes N] | postgres [--short] [--passes N] [--objects N] [--watchers N] | flood [--short] [--objects N] [--seats N,M] [--in-flight N] [--rows N,M] [--profile DIR [--trace]] [--flooder-procs N] | tracewait FILE")
	}
	switch args[0] {
	case "run":
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		short := fs.Bool("short", false, "a few seconds per scenario")
		watchers := fs.Int("watchers", 0, "watchers of the fan-out scenarios (0: the size's, 1,000 or 50 short)")
		writeRate := fs.Float64("write-rate", 0, "creates per second while the watchers watch (0: the size's, 100 or 50 short)")
		watchOnly := fs.Bool("watch-only", false, "only the watch scenarios, on an empty collection, with CPU per delivery and peak RSS")
		profile := fs.String("profile", "", "with --watch-only: write the server's CPU profile over each watch scenario's writes, its heap at the end of each, and this tool's own CPU profile (loadtool.pprof) into this directory")
		bin := fs.String("bin", "", "run this build of the environments example instead of building it from this module's replace")
		watchFor := fs.Duration("watch-for", 0, "how long the writes of each watch scenario last (0: the size's)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *profile != "" && !*watchOnly {
			return errors.New("--profile applies only with --watch-only")
		}
		if *profile != "" {
			if err := os.MkdirAll(*profile, 0o755); err != nil {
				return err
			}
			// The tool shares the server's cores: what it spends is
			// what the server cannot.
			f, err := os.Create(filepath.Join(*profile, "loadtool.pprof"))
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		sizes := load.Full()
		if *short {
			sizes = load.Short()
		}
		if *watchers > 0 {
			sizes.Watchers = *watchers
		}
		if *writeRate > 0 {
			sizes.WriteRate = *writeRate
		}
		if *watchFor > 0 {
			sizes.WatchFor = *watchFor
		}
		dir, err := os.MkdirTemp("", "annexload-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		ctx := context.Background()
		start := load.StartAnnex
		if *bin != "" {
			start = func(ctx context.Context, dir string) (load.Target, func(), error) {
				return load.StartAnnexBin(ctx, dir, *bin)
			}
		}
		t, stop, err := start(ctx, dir)
		if err != nil {
			return err
		}
		var results []load.Result
		if *watchOnly {
			results = t.WatchSuite(ctx, sizes, *profile)
		} else {
			results = t.Suite(ctx, sizes)
		}
		stop()
		load.Table(os.Stdout, []string{t.Name}, [][]load.Result{results})
		for _, r := range results {
			if r.Errors > 0 || r.Lost > 0 {
				return fmt.Errorf("%s: %d errors, %d events lost", r.Scenario, r.Errors, r.Lost)
			}
		}
		return nil
	case "compare":
		fs := flag.NewFlagSet("compare", flag.ContinueOnError)
		short := fs.Bool("short", false, "a few seconds per scenario")
		passes := fs.Int("passes", 3, "runs of the suite on each server")
		profile := fs.String("profile", "", "instead of comparing: write annex's CPU profile of creates, GETs, full LISTs and GET+PUT updates (each driven for --profile-for) into this directory")
		profileFor := fs.Duration("profile-for", 15*time.Second, "with --profile: how long each operation is driven and profiled")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		sizes := load.Full()
		if *short {
			sizes = load.Short()
		}
		if *profile != "" {
			return profileAnnex(sizes, *profile, *profileFor)
		}
		return compare(sizes, *passes)
	case "audit":
		fs := flag.NewFlagSet("audit", flag.ContinueOnError)
		short := fs.Bool("short", false, "a few seconds per scenario")
		passes := fs.Int("passes", 3, "runs of each configuration")
		only := fs.String("configs", "", "the configurations to run, comma-separated, after none (no audit): blocking, batch, batch400, request-response; empty means all")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		sizes := load.Full()
		if *short {
			sizes = load.Short()
		}
		configs := load.AuditConfigs()
		if *only != "" {
			keep := configs[:1] // no audit: the ratios' base
			for _, k := range strings.Split(*only, ",") {
				i := slices.IndexFunc(configs, func(c load.AuditConfig) bool { return c.Key == k })
				if i <= 0 {
					return fmt.Errorf("--configs: no configuration %q", k)
				}
				keep = append(keep, configs[i])
			}
			configs = keep
		}
		dir, err := os.MkdirTemp("", "annexload-audit-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		runs, err := load.AuditOverhead(context.Background(), dir, configs, sizes, *passes)
		if err != nil {
			return err
		}
		load.AuditTable(os.Stdout, configs, runs)
		return nil
	case "postgres":
		return postgresCmd(args[1:])
	case "flood":
		return floodCmd(args[1:])
	case "tracewait":
		return tracewaitCmd(args[1:])
	case "floor-server": // the floor process of the compare command
		fs := flag.NewFlagSet("floor-server", flag.ContinueOnError)
		dir := fs.String("dir", "", "the directory with ca.crt, serving.crt and serving.key")
		port := fs.Int("port", 0, "the port to serve on 127.0.0.1")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return load.RunFloor(*dir, *port)
	case "flood-a": // the flooder process of the flood command
		fs := flag.NewFlagSet("flood-a", flag.ContinueOnError)
		kubeconfig := fs.String("kubeconfig", "", "the server's kubeconfig (its serving CA)")
		url := fs.String("url", "", "the LIST to send")
		inFlight := fs.Int("in-flight", 1, "requests in flight")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return load.RunFlooder(*kubeconfig, *url, *inFlight, os.Stdin, os.Stdout)
	case "scale":
		fs := flag.NewFlagSet("scale", flag.ContinueOnError)
		objects := fs.String("objects", "10000,100000", "the sizes to fill to, in order")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var sizes []int
		for _, f := range strings.Split(*objects, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("--objects: %w", err)
			}
			sizes = append(sizes, n)
		}
		return scale(sizes)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// compare runs the suite on fresh annex, floor and sample-apiserver servers,
// alternating which goes first, and prints the median pass of each.
func compare(sizes load.Sizes, passes int) error {
	dir, err := os.MkdirTemp("", "annexload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	starts := []func(ctx context.Context, dir string) (load.Target, func(), error){load.StartAnnex, load.StartFloor, load.StartReference}
	results := make([][][]load.Result, len(starts)) // target, pass, scenario
	for pass := range passes {
		for k := range starts {
			i := (k + pass) % len(starts) // alternate who goes first
			d := filepath.Join(dir, fmt.Sprintf("%d-%d", i, pass))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			t, stop, err := starts[i](ctx, d)
			if err != nil {
				return fmt.Errorf("pass %d: %w", pass+1, err)
			}
			fmt.Fprintf(os.Stderr, "pass %d: %s\n", pass+1, t.Name)
			results[i] = append(results[i], t.Suite(ctx, sizes))
			stop()
		}
	}
	names := []string{"annex", "floor", "sample-apiserver"}
	load.CompareTable(os.Stdout, names, [][]load.Result{load.Median(results[0]), load.Median(results[1]), load.Median(results[2])})
	if passes > 1 { // each pass too, so that the spread behind the medians shows
		for pass := range passes {
			fmt.Printf("\npass %d:\n\n", pass+1)
			load.CompareTable(os.Stdout, names, [][]load.Result{results[0][pass], results[1][pass], results[2][pass]})
		}
	}
	return nil
}

// profileAnnex drives each operation on a fresh annex for d while the
// server profiles itself, and writes the profiles into outDir.
func profileAnnex(sizes load.Sizes, outDir string, d time.Duration) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "annexload-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	t, stop, err := load.StartAnnex(ctx, dir)
	if err != nil {
		return err
	}
	defer stop()
	created := 0
	ops := []struct {
		name  string
		round func(k int) load.Result
	}{
		{"create", func(k int) load.Result {
			r := t.Create(fmt.Sprintf("p%d", k), 1000, sizes.Clients)
			created += 1000
			return r
		}},
		{"get", func(int) load.Result { return t.Get("p0", 1000, 5000, sizes.Clients) }},
		{"list", func(int) load.Result { return t.List("", 5, 1) }},
		// Each round updates another thousand of the objects the creates
		// made, each once: a second round on the same objects would set
		// the same label value again, a no-op update that writes nothing.
		{"update", func(k int) load.Result {
			return t.Update(fmt.Sprintf("p%d", k%max(created/1000, 1)), 1000, 1000, sizes.Clients)
		}},
	}
	for _, op := range ops {
		profiled := make(chan error, 1)
		path := filepath.Join(outDir, op.name+".pprof")
		go func() { profiled <- t.Profile(ctx, d, path) }()
		var total load.Result
		deadline := time.Now().Add(d)
		for k := 0; time.Now().Before(deadline); k++ {
			r := op.round(k)
			total.Ops += r.Ops
			total.Errors += r.Errors
			total.CPU += r.CPU
		}
		if err := <-profiled; err != nil {
			return fmt.Errorf("%s: %w", op.name, err)
		}
		fmt.Fprintf(os.Stderr, "%s: %d ops, %d errors, %v server CPU each, %d objects stored; profile %s\n",
			op.name, total.Ops, total.Errors, total.CPU/time.Duration(max(total.Ops, 1)), created, path)
	}
	return nil
}

// scale runs the scaling scenario on bbolt, then on etcd (fsync on), and
// prints one table.
func scale(sizes []int) error {
	dir, err := os.MkdirTemp("", "annexload-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	bin, err := binaries.Build(ctx, binaries.EtcdModule())
	if err != nil {
		return err
	}
	etcd, err := binaries.StartEtcdProcess(bin, dir, binaries.EtcdOptions{Fsync: true})
	if err != nil {
		return err
	}
	defer etcd.Stop()
	backends := []struct {
		name  string
		flags []string
	}{{"bbolt", nil}, {"etcd", []string{"--etcd-servers", etcd.ClientURL}}}
	fmt.Println("| backend | objects | fill | full LIST | first page (500) | middle page (500) | RSS after fill (MiB) | peak RSS (MiB) | full LIST size / RSS rise while listing (MiB) | restart → ready |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, b := range backends {
		d := filepath.Join(dir, b.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		start := func(ctx context.Context, dir string) (load.Target, func(), error) {
			return load.StartAnnexWith(ctx, dir, b.flags...)
		}
		reports, err := load.Scale(ctx, d, sizes, 16, start)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		for _, r := range reports {
			restart := "—"
			if r.Restart > 0 {
				restart = r.Restart.Round(time.Millisecond).String()
			}
			fmt.Printf("| %s | %d | %.0f/s | %v | %v | %v | %d | %d | %.1f / %d | %s |\n", b.name, r.Objects, r.Fill.PerSecond(),
				r.FullList.Round(100*time.Microsecond), r.FirstPage.Round(10*time.Microsecond), r.MiddlePage.Round(10*time.Microsecond),
				r.RSS, r.PeakRSS, float64(r.ListBytes)/(1<<20), r.ListRSSGrowth, restart)
		}
	}
	return nil
}
