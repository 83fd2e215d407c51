// This file wires the audit stage (package audit) into the Builder: its
// check in Build's first phase, the Auditor of the second phase bound to the
// chain's trace (stage latencies and the rejecting stage), and its place in
// Run, where it stops only after the server drained.

package annex

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/annexapi/annex/audit"
)

// validateAudit is the audit part of Build's first phase: the policy
// compiles, each backend's settings are usable, the log file's directory can
// be made and the webhook's kubeconfig loads; nothing is created.
func (c *Builder) validateAudit(bad func(string, error)) {
	bad("Audit", c.Audit.Validate())
	if c.Audit.Policy != nil && !c.Audit.Enabled() {
		c.Observability.Logger.Warn("an audit policy without a backend (--audit-log-path, --audit-webhook-config-file): nothing is audited")
	}
}

// buildAudit is the audit part of Build's second phase: the Auditor (which
// makes the log file's directory and registers the audit metrics), started
// by Run. It returns a nil Auditor when c.Audit audits nothing.
func (s *Server) buildAudit(c *Builder) (*audit.Auditor, error) {
	if !c.Audit.Enabled() {
		return nil, nil
	}
	cfg := c.Audit
	if cfg.Registerer == nil {
		cfg.Registerer = c.Observability.Registerer
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Observability.Logger.Named("audit")
	}
	if cfg.Stages == nil {
		cfg.Stages = audit.TraceStages(genericStage)
	}
	a, err := audit.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	// Run cancels the runners' context only after the HTTP server drained,
	// so Start writes the last event of every request before Run returns.
	s.runners = append(s.runners, a.Start)
	s.log.Info("auditing", zap.String("log", cfg.Log.Path), zap.String("webhook", cfg.Webhook.ConfigFile))
	return a, nil
}
