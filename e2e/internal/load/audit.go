package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// AuditConfig is one audit set-up of the example server: a policy and the
// log backend's flags ("" policy: no audit).
type AuditConfig struct {
	Key    string // for annexload audit --configs
	Name   string
	Policy string
	Flags  []string
}

// The policies of AuditConfigs: one rule, every stage recorded.
const (
	metadataPolicy        = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
	requestResponsePolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"
)

// AuditConfigs are what the audit command compares: no audit; a log file at
// Metadata level in kube's default log mode (blocking), in batch mode with
// kube's log defaults (batches of one event) and with batches of up to 400;
// and at RequestResponse level, blocking. Each records both stages of a
// request (RequestReceived and ResponseComplete).
func AuditConfigs() []AuditConfig {
	return []AuditConfig{
		{Key: "none", Name: "no audit"},
		{Key: "blocking", Name: "Metadata, blocking", Policy: metadataPolicy},
		{Key: "batch", Name: "Metadata, batch", Policy: metadataPolicy, Flags: []string{"--audit-log-mode=batch"}},
		{Key: "batch400", Name: "Metadata, batch of 400", Policy: metadataPolicy, Flags: []string{"--audit-log-mode=batch", "--audit-log-batch-max-size=400", "--audit-log-batch-max-wait=1s"}},
		{Key: "request-response", Name: "RequestResponse, blocking", Policy: requestResponsePolicy},
	}
}

// AuditRun is one pass of one configuration: the create and GET results
// and the events the log holds afterwards.
type AuditRun struct {
	Create, Get Result
	Events      int
}

// AuditOverhead creates s.Objects objects and reads them s.Reads times
// with s.Clients clients on a fresh example server for each configuration,
// passes times, rotating which goes first; runs[c][p] is configuration c's
// pass p.
func AuditOverhead(ctx context.Context, dir string, configs []AuditConfig, s Sizes, passes int) (runs [][]AuditRun, err error) {
	runs = make([][]AuditRun, len(configs))
	for pass := range passes {
		for k := range configs {
			i := (k + pass) % len(configs)
			run, err := auditPass(ctx, filepath.Join(dir, fmt.Sprintf("%d-%d", i, pass)), configs[i], s)
			if err != nil {
				return nil, fmt.Errorf("%s, pass %d: %w", configs[i].Name, pass+1, err)
			}
			runs[i] = append(runs[i], run)
		}
	}
	return runs, nil
}

func auditPass(ctx context.Context, dir string, c AuditConfig, s Sizes) (AuditRun, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return AuditRun{}, err
	}
	flags := c.Flags
	log := filepath.Join(dir, "audit.log")
	if c.Policy != "" {
		policy := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(policy, []byte(c.Policy), 0o644); err != nil {
			return AuditRun{}, err
		}
		flags = append([]string{"--audit-policy-file", policy, "--audit-log-path", log}, flags...)
	}
	t, stop, err := StartAnnexWith(ctx, dir, flags...)
	if err != nil {
		return AuditRun{}, err
	}
	run := AuditRun{Create: t.Create("obj", s.Objects, s.Clients), Get: t.Get("obj", s.Objects, s.Reads, s.Clients)}
	stop() // a graceful stop: batch mode writes what it holds
	for _, r := range []Result{run.Create, run.Get} {
		if r.Errors > 0 {
			return run, fmt.Errorf("%s: %d errors", r.Scenario, r.Errors)
		}
	}
	if c.Policy != "" {
		// The log and the files it was rotated to (100 MB each).
		files, _ := filepath.Glob(filepath.Join(dir, "audit*.log"))
		for _, f := range files {
			n, err := countLines(f)
			if err != nil {
				return run, err
			}
			run.Events += n
		}
		// Both stages of every create and GET, beside the readiness probes.
		if want := 2 * (s.Objects + s.Reads); run.Events < want {
			return run, fmt.Errorf("the audit log holds %d events, want at least %d", run.Events, want)
		}
	}
	return run, nil
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, buf := 0, make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// AuditTable writes the median pass of each configuration (by throughput,
// create and GET apart) as a markdown table, with each throughput as a
// ratio of the first configuration's (no audit).
func AuditTable(w io.Writer, configs []AuditConfig, runs [][]AuditRun) {
	fmt.Fprintln(w, "| configuration | create | ÷ no audit | GET by name | ÷ no audit | events in the log |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	median := func(runs []AuditRun, pick func(AuditRun) Result) Result {
		passes := make([][]Result, len(runs))
		for i, r := range runs {
			passes[i] = []Result{pick(r)}
		}
		return Median(passes)[0]
	}
	create := func(r AuditRun) Result { return r.Create }
	get := func(r AuditRun) Result { return r.Get }
	base := []Result{median(runs[0], create), median(runs[0], get)}
	for i, c := range configs {
		cr, gr := median(runs[i], create), median(runs[i], get)
		_, ccell := figure(cr)
		_, gcell := figure(gr)
		events := make([]string, len(runs[i]))
		for p, r := range runs[i] {
			events[p] = fmt.Sprint(r.Events)
		}
		fmt.Fprintf(w, "| %s | %s | %.2f× | %s | %.2f× | %s |\n", c.Name, ccell, cr.PerSecond()/base[0].PerSecond(),
			gcell, gr.PerSecond()/base[1].PerSecond(), strings.Join(events, ", "))
	}
}
