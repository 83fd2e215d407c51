// This file holds the rule every flag follows: a flag given that has no
// effect in the chosen mode is an error of Apply that names the flag, never
// silently ignored. Each flag with a mode in which it does nothing has a row
// in flagRules; a flag that always takes effect (--tls-cert-file,
// --request-timeout, ...) has none.

package kubeflags

import (
	"slices"
	"strings"

	"github.com/annexapi/annex"
)

// flagRule names the flags that do nothing when noEffect says so, and why.
type flagRule struct {
	flags    []string
	noEffect func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (why string, ok bool)
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
	etcdFlags := []string{"etcd-cafile", "etcd-certfile", "etcd-keyfile", "etcd-prefix", "etcd-compaction-interval",
		"etcd-healthcheck-timeout", "etcd-readycheck-timeout"}
	oidcFlags := []string{"oidc-client-id", "oidc-ca-file", "oidc-username-claim", "oidc-username-prefix",
		"oidc-groups-claim", "oidc-groups-prefix", "oidc-required-claim", "oidc-signing-algs"}
	return []flagRule{
		{flags: delegationFlags, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			switch {
			case code.delegation:
				return "Builder.Authentication.Delegation is set in code", true
			case !given["delegated-auth"]:
				return "has no effect without --delegated-auth", true
			}
			return "", false
		}},
		{flags: []string{"delegated-auth"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Authentication.Delegation is set in code", code.delegation
		}},
		{flags: []string{"requestheader-client-ca-file"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			switch {
			case code.delegation:
				return "Builder.Authentication.Delegation is set in code", true
			case code.requestHeader && !given["delegated-auth"]:
				return "Builder.Authentication.RequestHeader is set in code", true
			}
			return "", false
		}},
		// The header names configure a front proxy: the one of
		// --requestheader-client-ca-file, or a delegated server's from the
		// cluster, which --authentication-skip-lookup leaves unread.
		{flags: requestHeaderNameFlags, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			switch {
			case code.delegation:
				return "Builder.Authentication.Delegation is set in code", true
			case given["requestheader-client-ca-file"]:
				if code.requestHeader && !given["delegated-auth"] {
					return "Builder.Authentication.RequestHeader is set in code", true
				}
				return "", false
			case !given["delegated-auth"]:
				return "has no effect without --requestheader-client-ca-file", true
			case b.Authentication.Delegation != nil && b.Authentication.Delegation.SkipLookup:
				return "has no effect without --requestheader-client-ca-file when --authentication-skip-lookup leaves the cluster's front-proxy CA unread", true
			}
			return "", false
		}},
		{flags: append([]string{"oidc-issuer-url"}, oidcFlags...), noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Authentication.OIDC is set in code", code.oidc
		}},
		{flags: oidcFlags, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --oidc-issuer-url", !code.oidc && !given["oidc-issuer-url"]
		}},
		// kube-apiserver audits nothing without a policy, a log without its
		// path, a webhook without its configuration.
		{flags: auditFlags, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-policy-file", !given["audit-policy-file"]
		}},
		{flags: auditLogFlags, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-log-path", !given["audit-log-path"]
		}},
		{flags: auditWebhookFlags, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-webhook-config-file", !given["audit-webhook-config-file"]
		}},
		{flags: []string{"audit-policy-file"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --audit-log-path or --audit-webhook-config-file", !given["audit-log-path"] && !given["audit-webhook-config-file"]
		}},
		{flags: []string{"secure-port", "bind-address"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Serving.Listener is set in code", b.Serving.Listener != nil
		}},
		{flags: []string{"authentication-tolerate-lookup-failure"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect with --authentication-skip-lookup (nothing is looked up)", b.Authentication.Delegation != nil && b.Authentication.Delegation.SkipLookup
		}},
		{flags: []string{"cert-dir"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect: --tls-cert-file is given and client certificates are not generated", b.Serving.CertFile != "" && (b.Authentication.ClientCAFile != "" || b.Authentication.Delegation != nil)
		}},
		{flags: []string{"watch-cache-sizes"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect with --watch-cache=false", b.Storage.DisableWatchCache
		}},
		{flags: []string{"logging-format", "v", "vmodule", "log-flush-frequency"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Observability.Logger is set in code", code.logger
		}},
		// The etcd client's flags configure --etcd-servers' client.
		{flags: etcdFlags, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --etcd-servers", !given["etcd-servers"]
		}},
		{flags: []string{"postgres-dsn"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Storage.Store, Storage.Open or Storage.Postgres is set in code", code.store
		}},
		{flags: []string{"etcd-servers"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "Builder.Storage.Store, Storage.Open or Storage.Postgres is set in code", code.store
		}},
		{flags: []string{"apiservice-port", "apiservice-ca-file", "apiservice-group-priority-minimum", "apiservice-version-priority"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect without --register-apiservice", !b.Registration.Register
		}},
		{flags: []string{"data-dir"}, noEffect: func(b *annex.Builder, given map[string]bool, code fieldsSetInCode) (string, bool) {
			return "has no effect: certificates come from files, client certificates are not generated (--client-ca-file or delegation) and no resource uses the embedded store", !b.UsesDataDir()
		}},
	}
}
