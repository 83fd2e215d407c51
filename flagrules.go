// This file holds the rule every flag of flags.go follows: a flag given that
// has no effect in the chosen mode is an error of Build (its first phase)
// that names the flag, never silently ignored. Each flag with a mode in which
// it does nothing has a row in flagRules; a flag that always takes effect
// (--tls-cert-file, --request-timeout, ...) has none.

package annex

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// fieldsSetInCode records which Builder fields the program set before the
// flags were applied: flags that would fill them are then ignored.
type fieldsSetInCode struct {
	delegation, requestHeader, oidc, logger bool
}

// flagRule names the flags that do nothing when noEffect says so, and why.
type flagRule struct {
	flags    []string
	noEffect func(b *Builder, given map[string]bool, code fieldsSetInCode) (why string, ok bool)
}

// flagRules returns the rules, for the flags given; a function, so that no
// package state exists.
func flagRules(given map[string]bool) []flagRule {
	// The audit flags, by kind: the log's, the webhook's, and all but the
	// policy (which audit.AddFlags names; only those given matter).
	var auditFlags, auditLogFlags, auditWebhookFlags []string
	for name := range given {
		switch {
		case !strings.HasPrefix(name, "audit-") || name == "audit-policy-file":
			continue
		case strings.HasPrefix(name, "audit-log-") && name != "audit-log-path":
			auditLogFlags = append(auditLogFlags, name)
		case strings.HasPrefix(name, "audit-webhook-") && name != "audit-webhook-config-file":
			auditWebhookFlags = append(auditWebhookFlags, name)
		}
		auditFlags = append(auditFlags, name)
	}
	slices.Sort(auditFlags)
	slices.Sort(auditLogFlags)
	slices.Sort(auditWebhookFlags)
	delegationFlags := []string{"authentication-kubeconfig", "authorization-kubeconfig", "authentication-skip-lookup",
		"kubeconfig", "authentication-tolerate-lookup-failure",
		"authentication-token-webhook-cache-ttl", "authorization-webhook-cache-authorized-ttl", "authorization-webhook-cache-unauthorized-ttl"}
	requestHeaderNameFlags := []string{"requestheader-allowed-names", "requestheader-username-headers",
		"requestheader-group-headers", "requestheader-extra-headers-prefix", "requestheader-uid-headers"}
	oidcFlags := []string{"oidc-client-id", "oidc-ca-file", "oidc-username-claim", "oidc-username-prefix",
		"oidc-groups-claim", "oidc-groups-prefix", "oidc-required-claim", "oidc-signing-algs"}
	return []flagRule{
		{flags: delegationFlags, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			switch {
			case code.delegation:
				return "Builder.Delegation is set in code", true
			case !given["delegated-auth"]:
				return "has no effect without --delegated-auth", true
			}
			return "", false
		}},
		{flags: []string{"delegated-auth"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Delegation is set in code", code.delegation
		}},
		{flags: []string{"requestheader-client-ca-file"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			switch {
			case code.delegation:
				return "Builder.Delegation is set in code", true
			case code.requestHeader && !given["delegated-auth"]:
				return "Builder.RequestHeader is set in code", true
			}
			return "", false
		}},
		// The header names configure a front proxy: the one of
		// --requestheader-client-ca-file, or a delegated server's from the
		// cluster, which --authentication-skip-lookup leaves unread.
		{flags: requestHeaderNameFlags, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			switch {
			case code.delegation:
				return "Builder.Delegation is set in code", true
			case given["requestheader-client-ca-file"]:
				if code.requestHeader && !given["delegated-auth"] {
					return "Builder.RequestHeader is set in code", true
				}
				return "", false
			case !given["delegated-auth"]:
				return "has no effect without --requestheader-client-ca-file", true
			case b.Delegation != nil && b.Delegation.SkipLookup:
				return "has no effect without --requestheader-client-ca-file when --authentication-skip-lookup leaves the cluster's front-proxy CA unread", true
			}
			return "", false
		}},
		{flags: append([]string{"oidc-issuer-url"}, oidcFlags...), noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.OIDC is set in code", code.oidc
		}},
		{flags: oidcFlags, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --oidc-issuer-url", !code.oidc && !given["oidc-issuer-url"]
		}},
		// kube-apiserver audits nothing without a policy, a log without its
		// path, a webhook without its configuration.
		{flags: auditFlags, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-policy-file", !given["audit-policy-file"]
		}},
		{flags: auditLogFlags, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-log-path", !given["audit-log-path"]
		}},
		{flags: auditWebhookFlags, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-webhook-config-file", !given["audit-webhook-config-file"]
		}},
		{flags: []string{"audit-policy-file"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-log-path or --audit-webhook-config-file", !given["audit-log-path"] && !given["audit-webhook-config-file"]
		}},
		{flags: []string{"secure-port", "bind-address"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Listener is set in code", b.Listener != nil
		}},
		{flags: []string{"authentication-tolerate-lookup-failure"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect with --authentication-skip-lookup (nothing is looked up)", b.Delegation != nil && b.Delegation.SkipLookup
		}},
		{flags: []string{"cert-dir"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect: --tls-cert-file is given and client certificates are not generated", b.CertFile != "" && (b.ClientCAFile != "" || b.Delegation != nil)
		}},
		{flags: []string{"watch-cache-sizes"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect with --watch-cache=false", b.DisableWatchCache
		}},
		{flags: []string{"logging-format", "v", "vmodule", "log-flush-frequency"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Logger is set in code", code.logger
		}},
		{flags: []string{"data-dir"}, noEffect: func(b *Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect: certificates come from files, client certificates are not generated (--client-ca-file or delegation) and no resource uses the embedded store", !b.usesDataDir()
		}},
	}
}

// checkFlagEffects returns an error naming every flag given that has no
// effect, joined; code is what the program set before the flags applied.
func (b *Builder) checkFlagEffects(code fieldsSetInCode) error {
	if b.flags == nil || b.flags.fs == nil {
		return nil
	}
	given := b.flags.givenFlags()
	var errs []error
	reported := map[string]bool{}
	for _, r := range flagRules(given) {
		why, ok := r.noEffect(b, given, code)
		if !ok {
			continue
		}
		for _, name := range r.flags {
			if given[name] && !reported[name] {
				reported[name] = true
				errs = append(errs, fmt.Errorf("--%s: %s", name, why))
			}
		}
	}
	return errors.Join(errs...)
}

// usesDataDir reports whether Build writes or reads anything in DataDir: a
// generated serving certificate, the standalone client CA and kubeconfig, or
// the embedded store.
func (b *Builder) usesDataDir() bool {
	if b.CertFile == "" || b.ClientCAFile == "" && b.Delegation == nil && b.Authenticator == nil {
		return true
	}
	if b.Storage != nil {
		return false
	}
	for _, r := range b.Resources {
		if r.Storage == nil && r.Getter == nil && r.Lister == nil {
			return true
		}
	}
	return false
}
