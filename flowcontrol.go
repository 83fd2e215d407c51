// This file wires API priority and fairness (package flowcontrol) into the
// Builder: the checks of Build's first phase, the controller of its second
// (following the cluster's objects in delegated mode, LIST widths from the
// stores' object counts), the flowcontrol stage with the health paths
// exempt, and the debug dumps.

package annex

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// FlowControlDebugPath is where the debug dumps of priority and fairness are
// served (dump_priority_levels, dump_queues, dump_requests), behind
// authentication and authorization like every path but the health ones: a
// non-resource path that system:masters may get and others only when an
// RBAC rule (or the cluster, delegated) allows it.
const FlowControlDebugPath = "/debug/api_priority_and_fairness/"

// followsCluster reports whether the configuration comes from the cluster.
func (c *Builder) followsCluster() bool {
	return c.FlowControl.Cluster != nil || c.Authentication.Delegation != nil
}

// validateFlowControl is Build's first phase for priority and fairness: a
// setting with no effect in the chosen mode, limits that leave no seats,
// configuration files and objects that do not load or validate. It reads
// files and nothing else.
func (c *Builder) validateFlowControl(bad func(string, error)) {
	fc := c.FlowControl
	files := "FlowControl.ConfigFiles"
	hasObjects := len(fc.Objects.FlowSchemas)+len(fc.Objects.PriorityLevels) > 0
	switch {
	case fc.Disabled:
		why := errors.New("has no effect with priority and fairness off (FlowControl.Disabled, --enable-priority-and-fairness=false)")
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
		bad("FlowControl.MaxRequestsInFlight and FlowControl.MaxMutatingRequestsInFlight (--max-requests-inflight, --max-mutating-requests-inflight)",
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
		cfg.Registerer = c.Observability.Registerer
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Observability.Logger.Named("flowcontrol")
	}
	if cfg.Cluster == nil && !cfg.Disabled {
		cfg.Cluster = fd.cluster
	}
	if cfg.ObjectCounter == nil && !cfg.Disabled {
		log := cfg.Logger
		oc := &storage.ObjectCounts{OnError: func(group, resource string, err error) {
			log.Warn("counting objects for LIST widths", zap.String("resource", resource+"."+group), zap.Error(err))
		}}
		for _, r := range resources {
			if counter, ok := r.Storage.(storage.Counter); ok { // not computed on read
				oc.Add(r.Group, r.Plural, counter)
			}
		}
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
