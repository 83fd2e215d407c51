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
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/rest"
)

var _ rest.Admitter = (*admission.Chain)(nil)

// buildAdmission assembles the admission chain: Go plugins first, then the
// admission policies, then the webhooks (the order kube-apiserver runs them
// in), plus each resource's schema, and, in delegated mode, the namespace
// lifecycle plugin against the cluster. Policies' and webhooks' authorizer
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

	if len(p.policies) > 0 {
		mp, err := admission.LoadMutatingPolicies(p.policies, opts)
		if err != nil {
			return nil, err
		}
		vp, err := admission.LoadValidatingPolicies(p.policies, opts)
		if err != nil {
			return nil, err
		}
		if !off("MutatingAdmissionPolicy") {
			cfg.Mutators = append(cfg.Mutators, mp)
		}
		if !off("ValidatingAdmissionPolicy") {
			cfg.Validators = append(cfg.Validators, vp)
		}
	}
	if len(p.webhooks) > 0 {
		mutOpts, valOpts := hookOpts, hookOpts
		if ac := p.admissionConfig; ac != nil {
			mutOpts.Credentials, valOpts.Credentials = ac.MutatingCredentials, ac.ValidatingCredentials
		}
		mw, err := admission.NewMutatingWebhooks(p.webhooks, mutOpts)
		if err != nil {
			return nil, err
		}
		vw, err := admission.NewValidatingWebhooks(p.webhooks, valOpts)
		if err != nil {
			return nil, err
		}
		if !off("MutatingAdmissionWebhook") {
			cfg.Mutators = append(cfg.Mutators, mw)
		}
		if !off("ValidatingAdmissionWebhook") {
			cfg.Validators = append(cfg.Validators, vw)
		}
	}
	chain, err := admission.New(cfg)
	if err != nil {
		return nil, err
	}
	return chain, nil
}
