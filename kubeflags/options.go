// This file holds Options: kube's command-line flags of an aggregated API
// server registered on a pflag.FlagSet (AddFlags) and applied to a Builder
// (Apply), every problem at once, each naming its flag.

package kubeflags

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/etcd"
	"github.com/annexapi/annex/storage/postgres"
)

// Options are the values of the flags AddFlags registered that are not a
// Builder field as they are: delegation (used only with --delegated-auth),
// the front proxy, OIDC, audit, etcd and kube's generic flags. The zero
// value is ready for AddFlags.
type Options struct {
	// pfs is the set AddFlags registered on: which flags were given is
	// asked of it, one way for every flag.
	pfs             *pflag.FlagSet
	delegated       bool
	skipLookup      bool
	profiling       bool
	delegation      annex.Delegation
	requestHeaderCA string
	oidc            authn.OIDCConfig
	oidcCAFile      string
	oidcRequired    stringMap
	policyFiles     stringList
	alwaysAllow     commaList
	allowedNames    commaList
	usernameHdrs    commaList
	groupHdrs       commaList
	extraPrefixes   commaList
	uidHdrs         commaList
	oidcSigningAlg  commaList
	// audit holds the --audit-* flags, etcd the --etcd-* flags.
	audit *audit.Flags
	etcd  etcd.Config
	// pg holds --postgres-dsn (with --storage-backend=postgres).
	pg postgres.Config
	// kube holds the flags of kube.go.
	kube kubeFlagState
}

// AddFlags registers the server's flags on fs, named and meaning as
// kube-apiserver's, bound to b's fields where a field is the flag's value
// (b's current values are the defaults --help shows): serving (--secure-port,
// --bind-address, --tls-*, --cert-dir, ...), --data-dir (annex's own: the
// embedded store, generated certificates and the admin kubeconfig),
// authentication (--client-ca-file, --token-auth-file, the --oidc-* set,
// --requestheader-*, and for delegated mode --delegated-auth,
// --authentication-kubeconfig, ...), authorization, admission, the limits,
// priority and fairness (flowcontrol.Config.AddFlags), audit
// (audit.AddFlags), etcd (etcd.Config.AddFlags: --etcd-servers and the rest,
// wherever --storage-backend is), logging, and kube's generic flags. --help
// prints them in kube's sections (PrintSections). Call Apply with the same b
// after parsing.
//
// A program that has flags of its own must not register these names again.
func (o *Options) AddFlags(pfs *pflag.FlagSet, b *annex.Builder) {
	fs := flag.NewFlagSet(pfs.Name(), flag.ContinueOnError)
	o.pfs = pfs
	f := o
	port := b.Serving.SecurePort
	if port == 0 {
		port = 8443
	}
	b.Serving.SecurePort = port
	fs.IntVar(&b.Serving.SecurePort, "secure-port", port, "The port on which to serve HTTPS with authentication and authorization.")
	fs.StringVar(&b.Serving.BindAddress, "bind-address", b.Serving.BindAddress, "The IP address on which to listen for the --secure-port port. Empty means all interfaces.")
	fs.StringVar(&b.DataDir, "data-dir", b.DataDir, "The directory for the embedded store and, when none are given, generated certificates and the admin kubeconfig.")
	fs.StringVar(&b.Serving.CertFile, "tls-cert-file", b.Serving.CertFile, "File containing the default x509 certificate for HTTPS (CA cert, if any, concatenated after server cert). Empty generates a self-signed one in --data-dir.")
	fs.StringVar(&b.Serving.KeyFile, "tls-private-key-file", b.Serving.KeyFile, "File containing the default x509 private key matching --tls-cert-file.")
	fs.StringVar(&b.Authentication.ClientCAFile, "client-ca-file", b.Authentication.ClientCAFile, "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate.")
	fs.StringVar(&b.Authentication.TokenAuthFile, "token-auth-file", b.Authentication.TokenAuthFile, "If set, the file that will be used to secure the secure port of the API server via token authentication.")
	fs.Var(&f.policyFiles, "authorization-policy-file", "RBAC YAML (Roles, ClusterRoles and bindings) evaluated in process. Repeatable.")
	addLimitFlags(fs, b)
	fs.Var(&f.alwaysAllow, "authorization-always-allow-paths", "A list of HTTP paths to skip during authorization, i.e. these are authorized without contacting the 'core' kubernetes server. Default /healthz,/readyz,/livez.")

	fs.StringVar(&b.Storage.EncryptionProviderConfig, "encryption-provider-config", b.Storage.EncryptionProviderConfig, "The file containing configuration for encryption providers to be used for storing secrets in etcd")
	fs.BoolVar(&b.Storage.EncryptionProviderConfigAutomaticReload, "encryption-provider-config-automatic-reload", b.Storage.EncryptionProviderConfigAutomaticReload, "Determines if the file set by --encryption-provider-config should be automatically reloaded if the disk contents change. Setting this to true disables the ability to uniquely identify distinct KMS plugins via the API server healthz endpoints.")
	format := b.Observability.Logging.Format
	if format == "" {
		format = "text"
	}
	fs.StringVar(&b.Observability.Logging.Format, "logging-format", format, `Sets the log format. Permitted formats: "json", "text".`)
	fs.IntVar(&b.Observability.Logging.Verbosity, "v", b.Observability.Logging.Verbosity, "number for the log level verbosity")
	fs.StringVar(&b.Observability.Logging.VModule, "vmodule", b.Observability.Logging.VModule, "comma-separated list of pattern=N settings for file-filtered logging")
	flush := b.Observability.Logging.FlushFrequency
	if flush == 0 {
		flush = 5 * time.Second
	}
	fs.DurationVar(&b.Observability.Logging.FlushFrequency, "log-flush-frequency", flush, "Maximum number of seconds between log flushes (entries are written unbuffered: accepted for kube's arguments, it changes nothing)")
	fs.BoolVar(&f.profiling, "profiling", !b.Observability.DisableProfiling, "Enable profiling via web interface host:port/debug/pprof/")
	fs.BoolVar(&b.Observability.ContentionProfiling, "contention-profiling", b.Observability.ContentionProfiling, "Enable block profiling, if profiling is enabled")
	fs.BoolVar(&f.delegated, "delegated-auth", false, "Delegate authentication and authorization to the cluster (front proxy, TokenReview, SubjectAccessReview), as behind kube-aggregator.")
	fs.StringVar(&f.delegation.AuthenticationKubeconfig, "authentication-kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create tokenreviews.authentication.k8s.io. Empty means in-cluster.")
	fs.BoolVar(&f.skipLookup, "authentication-skip-lookup", false, "If false, the authentication-kubeconfig will be used to lookup missing authentication configuration from the cluster.")
	fs.StringVar(&f.delegation.AuthorizationKubeconfig, "authorization-kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create subjectaccessreviews.authorization.k8s.io. Empty means in-cluster.")
	fs.StringVar(&f.requestHeaderCA, "requestheader-client-ca-file", "", "Root certificate bundle to use to verify client certificates on incoming requests before trusting usernames in headers specified by --requestheader-username-headers.")
	fs.Var(&f.allowedNames, "requestheader-allowed-names", "List of client certificate common names to allow to provide usernames in headers specified by --requestheader-username-headers. If empty, any client certificate validated by the authorities in --requestheader-client-ca-file is allowed.")
	fs.Var(&f.usernameHdrs, "requestheader-username-headers", "List of request headers to inspect for usernames. X-Remote-User is common.")
	fs.Var(&f.groupHdrs, "requestheader-group-headers", "List of request headers to inspect for groups. X-Remote-Group is suggested.")
	fs.Var(&f.extraPrefixes, "requestheader-extra-headers-prefix", "List of request header prefixes to inspect. X-Remote-Extra- is suggested.")
	fs.Var(&f.uidHdrs, "requestheader-uid-headers", "List of request headers to inspect for UIDs. X-Remote-Uid is suggested.")
	fs.DurationVar(&f.delegation.TokenCacheTTL, "authentication-token-webhook-cache-ttl", 10*time.Second, "The duration to cache responses from the webhook token authenticator.")
	fs.DurationVar(&f.delegation.AuthorizedTTL, "authorization-webhook-cache-authorized-ttl", 10*time.Second, "The duration to cache 'authorized' responses from the webhook authorizer.")
	fs.DurationVar(&f.delegation.UnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", 10*time.Second, "The duration to cache 'unauthorized' responses from the webhook authorizer.")

	fs.StringVar(&f.oidc.IssuerURL, "oidc-issuer-url", "", "The URL of the OpenID issuer, only HTTPS scheme will be accepted. If set, it will be used to verify the OIDC JSON Web Token (JWT).")
	fs.Var((*audienceFlag)(&f.oidc), "oidc-client-id", "The client ID for the OpenID Connect client, must be set if oidc-issuer-url is set.")
	fs.StringVar(&f.oidcCAFile, "oidc-ca-file", "", "If set, the OpenID server's certificate will be verified by one of the authorities in the oidc-ca-file.")
	fs.StringVar(&f.oidc.UsernameClaim, "oidc-username-claim", "sub", "The OpenID claim to use as the user name.")
	fs.StringVar(&f.oidc.UsernamePrefix, "oidc-username-prefix", "", "If provided, all usernames will be prefixed with this value.")
	fs.StringVar(&f.oidc.GroupsClaim, "oidc-groups-claim", "", "If provided, the name of a custom OpenID Connect claim for specifying user groups.")
	fs.StringVar(&f.oidc.GroupsPrefix, "oidc-groups-prefix", "", "If provided, all groups will be prefixed with this value.")
	fs.Var(&f.oidcRequired, "oidc-required-claim", "A key=value pair that describes a required claim in the ID Token. Repeatable.")
	fs.Var(&f.oidcSigningAlg, "oidc-signing-algs", "Comma-separated list of allowed JOSE asymmetric signing algorithms. Default RS256.")
	b.FlowControl.AddFlags(fs)
	addRegistrationFlags(fs, b)

	o.addKubeFlags(fs, b)
	f.audit = audit.AddFlags(fs)
	o.etcd.AddFlags(fs)
	o.pg.AddFlags(fs)
	pfs.AddGoFlagSet(fs)
	nameTypes(pfs)
	pfs.Usage = sectionedUsage(pfs)
}

// Apply completes b from the flags given on the command line: the values
// that are not a Builder field as they are (delegation with --delegated-auth,
// the front proxy, OIDC, the audit policy and backends, the etcd store,
// explicit zeros of the max-in-flight flags), and returns every problem at
// once, each naming its flag: a bad value, and a flag given that has no
// effect in the chosen mode (rules.go), such as a flag whose Builder field
// the program set in code. Only the flags given change anything.
func (o *Options) Apply(b *annex.Builder) error {
	if o.pfs == nil {
		return errors.New("kubeflags: Apply before AddFlags")
	}
	given := map[string]bool{}
	o.pfs.Visit(func(fl *pflag.Flag) { given[fl.Name] = true })
	an := &b.Authentication
	code := fieldsSetInCode{delegation: an.Delegation != nil, requestHeader: an.RequestHeader != nil, oidc: an.OIDC != nil,
		logger: b.Observability.Logger != nil, store: b.Storage.Store != nil || b.Storage.Open != nil || b.Storage.Postgres.Enabled()}
	var errs []error
	// An explicit 0 of a max-in-flight flag has kube's meaning (no limit of
	// that kind, or no seats from it): flowcontrol.Config reads 0 as the
	// default and a negative value as 0.
	if given["max-requests-inflight"] && b.FlowControl.MaxRequestsInFlight == 0 {
		b.FlowControl.MaxRequestsInFlight = -1
	}
	if given["max-mutating-requests-inflight"] && b.FlowControl.MaxMutatingRequestsInFlight == 0 {
		b.FlowControl.MaxMutatingRequestsInFlight = -1
	}
	if given["profiling"] {
		b.Observability.DisableProfiling = !o.profiling
	}
	// An aggregated server that serves nothing has no use: kube's wording
	// for a server whose secure port is required (a 0 would otherwise be
	// the Builder's default, 8443).
	if p := b.Serving.SecurePort; given["secure-port"] && (p < 1 || p > 65535) {
		errs = append(errs, fmt.Errorf("--secure-port %d must be between 1 and 65535, inclusive. It cannot be turned off with 0", p))
	}
	if len(o.policyFiles) > 0 {
		b.Authorization.PolicyFiles = append(b.Authorization.PolicyFiles, o.policyFiles...)
	}
	if len(o.alwaysAllow) > 0 {
		b.Authorization.AlwaysAllowPaths = o.alwaysAllow
	}
	rh := annex.RequestHeader{ClientCAFile: o.requestHeaderCA, Names: authn.RequestHeaderNames{AllowedNames: o.allowedNames,
		UsernameHeaders: o.usernameHdrs, GroupHeaders: o.groupHdrs, ExtraHeaderPrefixes: o.extraPrefixes, UIDHeaders: o.uidHdrs}}
	switch {
	case an.Delegation == nil && o.delegated:
		d := o.delegation
		d.SkipLookup = o.skipLookup
		d.RequestHeader = rh
		an.Delegation = &d
	case an.Delegation == nil && an.RequestHeader == nil && rh.ClientCAFile != "":
		an.RequestHeader = &rh
	}
	if an.OIDC == nil && o.oidc.IssuerURL != "" {
		oc := o.oidc
		if o.oidcCAFile != "" {
			ca, err := os.ReadFile(o.oidcCAFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("--oidc-ca-file: %w", err))
			}
			oc.CAData = ca
		}
		oc.RequiredClaims = o.oidcRequired
		oc.SigningAlgorithms = o.oidcSigningAlg
		an.OIDC = &oc
	}
	if o.etcd.Enabled() && !code.store {
		cfg := o.etcd
		b.Storage.Open = func(so annex.StoreOptions) (storage.Interface, error) {
			return cfg.Open(etcd.Options{Logger: so.Logger, Transformer: so.Transformer, Observer: so.Observer})
		}
	}
	if o.pg.Enabled() && o.kube.storageBackend == "postgres" && !code.store {
		b.Storage.Postgres = o.pg
	}
	errs = append(errs, o.applyAudit(b), o.applyKubeFlags(b, given), checkFlagEffects(b, given, code))
	return errors.Join(errs...)
}

// applyAudit moves the --audit-* flags into b.Audit when
// --audit-policy-file was given: the policy and the backends come from the
// flags, the rest of b.Audit (Registerer, Logger, Stages, ...) stays.
func (o *Options) applyAudit(b *annex.Builder) error {
	f := o.audit
	if f == nil || f.PolicyFile == "" {
		return nil
	}
	if b.Audit.Policy != nil {
		return errors.New("--audit-policy-file: Builder.Audit.Policy is set in code")
	}
	cfg, err := f.Config()
	if errors.Is(err, audit.ErrInvalidPolicy) {
		return fmt.Errorf("--audit-policy-file %s: %w", f.PolicyFile, err)
	}
	if err != nil {
		return fmt.Errorf("--audit-* flags: %w", err)
	}
	b.Audit.Policy, b.Audit.Log, b.Audit.Webhook = cfg.Policy, cfg.Log, cfg.Webhook
	return nil
}

// fieldsSetInCode records which Builder fields the program set before the
// flags were applied: flags that would fill them are then refused.
type fieldsSetInCode struct {
	delegation, requestHeader, oidc, logger, store bool
}

// checkFlagEffects returns an error naming every flag given that has no
// effect, joined.
func checkFlagEffects(b *annex.Builder, given map[string]bool, code fieldsSetInCode) error {
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
