// Command annexload drives a server the way real clients do (package
// internal/load) and prints a markdown table: creates, reads, lists,
// updates, conflicts, watch fan-out latency, and the footprint.
//
//	go run ./cmd/annexload run --short   # annex alone, a few seconds per scenario (CI)
//	go run ./cmd/annexload run           # annex alone, issue 18's sizes
//
// The side-by-side comparison with k8s.io/sample-apiserver (issue 18) is
// not built yet: "compare" says so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

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
		return errors.New("compare: not built yet: k8s.io/sample-apiserver needs a kube-apiserver for delegated authentication; see issue 18")
	}
	return fmt.Errorf("unknown command %q", args[0])
}
