// This file binds Config to kube-apiserver's flags on a standard library
// flag.FlagSet.

package flowcontrol

import (
	"flag"
	"strconv"
	"strings"
)

// AddFlags registers kube's flags on fs, bound to cfg's fields, with the
// current values as defaults: --enable-priority-and-fairness (default true;
// sets Disabled), --max-requests-inflight (400), --max-mutating-requests-inflight
// (200), and --flowcontrol-config-file (repeatable; appends to ConfigFiles).
func (cfg *Config) AddFlags(fs *flag.FlagSet) {
	fs.Var((*enableFlag)(&cfg.Disabled), "enable-priority-and-fairness",
		"If true, replace the max-in-flight handler with an enhanced one that queues and dispatches with priority and fairness")
	if cfg.MaxRequestsInFlight == 0 {
		cfg.MaxRequestsInFlight = DefaultMaxRequestsInFlight
	}
	if cfg.MaxMutatingRequestsInFlight == 0 {
		cfg.MaxMutatingRequestsInFlight = DefaultMaxMutatingRequestsInFlight
	}
	fs.IntVar(&cfg.MaxRequestsInFlight, "max-requests-inflight", cfg.MaxRequestsInFlight,
		"This and --max-mutating-requests-inflight are summed to determine the server's total concurrency limit (which must be positive) if --enable-priority-and-fairness is true. Otherwise, this flag limits the maximum number of non-mutating requests in flight, or a zero value disables the limit completely.")
	fs.IntVar(&cfg.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", cfg.MaxMutatingRequestsInFlight,
		"This and --max-requests-inflight are summed to determine the server's total concurrency limit (which must be positive) if --enable-priority-and-fairness is true. Otherwise, this flag limits the maximum number of mutating requests in flight, or a zero value disables the limit completely.")
	fs.Var((*fileList)(&cfg.ConfigFiles), "flowcontrol-config-file",
		"A YAML file of flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations, added to the suggested ones and re-read when it changes. Repeatable.")
}

// enableFlag is --enable-priority-and-fairness over Config.Disabled.
type enableFlag bool

func (f *enableFlag) String() string {
	if f != nil && bool(*f) {
		return "false"
	}
	return "true"
}

func (f *enableFlag) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*f = enableFlag(!b)
	return nil
}

func (f *enableFlag) IsBoolFlag() bool { return true }

// fileList is a repeatable flag.
type fileList []string

func (l *fileList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *fileList) Set(v string) error { *l = append(*l, v); return nil }
