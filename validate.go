// This file holds the first phase of Build: it checks the whole declaration
// and loads what can be loaded without a side effect (token, policy,
// certificate and kubeconfig files are read, nothing is written, no directory
// is made, no certificate generated, no port bound, no metric registered),
// returning every problem at once, each naming the field it is about. The
// second phase (builder.go) only runs on a declaration that passed.

package annex

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"go.uber.org/zap"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/value"
)

// plan is what the first phase loaded, for the second to use.
type plan struct {
	tokenFile *authn.TokenFile
	oidc      *authn.OIDC
	rbac      *authz.RBAC
	// clientCA is ClientCAFile's bundle; serving is CertFile and KeyFile.
	clientCA *certs.CABundle
	serving  *certs.ServingCert
	// authnClient and authzClient reach the cluster in delegated mode;
	// requestHeaderCA is Delegation.RequestHeaderClientCAFile's bundle.
	authnClient, authzClient *kubeclient.Client
	// clusterClient reads the objects the server follows (--kubeconfig).
	clusterClient   *kubeclient.Client
	requestHeaderCA *certs.CABundle
	// tracing is the tracing configuration, nil for none.
	tracing *TracingConfiguration
	// admissionConfig is AdmissionControlConfigFile's, nil for none.
	admissionConfig *admissionConfig
	// policies are the AdmissionPolicyFiles, one YAML stream; webhooks the
	// configurations of the AdmissionWebhookFiles.
	policies []byte
	webhooks []admission.WebhookConfiguration
}

// validate checks c (with defaults and flags applied) and returns every
// problem, joined.
func (c *Builder) validate() (*plan, error) {
	var errs []error
	bad := func(field string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	badEach := func(field string, err error) { // one line per joined error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				bad(field, e)
			}
			return
		}
		bad(field, err)
	}
	p := &plan{}

	if err := c.applyFlags(); err != nil {
		errs = append(errs, err) // names the flag
	}
	c.validateServing(bad)
	if c.GoAwayChance < 0 || c.GoAwayChance > 0.02 {
		bad("GoAwayChance", fmt.Errorf("%v is not between 0 and 0.02 (--goaway-chance)", c.GoAwayChance))
	}
	c.validateConflicts(bad)
	if len(c.Resources) == 0 {
		bad("Resources", errors.New("no resources declared"))
	} else {
		badEach("Resources", c.validateResources())
	}

	var err error
	reload := certs.ReloadConfig{OnError: func(err error) { c.Logger.Error("reloading a certificate file", zap.Error(err)) }}
	if c.CertFile != "" && c.KeyFile != "" {
		p.serving, err = certs.NewServingCert(c.CertFile, c.KeyFile, reload)
		bad("CertFile/KeyFile", err)
	}
	if c.ClientCAFile != "" {
		p.clientCA, err = certs.NewCABundle(c.ClientCAFile, reload)
		bad("ClientCAFile", err)
	}
	if c.TokenAuthFile != "" {
		p.tokenFile, err = authn.NewTokenFile(c.TokenAuthFile)
		bad("TokenAuthFile", err)
	}
	bad("Logging", c.loggingErr)
	if c.AdmissionControlConfigFile != "" {
		p.admissionConfig, err = loadAdmissionConfiguration(c.AdmissionControlConfigFile)
		bad("AdmissionControlConfigFile", err)
	}
	switch {
	case c.TracingConfigFile != "" && c.Tracing != nil:
		bad("Tracing and TracingConfigFile", errors.New("both set"))
	case c.TracingConfigFile != "":
		p.tracing, err = LoadTracingConfiguration(c.TracingConfigFile)
		bad("TracingConfigFile", err)
	case c.Tracing != nil:
		p.tracing = c.Tracing
		bad("Tracing", c.Tracing.validate())
	}
	if p.tracing != nil && c.TraceExporter == nil {
		what := "Tracing"
		if c.TracingConfigFile != "" {
			what = "TracingConfigFile"
		}
		bad(what, errors.New("this program has no trace exporter: its Builder.TraceExporter is nil (otlp.GRPCExporter is kube's OTLP/gRPC)"))
	}
	if lg := c.Logging; c.loggerInCode && (lg.Verbosity != 0 || lg.VModule != "" || (lg.Format != "" && lg.Format != "text")) {
		bad("Logging and Logger", errors.New("both set: Logging configures the logger made when Logger is nil"))
	}
	if c.EncryptionProviderConfig != "" {
		_, err = value.LoadEncryptionConfigurationFile(c.EncryptionProviderConfig)
		bad("EncryptionProviderConfig", err)
	} else if c.EncryptionProviderConfigAutomaticReload {
		bad("EncryptionProviderConfigAutomaticReload", errors.New("needs EncryptionProviderConfig (--encryption-provider-config-automatic-reload must be set with --encryption-provider-config)"))
	}
	if c.OIDC != nil {
		p.oidc, err = authn.NewOIDC(*c.OIDC)
		bad("OIDC", err)
	}
	if len(c.AuthorizationPolicyFiles) > 0 {
		p.rbac, err = authz.LoadRBACFiles(c.AuthorizationPolicyFiles...)
		bad("AuthorizationPolicyFiles", err)
	}
	if d := c.Delegation; d != nil {
		p.authnClient, err = clientFor(d.AuthenticationKubeconfig)
		bad("Delegation.AuthenticationKubeconfig", err)
		p.authzClient, err = clientFor(d.AuthorizationKubeconfig)
		bad("Delegation.AuthorizationKubeconfig", err)
		p.clusterClient = p.authnClient
		if d.Kubeconfig != "" {
			p.clusterClient, err = clientFor(d.Kubeconfig)
			bad("Delegation.Kubeconfig", err)
		}
		if d.RequestHeaderClientCAFile != "" {
			p.requestHeaderCA, err = certs.NewCABundle(d.RequestHeaderClientCAFile, reload)
			bad("Delegation.RequestHeaderClientCAFile", err)
		}
	}
	c.validateRequestHeader(p, reload, bad)
	c.validateAdmission(p, bad)
	c.validateFlowControl(bad)
	c.validateAudit(bad)
	if _, err := c.orderedStages(); err != nil {
		errs = append(errs, err) // each names the stage, as Chain's do
	}
	return p, errors.Join(errs...)
}

// validateServing checks the listening and TLS fields.
func (c *Builder) validateServing(bad func(string, error)) {
	if (c.CertFile == "") != (c.KeyFile == "") {
		bad("CertFile/KeyFile", errors.New("must be given together"))
	}
	if c.SecurePort < 0 || c.SecurePort > 65535 {
		bad("SecurePort", fmt.Errorf("%d is out of range", c.SecurePort))
	}
	if c.MaxRequestBodyBytes < 0 {
		bad("MaxRequestBodyBytes", fmt.Errorf("%d is negative", c.MaxRequestBodyBytes))
	}
	if c.HTTP2MaxStreamsPerConnection < 0 {
		bad("HTTP2MaxStreamsPerConnection", fmt.Errorf("%d is negative", c.HTTP2MaxStreamsPerConnection))
	}
	if c.MinRequestTimeout < 0 {
		bad("MinRequestTimeout", fmt.Errorf("%v is negative", c.MinRequestTimeout))
	}
	if c.ShutdownDelay < 0 {
		bad("ShutdownDelay", fmt.Errorf("%v is negative", c.ShutdownDelay))
	}
}

// validateConflicts rejects fields that another field makes meaningless: a
// replaced authenticator or authorizer would silently ignore them.
func (c *Builder) validateConflicts(bad func(string, error)) {
	conflict := func(a, b, why string) {
		bad(a+" and "+b, errors.New("both set: "+why))
	}
	if c.Authenticator != nil {
		why := "Authenticator replaces the authentication the other configures"
		if c.TokenAuthFile != "" {
			conflict("Authenticator", "TokenAuthFile", why)
		}
		if c.OIDC != nil {
			conflict("Authenticator", "OIDC", why)
		}
		if c.Delegation != nil {
			conflict("Authenticator", "Delegation", why)
		}
	}
	if c.EncryptionProviderConfig != "" && c.Storage != nil {
		conflict("EncryptionProviderConfig", "Storage", "the file configures the store the Builder opens; "+
			"give Storage its transformer in its own options (value.LoadEncryptionConfigurationFile)")
	}
	if c.Authorizer != nil {
		why := "Authorizer replaces the authorization the other configures"
		if len(c.AuthorizationPolicyFiles) > 0 {
			conflict("Authorizer", "AuthorizationPolicyFiles", why)
		}
		if c.AlwaysAllowPaths != nil {
			conflict("Authorizer", "AlwaysAllowPaths", why)
		}
		if c.Delegation != nil {
			conflict("Authorizer", "Delegation", why)
		}
	}
}

// pendingStore stands for the default store while resources are validated
// before it is opened; it is never called.
type pendingStore struct{ storage.Interface }

// validateResources checks the resources as the handlers and admission will
// see them: the rest declarations, then each schema.
func (c *Builder) validateResources() error {
	var errs []error
	rs := make([]rest.Resource, len(c.Resources))
	for i, r := range c.Resources {
		if r.Storage == nil && r.Getter == nil && r.Lister == nil {
			r.Storage = pendingStore{}
		}
		rs[i] = r
	}
	if _, err := rest.NewHandler(rest.Config{Resources: rs}); err != nil {
		errs = append(errs, err)
	}
	for _, r := range rs {
		if r.Schema == nil {
			continue
		}
		if _, err := admission.NewSchemaValidator(r.Schema, meta.GroupKind{Group: r.Group, Kind: r.Kind}, admission.SchemaOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s/%s: schema: %w", r.Plural, r.Group, r.Version, err))
		}
	}
	return errors.Join(errs...)
}

// validateAdmission reads and compiles the admission files and checks the Go
// plugins. The second phase compiles the files again with the cluster's
// namespaces (delegated mode).
func (c *Builder) validateAdmission(p *plan, bad func(string, error)) {
	for i, m := range c.Mutators {
		if m == nil {
			bad(fmt.Sprintf("Mutators[%d]", i), errors.New("is nil"))
		}
	}
	for i, v := range c.Validators {
		if v == nil {
			bad(fmt.Sprintf("Validators[%d]", i), errors.New("is nil"))
		}
	}
	policyErrs := 0
	for _, f := range c.AdmissionPolicyFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			bad("AdmissionPolicyFiles", err)
			policyErrs++
			continue
		}
		// A file may hold both kinds; each engine takes its own.
		p.policies = append(append(p.policies, "\n---\n"...), data...)
	}
	if len(p.policies) > 0 && policyErrs == 0 {
		_, err := admission.LoadMutatingPolicies(p.policies, admission.PolicyOptions{})
		bad("AdmissionPolicyFiles", err)
		if err == nil {
			_, err = admission.LoadValidatingPolicies(p.policies, admission.PolicyOptions{})
			bad("AdmissionPolicyFiles", err)
		}
	}
	for _, f := range c.AdmissionWebhookFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			bad("AdmissionWebhookFiles", err)
			continue
		}
		cfgs, err := admission.LoadWebhookConfigurations(data)
		if err != nil {
			bad("AdmissionWebhookFiles", fmt.Errorf("%s: %w", f, err))
			continue
		}
		p.webhooks = append(p.webhooks, cfgs...)
	}
	if len(p.webhooks) > 0 {
		_, err := admission.NewMutatingWebhooks(p.webhooks, admission.WebhookOptions{})
		bad("AdmissionWebhookFiles", err)
		_, err = admission.NewValidatingWebhooks(p.webhooks, admission.WebhookOptions{})
		bad("AdmissionWebhookFiles", err)
	}
}

// orderedStages returns the table of stages as Build will fill it (with a
// stand-in for each filter) and the user's stages inserted, and every
// problem with it: an insertion after an unknown stage, an order Chain
// rejects.
func (c *Builder) orderedStages() ([]Stage, error) {
	stages := DefaultStages()
	for i := range stages {
		if c.fills(stages[i].Name) {
			stages[i].Filter = func(h http.Handler) http.Handler { return h }
		}
	}
	stages, err := c.insertStages(stages)
	if err != nil {
		return nil, err
	}
	return stages, CheckOrder(stages)
}

// clientFor returns a client of the cluster from a kubeconfig, or from the
// in-cluster configuration when kubeconfig is empty.
func clientFor(kubeconfig string) (*kubeclient.Client, error) {
	var kc *kubeclient.Config
	var err error
	if kubeconfig != "" {
		kc, err = kubeclient.LoadKubeconfig(kubeconfig, "")
	} else {
		kc, err = kubeclient.InClusterConfig()
	}
	if err != nil {
		return nil, err
	}
	return kubeclient.New(*kc)
}
