// This file wires API priority and fairness (package flowcontrol) into the
// Builder: kube's four flags, the checks of Build's first phase, the
// controller of its second (following the cluster's objects in delegated
// mode, LIST widths from the stores' object counts), the flowcontrol stage
// with the health paths exempt, and the debug dumps.

package annex

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// The flags of priority and fairness, as kube-apiserver names them.
const (
	flagEnableAPF        = "enable-priority-and-fairness"
	flagMaxInFlight      = "max-requests-inflight"
	flagMaxMutating      = "max-mutating-requests-inflight"
	flagFlowControlFiles = "flowcontrol-config-file"
)

// FlowControlDebugPath is where the debug dumps of priority and fairness are
// served (dump_priority_levels, dump_queues, dump_requests), behind
// authentication and authorization like every path but the health ones: a
// non-resource path that system:masters may get and others only when an
// RBAC rule (or the cluster, delegated) allows it.
const FlowControlDebugPath = "/debug/api_priority_and_fairness/"

// objectCountPeriod is how often the stores' object counts are refreshed
// for LIST widths, as kube's object-count tracker (one minute).
const objectCountPeriod = time.Minute

// addFlowControlFlags binds kube's four flags to b.FlowControl and records
// which were given, so that errors name the flag rather than the field.
func (b *Builder) addFlowControlFlags(fs *flag.FlagSet) {
	f := b.flags
	f.fcGiven = map[string]*bool{}
	b.FlowControl.AddFlags(fs)
	for _, name := range []string{flagEnableAPF, flagMaxInFlight, flagMaxMutating, flagFlowControlFiles} {
		if fl := fs.Lookup(name); fl != nil {
			given := new(bool)
			f.fcGiven[name] = given
			fl.Value = &givenFlag{Value: fl.Value, given: given}
		}
	}
}

// fcFlagGiven reports whether the flag name was given on the command line.
func (b *Builder) fcFlagGiven(name string) bool {
	if b.flags == nil || b.flags.fcGiven[name] == nil {
		return false
	}
	return *b.flags.fcGiven[name]
}

// applyFlowControlFlags gives an explicit 0 of a max-in-flight flag kube's
// meaning (no limit of that kind, or no seats from it): flowcontrol.Config
// reads 0 as the default and a negative value as 0.
func (b *Builder) applyFlowControlFlags() {
	if b.fcFlagGiven(flagMaxInFlight) && b.FlowControl.MaxRequestsInFlight == 0 {
		b.FlowControl.MaxRequestsInFlight = -1
	}
	if b.fcFlagGiven(flagMaxMutating) && b.FlowControl.MaxMutatingRequestsInFlight == 0 {
		b.FlowControl.MaxMutatingRequestsInFlight = -1
	}
}

// givenFlag records that its flag was set.
type givenFlag struct {
	flag.Value
	given *bool
}

func (g *givenFlag) Set(v string) error { *g.given = true; return g.Value.Set(v) }

func (g *givenFlag) String() string {
	if g == nil || g.Value == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	return g.Value.String()
}

func (g *givenFlag) IsBoolFlag() bool {
	b, ok := g.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// fcName names a setting in an error: the flag when it was given, the
// Builder field otherwise.
func (c *Builder) fcName(flagName, field string) string {
	if c.fcFlagGiven(flagName) {
		return "--" + flagName
	}
	return "FlowControl." + field
}

// followsCluster reports whether the configuration comes from the cluster.
func (c *Builder) followsCluster() bool { return c.FlowControl.Cluster != nil || c.Delegation != nil }

// validateFlowControl is Build's first phase for priority and fairness: a
// setting with no effect in the chosen mode, limits that leave no seats,
// configuration files and objects that do not load or validate. It reads
// files and nothing else.
func (c *Builder) validateFlowControl(bad func(string, error)) {
	fc := c.FlowControl
	files := c.fcName(flagFlowControlFiles, "ConfigFiles")
	hasObjects := len(fc.Objects.FlowSchemas)+len(fc.Objects.PriorityLevels) > 0
	switch {
	case fc.Disabled:
		why := errors.New("has no effect with priority and fairness off (" + c.fcName(flagEnableAPF, "Disabled") + ")")
		if len(fc.ConfigFiles) > 0 {
			bad(files, why)
		}
		if hasObjects {
			bad("FlowControl.Objects", why)
		}
		if fc.Cluster != nil {
			bad("FlowControl.Cluster", why)
		}
		return
	case c.followsCluster():
		why := errors.New("has no effect when the configuration follows the cluster's FlowSchemas and PriorityLevelConfigurations (delegated mode)")
		if len(fc.ConfigFiles) > 0 {
			bad(files, why)
		}
		if hasObjects {
			bad("FlowControl.Objects", why)
		}
	}
	ro, mut := fc.MaxRequestsInFlight, fc.MaxMutatingRequestsInFlight
	if ro == 0 {
		ro = flowcontrol.DefaultMaxRequestsInFlight
	}
	if mut == 0 {
		mut = flowcontrol.DefaultMaxMutatingRequestsInFlight
	}
	if max(ro, 0)+max(mut, 0) <= 0 {
		bad(c.fcName(flagMaxInFlight, "MaxRequestsInFlight")+" and "+c.fcName(flagMaxMutating, "MaxMutatingRequestsInFlight"),
			errors.New("leave no seats: with priority and fairness on their sum must be positive"))
		return
	}
	if c.followsCluster() {
		return
	}
	loaded := true
	for _, path := range fc.ConfigFiles {
		if _, err := flowcontrol.LoadFiles(path); err != nil {
			bad(files, err) // the error names the file or the object
			loaded = false
		}
	}
	if loaded && len(fc.ConfigFiles) > 1 {
		if _, err := flowcontrol.LoadFiles(fc.ConfigFiles...); err != nil {
			bad(files, err) // an object in two files
		}
	}
	if hasObjects {
		if _, err := flowcontrol.New(flowcontrol.Config{Objects: fc.Objects}); err != nil {
			bad("FlowControl.Objects", err)
		}
	}
}

// buildFlowControl is Build's second phase for priority and fairness: the
// controller (run by Run), the object counts it sizes LISTs with, and the
// filter of the flowcontrol stage.
func (s *Server) buildFlowControl(c *Builder, resources []rest.Resource, fd *frontDoor) (Filter, error) {
	cfg := c.FlowControl
	if cfg.Registerer == nil {
		cfg.Registerer = c.Registerer
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Logger.Named("flowcontrol")
	}
	if cfg.Cluster == nil && !cfg.Disabled {
		cfg.Cluster = fd.cluster
	}
	if cfg.ObjectCounter == nil && !cfg.Disabled {
		oc := newObjectCounts(resources, objectCountPeriod, cfg.Logger)
		cfg.ObjectCounter = oc
		s.runners = append(s.runners, oc.Start)
	}
	fc, err := flowcontrol.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("FlowControl: %w", err)
	}
	s.flowControl = fc
	s.runners = append(s.runners, fc.Start)
	return func(next http.Handler) http.Handler {
		limited := fc.Filter(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isHealthPath(r.URL.Path) {
				next.ServeHTTP(w, r) // never queued nor rejected, in every mode
				return
			}
			limited.ServeHTTP(w, r)
		})
	}, nil
}

// isHealthPath reports whether p is /healthz, /livez or /readyz, or one of
// their checks (/readyz/ping).
func isHealthPath(p string) bool {
	for _, h := range healthPaths() {
		if rest, ok := strings.CutPrefix(p, h); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// objectCounts gives LIST widths the number of objects of each stored
// resource, counted by its store (storage.Counter; the watch cache counts
// from memory) when Run starts and then every period: a request reads a
// cached figure, never a live count.
type objectCounts struct {
	period time.Duration
	log    *zap.Logger
	// byResource is fixed once built; each count is -1 until first counted.
	byResource map[groupResource]*objectCount
}

type groupResource struct{ group, resource string }

type objectCount struct {
	counter storage.Counter
	prefix  string
	n       atomic.Int64
}

func newObjectCounts(resources []rest.Resource, period time.Duration, log *zap.Logger) *objectCounts {
	o := &objectCounts{period: period, log: log, byResource: map[groupResource]*objectCount{}}
	for _, r := range resources {
		counter, ok := r.Storage.(storage.Counter)
		key := groupResource{r.Group, r.Plural}
		if !ok || o.byResource[key] != nil { // computed, or another version of it
			continue
		}
		oc := &objectCount{counter: counter, prefix: storage.ResourcePrefix(r.Group, r.Plural, "")}
		oc.n.Store(-1)
		o.byResource[key] = oc
	}
	return o
}

// ObjectCount implements flowcontrol.ObjectCounter.
func (o *objectCounts) ObjectCount(group, resource string) (int64, bool) {
	oc := o.byResource[groupResource{group, resource}]
	if oc == nil {
		return 0, false
	}
	n := oc.n.Load()
	return n, n >= 0
}

// refresh counts every resource once; a failed count keeps the last figure.
func (o *objectCounts) refresh(ctx context.Context) {
	for gr, oc := range o.byResource {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := oc.counter.Count(cctx, oc.prefix)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				o.log.Warn("counting objects for LIST widths", zap.String("resource", gr.resource+"."+gr.group), zap.Error(err))
			}
			continue
		}
		oc.n.Store(n)
	}
}

// Start counts at once, then every period until ctx ends.
func (o *objectCounts) Start(ctx context.Context) error {
	if len(o.byResource) == 0 {
		return nil
	}
	o.refresh(ctx)
	t := time.NewTicker(o.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			o.refresh(ctx)
		}
	}
}
