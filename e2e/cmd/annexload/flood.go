// This file holds the flood command: priority and fairness under a flood
// that costs the server much and its sender little.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/e2e/internal/load"
)

// floodCmd runs `annexload flood`: see load.Flood.
func floodCmd(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	short := fs.Bool("short", false, "5,000 objects and 3 s rows")
	objects := fs.Int("objects", 0, "objects the LISTs scan (0: 50,000, or 5,000 short)")
	seats := fs.String("seats", "", "the server's --max-requests-inflight,--max-mutating-requests-inflight (empty: 3,1)")
	inFlight := fs.Int("in-flight", 0, "A's LISTs in flight (0: 25 times the seats)")
	profile := fs.String("profile", "", "a directory for the server's CPU profile over B's measurement in each row")
	trace := fs.Bool("trace", false, "with --profile, the server's execution trace instead of its CPU profile")
	rowList := fs.String("rows", "", "the rows to run, as 1,2 (empty: all four)")
	flooderProcs := fs.Int("flooder-procs", 0, "A's GOMAXPROCS (0: Go's default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := load.FullFlood()
	if *short {
		c = load.ShortFlood()
	}
	if *objects > 0 {
		c.Objects = *objects
	}
	if *seats != "" {
		r, m, ok := strings.Cut(*seats, ",")
		var err1, err2 error
		c.Seats, err1 = strconv.Atoi(r)
		c.MutatingSeats, err2 = strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || c.Seats < 1 || c.MutatingSeats < 1 {
			return fmt.Errorf("--seats: want two positive numbers, as 3,1; got %q", *seats)
		}
	}
	c.InFlight = 25 * (c.Seats + c.MutatingSeats)
	if *inFlight > 0 {
		c.InFlight = *inFlight
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c.Self = self
	if *trace && *profile == "" {
		return errors.New("--trace needs --profile DIR, where the traces are written")
	}
	c.ProfileDir, c.Trace, c.FlooderProcs = *profile, *trace, *flooderProcs
	for _, f := range strings.Split(*rowList, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 4 {
			return fmt.Errorf("--rows: want numbers from 1 to 4, as 1,2; got %q", *rowList)
		}
		c.Rows = append(c.Rows, n)
	}
	dir, err := os.MkdirTemp("", "annexload-flood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rows, err := load.Flood(context.Background(), dir, c)
	if err != nil {
		return err
	}
	if c.ProfileDir != "" {
		// B's slowest GETs, to find them in the profiles.
		for _, r := range rows {
			for _, g := range r.Slowest {
				fmt.Fprintf(os.Stderr, "%s: slow GET at %s took %v\n", r.Name, g.At.Format(time.RFC3339Nano), g.Took)
			}
		}
	}
	return load.FloodTable(os.Stdout, c, rows)
}
