// This file connects admission (package admission) to the resource handlers
// (package rest): both name the attributes of a write as attrs.Admission, so
// an admission.Chain is a rest.Admitter as it is. Neither package imports
// the other. It also lets admission's CEL expressions check authorization
// with the server's authorizer (package authz), which admission does not
// import either.

package annex

import (
	"slices"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/rest"
)

var _ rest.Admitter = (*admission.Chain)(nil)

// buildAdmission assembles the admission chain: Go plugins first, then the
// admission policies, then the webhooks (the order kube-apiserver runs them
// in), plus each resource's schema, and, in delegated mode, the namespace
// lifecycle plugin against the cluster and the cluster's own policies and
// webhooks, followed. Policies' and webhooks' authorizer
// checks go to authorizer, the server's. observe counts rejections by stage.
func (s *Server) buildAdmission(c *Builder, p *plan, resources []rest.Resource, cluster *kubeclient.Client, authorizer authz.Authorizer, observe func(stage string)) (rest.Admitter, error) {
	cfg := admission.Config{Registerer: c.Observability.Registerer, ObserveRejection: observe}
	for _, r := range resources {
		var subs []string
		if r.StatusSubresource {
			subs = []string{"status"}
		}
		cfg.Resources = append(cfg.Resources, admission.Resource{Group: r.Group, Version: r.Version, Resource: r.Plural, Kind: r.Kind, Schema: r.Schema, Subresources: subs})
	}
	var opts admission.PolicyOptions
	var hookOpts admission.WebhookOptions
	opts.Authorizer, hookOpts.Authorizer = authz.CELAuthorizer(authorizer), authz.CELAuthorizer(authorizer)
	off := func(plugin string) bool { return slices.Contains(c.Admission.DisabledPlugins, plugin) }
	if cluster != nil && !off("NamespaceLifecycle") {
		// Namespaces as the cluster has them, followed by a watch: a
		// namespace that starts terminating refuses new content at once.
		namespaces := &admission.WatchedNamespaces{Client: cluster}
		s.runners = append(s.runners, namespaces.Run)
		opts.Namespaces, hookOpts.Namespaces = namespaces, namespaces
		nl, err := admission.NewNamespaceLifecycle(admission.NamespaceLifecycleConfig{Namespaces: namespaces, TTL: -1})
		if err != nil {
			return nil, err
		}
		cfg.Mutators = append(cfg.Mutators, nl)
	}
	// A plugin the program made in Go (policies, webhooks) is subject to
	// --disable-admission-plugins as one from files is: by its kube name.
	cfg.Mutators = append(cfg.Mutators, admission.Enabled(c.Admission.Mutators, c.Admission.DisabledPlugins)...)
	cfg.Validators = append(cfg.Validators, admission.Enabled(c.Admission.Validators, c.Admission.DisabledPlugins)...)

	// The program's policies and webhooks, and in delegated mode the
	// cluster's, followed (kube's plugins in kube's order).
	policies, bindings, params, err := admission.LoadPolicies(p.policies)
	if err != nil {
		return nil, err
	}
	opts.Params = params
	if !slices.ContainsFunc(resources, func(r rest.Resource) bool { return r.Storage != nil }) {
		cluster = nil // nothing stored, nothing written: no configuration to follow
	}
	fc, err := admission.FollowCluster(admission.ClusterConfig{Client: cluster, Policies: policies, Bindings: bindings, Webhooks: p.webhooks,
		Policy: opts, Webhook: hookOpts, Configuration: p.admissionConfig, Disabled: c.Admission.DisabledPlugins, Logger: s.log.Named("admission")})
	if err != nil {
		return nil, err
	}
	if cluster != nil {
		s.runners = append(s.runners, fc.Run)
		s.readyChecks = append(s.readyChecks, healthz.ReadyCheck("cluster-admission-configuration", fc))
	}
	cfg.Mutators, cfg.Validators = append(cfg.Mutators, fc.Mutators()...), append(cfg.Validators, fc.Validators()...)
	return admission.New(cfg)
}
