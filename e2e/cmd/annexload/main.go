// Command annexload drives a server the way real clients do (package
// internal/load) and prints a markdown table: creates, reads, lists,
// updates, conflicts, watch fan-out latency, and the footprint.
//
//	go run ./cmd/annexload run --short   # annex alone, a few seconds per scenario (CI)
//	go run ./cmd/annexload run           # annex alone, issue 18's sizes
//	go run ./cmd/annexload compare       # annex beside k8s.io/sample-apiserver
//
// compare builds k8s.io/sample-apiserver, etcd and kube-apiserver from the
// Go module proxy (cached), and runs the suite on fresh servers of each in
// alternating order, --passes times (3 by default); each cell is the median
// pass, and the last column the ratio annex ÷ sample-apiserver.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

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
		return errors.New("usage: annexload run [--short]")
	}
	switch args[0] {
	case "run":
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		short := fs.Bool("short", false, "a few seconds per scenario")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		sizes := load.Full()
		if *short {
			sizes = load.Short()
		}
		dir, err := os.MkdirTemp("", "annexload-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		ctx := context.Background()
		t, stop, err := load.StartAnnex(ctx, dir)
		if err != nil {
			return err
		}
		results := t.Suite(ctx, sizes)
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
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		sizes := load.Full()
		if *short {
			sizes = load.Short()
		}
		return compare(sizes, *passes)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// compare runs the suite on fresh annex and sample-apiserver servers,
// alternating which goes first, and prints the median pass of each.
func compare(sizes load.Sizes, passes int) error {
	dir, err := os.MkdirTemp("", "annexload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	starts := []func(ctx context.Context, dir string) (load.Target, func(), error){load.StartAnnex, load.StartReference}
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
	names := []string{"annex", "sample-apiserver"}
	load.Table(os.Stdout, names, [][]load.Result{load.Median(results[0]), load.Median(results[1])})
	return nil
}
