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
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/otlp"
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
	// requestHeaderCA is the front proxy's RequestHeader.ClientCAFile bundle.
	authnClient, authzClient *kubeclient.Client
	// clusterClient reads the objects the server follows (--kubeconfig).
	clusterClient   *kubeclient.Client
	requestHeaderCA *certs.CABundle
	// tracing is the tracing configuration, nil for none.
	tracing *otlp.Configuration
	// admissionConfig is Admission.ConfigFile's, nil for none.
	admissionConfig *admission.Configuration
	// policies are the Admission.PolicyFiles, one YAML stream; webhooks the
	// configurations of the Admission.WebhookFiles.
	policies []byte
	webhooks []admission.WebhookConfiguration
}

// validate checks c (with defaults applied) and returns every problem,
// joined.
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

	c.validateServing(bad)
	c.validateRegistration(bad)
	if g := c.Shutdown.GoAwayChance; g < 0 || g > 0.02 {
		bad("Shutdown.GoAwayChance", fmt.Errorf("%v is not between 0 and 0.02 (--goaway-chance)", g))
	}
	c.validateConflicts(bad)
	if len(c.Resources) == 0 {
		bad("Resources", errors.New("no resources declared"))
	} else {
		badEach("Resources", c.validateResources())
	}

	var err error
	reload := certs.ReloadConfig{OnError: func(err error) { c.Observability.Logger.Error("reloading a certificate file", zap.Error(err)) }}
	if sv := c.Serving; sv.CertFile != "" && sv.KeyFile != "" {
		p.serving, err = certs.NewServingCert(sv.CertFile, sv.KeyFile, reload)
		bad("Serving.CertFile/KeyFile", err)
	}
	an := c.Authentication
	if an.ClientCAFile != "" {
		p.clientCA, err = certs.NewCABundle(an.ClientCAFile, reload)
		bad("Authentication.ClientCAFile", err)
	}
	if an.TokenAuthFile != "" {
		p.tokenFile, err = authn.NewTokenFile(an.TokenAuthFile)
		bad("Authentication.TokenAuthFile", err)
	}
	bad("Observability.Logging", c.loggingErr)
	if f := c.Admission.ConfigFile; f != "" {
		p.admissionConfig, err = admission.LoadConfiguration(f)
		bad("Admission.ConfigFile", err)
	}
	o := c.Observability
	switch {
	case o.TracingConfigFile != "" && o.Tracing != nil:
		bad("Observability.Tracing and TracingConfigFile", errors.New("both set"))
	case o.TracingConfigFile != "":
		p.tracing, err = otlp.LoadConfiguration(o.TracingConfigFile)
		bad("Observability.TracingConfigFile", err)
	case o.Tracing != nil:
		p.tracing = o.Tracing
		bad("Observability.Tracing", o.Tracing.Validate())
	}
	if p.tracing != nil && o.TraceExporter == nil {
		what := "Observability.Tracing"
		if o.TracingConfigFile != "" {
			what = "Observability.TracingConfigFile"
		}
		bad(what, errors.New("this program has no trace exporter: its Builder.Observability.TraceExporter is nil (otlpgrpc.Exporter is kube's OTLP/gRPC)"))
	}
	if lg := o.Logging; c.loggerInCode && (lg.Verbosity != 0 || lg.VModule != "" || (lg.Format != "" && lg.Format != "text")) {
		bad("Observability.Logging and Logger", errors.New("both set: Logging configures the logger made when Logger is nil"))
	}
	st := c.Storage
	if st.EncryptionProviderConfig != "" {
		_, err = value.LoadEncryptionConfigurationFile(st.EncryptionProviderConfig)
		bad("Storage.EncryptionProviderConfig", err)
	} else if st.EncryptionProviderConfigAutomaticReload {
		bad("Storage.EncryptionProviderConfigAutomaticReload", errors.New("needs EncryptionProviderConfig (--encryption-provider-config-automatic-reload must be set with --encryption-provider-config)"))
	}
	if an.OIDC != nil {
		p.oidc, err = authn.NewOIDC(*an.OIDC)
		bad("Authentication.OIDC", err)
	}
	if files := c.Authorization.PolicyFiles; len(files) > 0 {
		p.rbac, err = authz.LoadRBACFiles(files...)
		bad("Authorization.PolicyFiles", err)
	}
	if d := an.Delegation; d != nil {
		p.authnClient, err = clientFor(d.AuthenticationKubeconfig)
		bad("Delegation.AuthenticationKubeconfig", err)
		p.authzClient, err = clientFor(d.AuthorizationKubeconfig)
		bad("Delegation.AuthorizationKubeconfig", err)
		p.clusterClient = p.authnClient
		if d.Kubeconfig != "" {
			p.clusterClient, err = clientFor(d.Kubeconfig)
			bad("Delegation.Kubeconfig", err)
		}
		if f := d.RequestHeader.ClientCAFile; f != "" {
			p.requestHeaderCA, err = certs.NewCABundle(f, reload)
			bad("Delegation.RequestHeader.ClientCAFile", err)
		}
	}
	c.validateRequestHeader(p, reload, bad)
	c.validateAdmission(p, bad)
	c.validateFlowControl(bad)
	c.validateAudit(bad)
	// The order of the stages Build will fill, with stand-in filters; each
	// problem names the stage, as Chain's do.
	stages, err := c.fillStages(func(string) Filter { return func(h http.Handler) http.Handler { return h } })
	if err == nil {
		err = CheckOrder(stages)
	}
	if err != nil {
		errs = append(errs, err)
	}
	return p, errors.Join(errs...)
}

// validateServing checks the listening and TLS fields.
func (c *Builder) validateServing(bad func(string, error)) {
	sv, l := c.Serving, c.Limits
	if (sv.CertFile == "") != (sv.KeyFile == "") {
		bad("Serving.CertFile/KeyFile", errors.New("must be given together"))
	}
	if sv.SecurePort < 0 || sv.SecurePort > 65535 {
		bad("Serving.SecurePort", fmt.Errorf("%d is out of range", sv.SecurePort))
	}
	if l.MaxRequestBodyBytes < 0 {
		bad("Limits.MaxRequestBodyBytes", fmt.Errorf("%d is negative", l.MaxRequestBodyBytes))
	}
	if l.HTTP2MaxStreamsPerConnection < 0 {
		bad("Limits.HTTP2MaxStreamsPerConnection", fmt.Errorf("%d is negative", l.HTTP2MaxStreamsPerConnection))
	}
	if l.MinRequestTimeout < 0 {
		bad("Limits.MinRequestTimeout", fmt.Errorf("%v is negative", l.MinRequestTimeout))
	}
	if l.DeleteCollectionWorkers < 0 {
		bad("Limits.DeleteCollectionWorkers", fmt.Errorf("%d is negative", l.DeleteCollectionWorkers))
	}
	if c.Shutdown.Delay < 0 {
		bad("Shutdown.Delay", fmt.Errorf("%v is negative", c.Shutdown.Delay))
	}
	if c.Storage.Store != nil && c.Storage.Open != nil {
		bad("Storage.Store and Storage.Open", errors.New("both set: Open opens the default store Store gives"))
	}
}

// validateConflicts rejects fields that another field makes meaningless: a
// replaced authenticator or authorizer would silently ignore them.
func (c *Builder) validateConflicts(bad func(string, error)) {
	conflict := func(a, b, why string) {
		bad(a+" and "+b, errors.New("both set: "+why))
	}
	an, az := c.Authentication, c.Authorization
	if an.Authenticator != nil {
		why := "Authenticator replaces the authentication the other configures"
		if an.TokenAuthFile != "" {
			conflict("Authentication.Authenticator", "TokenAuthFile", why)
		}
		if an.OIDC != nil {
			conflict("Authentication.Authenticator", "OIDC", why)
		}
		if an.Delegation != nil {
			conflict("Authentication.Authenticator", "Delegation", why)
		}
	}
	if c.Storage.EncryptionProviderConfig != "" && c.Storage.Store != nil {
		conflict("Storage.EncryptionProviderConfig", "Storage.Store", "the file configures the store the Builder opens; "+
			"give Store its transformer in its own options (value.LoadEncryptionConfigurationFile)")
	}
	if az.Authorizer != nil {
		why := "Authorizer replaces the authorization the other configures"
		if len(az.PolicyFiles) > 0 {
			conflict("Authorization.Authorizer", "PolicyFiles", why)
		}
		if az.AlwaysAllowPaths != nil {
			conflict("Authorization.Authorizer", "AlwaysAllowPaths", why)
		}
		if an.Delegation != nil {
			conflict("Authorization.Authorizer", "Authentication.Delegation", why)
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
		if defaultStore(r) {
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
	ad := c.Admission
	for i, m := range ad.Mutators {
		if m == nil {
			bad(fmt.Sprintf("Admission.Mutators[%d]", i), errors.New("is nil"))
		}
	}
	for i, v := range ad.Validators {
		if v == nil {
			bad(fmt.Sprintf("Admission.Validators[%d]", i), errors.New("is nil"))
		}
	}
	for _, name := range ad.DisabledPlugins {
		if known := admission.PluginNames(); !slices.Contains(known, name) {
			bad("Admission.DisabledPlugins", fmt.Errorf("plugin %q is unknown (known: %s)", name, strings.Join(known, ", ")))
		}
	}
	policyErrs := 0
	for _, f := range ad.PolicyFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			bad("Admission.PolicyFiles", err)
			policyErrs++
			continue
		}
		// A file may hold both kinds; each engine takes its own.
		p.policies = append(append(p.policies, "\n---\n"...), data...)
	}
	if len(p.policies) > 0 && policyErrs == 0 {
		_, err := admission.LoadMutatingPolicies(p.policies, admission.PolicyOptions{})
		bad("Admission.PolicyFiles", err)
		if err == nil {
			_, err = admission.LoadValidatingPolicies(p.policies, admission.PolicyOptions{})
			bad("Admission.PolicyFiles", err)
		}
	}
	for _, f := range ad.WebhookFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			bad("Admission.WebhookFiles", err)
			continue
		}
		cfgs, err := admission.LoadWebhookConfigurations(data)
		if err != nil {
			bad("Admission.WebhookFiles", fmt.Errorf("%s: %w", f, err))
			continue
		}
		p.webhooks = append(p.webhooks, cfgs...)
	}
	if len(p.webhooks) > 0 {
		_, err := admission.NewMutatingWebhooks(p.webhooks, admission.WebhookOptions{})
		bad("Admission.WebhookFiles", err)
		_, err = admission.NewValidatingWebhooks(p.webhooks, admission.WebhookOptions{})
		bad("Admission.WebhookFiles", err)
	}
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
