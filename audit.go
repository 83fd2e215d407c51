// This file wires the audit stage (package audit) into the Builder: the
// --audit-* flags, its check in Build's first phase, the Auditor of the
// second phase bound to the chain's trace (stage latencies and the rejecting
// stage), and its place in Run, where it stops only after the server drained.

package annex

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/filters"
)

// applyAuditFlags moves the --audit-* flags into c.Audit when
// --audit-policy-file was given: the policy and the backends come from the
// flags, the rest of c.Audit (Registerer, Logger, Stages, ...) stays.
func (c *Builder) applyAuditFlags() error {
	f := c.flags.audit
	if f == nil || f.PolicyFile == "" {
		return nil
	}
	if c.Audit.Policy != nil {
		return errors.New("Audit.Policy and --audit-policy-file: both set")
	}
	cfg, err := f.Config()
	if errors.Is(err, audit.ErrInvalidPolicy) {
		return fmt.Errorf("--audit-policy-file %s: %w", f.PolicyFile, err)
	}
	if err != nil {
		return fmt.Errorf("--audit-* flags: %w", err)
	}
	c.Audit.Policy, c.Audit.Log, c.Audit.Webhook = cfg.Policy, cfg.Log, cfg.Webhook
	c.flags.auditFromFlags = true
	return nil
}

// validateAudit is the audit part of Build's first phase: the policy
// compiles, each backend's settings are usable, the log file's directory can
// be made and the webhook's kubeconfig loads; nothing is created.
func (c *Builder) validateAudit(bad func(string, error)) {
	field := "Audit"
	if c.flags != nil && c.flags.auditFromFlags {
		field = "--audit-* flags"
	}
	bad(field, c.Audit.Validate())
	if c.Audit.Policy != nil && !c.Audit.Enabled() {
		c.Logger.Warn("an audit policy without a backend (--audit-log-path, --audit-webhook-config-file): nothing is audited")
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
		cfg.Registerer = c.Registerer
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Logger.Named("audit")
	}
	if cfg.Stages == nil {
		cfg.Stages = auditStages
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

// genericStage reports whether name is one of the stages before
// authentication that every request passes in microseconds; the
// stage-latencies annotation leaves them out.
func genericStage(name string) bool {
	switch name {
	case StagePanicRecovery, StageAuditID, StageRequestInfo, StageMetrics, StageLogging,
		StageHeaders, StageDeadline, StageTimeout, StageBodyLimit, StageWarnings:
		return true
	}
	return false
}

// appendMillis appends d in milliseconds with three decimals (whole
// microseconds), as strconv's 'f' format of d.Microseconds()/1000 with
// precision 3 writes them, without the float.
func appendMillis(dst []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us < 0 {
		dst, us = append(dst, '-'), -us
	}
	dst = strconv.AppendInt(dst, us/1000, 10)
	frac := us % 1000
	return append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// auditStages is audit.Config.Stages read from the chain's trace: the time
// spent in each stage from authentication on and in each handler step
// (summed per name: admission runs twice for a write), in milliseconds with
// microsecond precision, e.g.
// "authentication=0.012ms,audit=0.020ms,authorization=0.004ms,admission=0.110ms,storage=1.250ms";
// and the stage or step that rejected the request, if one did.
func auditStages(ctx context.Context, code int) (latencies, rejectedBy string) {
	t := filters.TraceFrom(ctx)
	if t == nil {
		return "", ""
	}
	// Stages come first, each once; the handler's steps after them, a name
	// possibly repeated: those are summed.
	type entry struct {
		name string
		d    time.Duration
	}
	var arr [16]entry // the usual chain fits: no slice to allocate
	entries := arr[:0]
next:
	for name, d := range t.Latencies() {
		if genericStage(name) {
			continue
		}
		for i := range entries {
			if entries[i].name == name {
				entries[i].d += d
				continue next
			}
		}
		entries = append(entries, entry{name, d})
	}
	var b strings.Builder // one allocation: the string is the builder's buffer
	b.Grow(24 * len(entries))
	var num [24]byte
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.name)
		b.WriteByte('=')
		b.Write(appendMillis(num[:0], e.d))
		b.WriteString("ms")
	}
	return b.String(), t.RejectedBy(code)
}
