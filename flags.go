// This file binds the Builder to command-line flags named as kube-apiserver's,
// so every annex server takes the same flags as the servers it replaces.

package annex

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/authn"
)

// flagState holds what flags set that is not a Builder field as is: the
// delegation settings (used only when delegation is asked for) and OIDC.
type flagState struct {
	// fs is the set AddFlags registered on: its Visit tells which flags
	// were given (pfs's, when AddPFlags wrapped it).
	fs             *flag.FlagSet
	pfs            *pflag.FlagSet
	delegated      bool
	skipLookup     bool
	profiling      bool
	delegation     Delegation
	oidc           authn.OIDCConfig
	oidcCAFile     string
	oidcRequired   stringMap
	policyFiles    stringList
	alwaysAllow    commaList
	allowedNames   commaList
	usernameHdrs   commaList
	groupHdrs      commaList
	extraPrefixes  commaList
	uidHdrs        commaList
	oidcSigningAlg commaList
	// fcGiven records which flags of priority and fairness were given.
	fcGiven map[string]*bool
	// audit holds the --audit-* flags; auditFromFlags is set once they
	// filled Builder.Audit.
	audit          *audit.Flags
	auditFromFlags bool
	// kube holds the flags of kubeflags.go.
	kube kubeFlagState
}

// AddFlags registers the server's flags on fs, named and meaning as
// kube-apiserver's: --secure-port, --bind-address, --data-dir (annex's own:
// the embedded store, generated certificates and the admin kubeconfig),
// --tls-cert-file, --profiling and --contention-profiling,
// --tls-private-key-file, --client-ca-file, --token-auth-file,
// --authorization-policy-file, --authorization-always-allow-paths, the
// --oidc-* set, and for delegated mode --delegated-auth,
// --authentication-kubeconfig, --authorization-kubeconfig, the
// --authentication-skip-lookup and the webhook cache TTLs; the
// --requestheader-* set (in either mode); the limits (limits.go); priority
// and fairness's --enable-priority-and-fairness, --max-requests-inflight,
// --max-mutating-requests-inflight and --flowcontrol-config-file; and the
// --audit-* set (audit.AddFlags: --audit-policy-file, --audit-log-path, ...),
// which sets Audit when --audit-policy-file is given. The current field values
// are the defaults. Values take effect at Build; delegation is on when
// --delegated-auth is set. A flag given that has no effect in the chosen
// mode is an error of Build that names it (flagrules.go).
//
// A program that has flags of its own must not register these names again
// (the flag package panics on a redefined flag): set the Builder's field
// instead, or read its value from fs after parsing.
func (b *Builder) AddFlags(fs *flag.FlagSet) {
	if b.flags == nil {
		b.flags = &flagState{}
	}
	f := b.flags
	f.fs = fs
	port := b.SecurePort
	if port == 0 {
		port = 8443
	}
	b.SecurePort = port
	fs.IntVar(&b.SecurePort, "secure-port", port, "The port on which to serve HTTPS with authentication and authorization.")
	fs.StringVar(&b.BindAddress, "bind-address", b.BindAddress, "The IP address on which to listen for the --secure-port port. Empty means all interfaces.")
	fs.StringVar(&b.DataDir, "data-dir", b.DataDir, "The directory for the embedded store and, when none are given, generated certificates and the admin kubeconfig.")
	fs.StringVar(&b.CertFile, "tls-cert-file", b.CertFile, "File containing the default x509 certificate for HTTPS (CA cert, if any, concatenated after server cert). Empty generates a self-signed one in --data-dir.")
	fs.StringVar(&b.KeyFile, "tls-private-key-file", b.KeyFile, "File containing the default x509 private key matching --tls-cert-file.")
	fs.StringVar(&b.ClientCAFile, "client-ca-file", b.ClientCAFile, "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate.")
	fs.StringVar(&b.TokenAuthFile, "token-auth-file", b.TokenAuthFile, "If set, the file that will be used to secure the secure port of the API server via token authentication.")
	fs.Var(&f.policyFiles, "authorization-policy-file", "RBAC YAML (Roles, ClusterRoles and bindings) evaluated in process. Repeatable.")
	b.addLimitFlags(fs)
	fs.Var(&f.alwaysAllow, "authorization-always-allow-paths", "A list of HTTP paths to skip during authorization, i.e. these are authorized without contacting the 'core' kubernetes server. Default /healthz,/readyz,/livez.")

	fs.StringVar(&b.EncryptionProviderConfig, "encryption-provider-config", b.EncryptionProviderConfig, "The file containing configuration for encryption providers to be used for storing secrets in etcd")
	fs.BoolVar(&b.EncryptionProviderConfigAutomaticReload, "encryption-provider-config-automatic-reload", b.EncryptionProviderConfigAutomaticReload, "Determines if the file set by --encryption-provider-config should be automatically reloaded if the disk contents change. Setting this to true disables the ability to uniquely identify distinct KMS plugins via the API server healthz endpoints.")
	format := b.Logging.Format
	if format == "" {
		format = "text"
	}
	fs.StringVar(&b.Logging.Format, "logging-format", format, `Sets the log format. Permitted formats: "json", "text".`)
	fs.IntVar(&b.Logging.Verbosity, "v", b.Logging.Verbosity, "number for the log level verbosity")
	fs.StringVar(&b.Logging.VModule, "vmodule", b.Logging.VModule, "comma-separated list of pattern=N settings for file-filtered logging")
	flush := b.Logging.FlushFrequency
	if flush == 0 {
		flush = 5 * time.Second
	}
	fs.DurationVar(&b.Logging.FlushFrequency, "log-flush-frequency", flush, "Maximum number of seconds between log flushes (entries are written unbuffered: accepted for kube's arguments, it changes nothing)")
	fs.BoolVar(&f.profiling, "profiling", !b.DisableProfiling, "Enable profiling via web interface host:port/debug/pprof/")
	fs.BoolVar(&b.ContentionProfiling, "contention-profiling", b.ContentionProfiling, "Enable block profiling, if profiling is enabled")
	fs.BoolVar(&f.delegated, "delegated-auth", false, "Delegate authentication and authorization to the cluster (front proxy, TokenReview, SubjectAccessReview), as behind kube-aggregator.")
	fs.StringVar(&f.delegation.AuthenticationKubeconfig, "authentication-kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create tokenreviews.authentication.k8s.io. Empty means in-cluster.")
	fs.BoolVar(&f.skipLookup, "authentication-skip-lookup", false, "If false, the authentication-kubeconfig will be used to lookup missing authentication configuration from the cluster.")
	fs.StringVar(&f.delegation.AuthorizationKubeconfig, "authorization-kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create subjectaccessreviews.authorization.k8s.io. Empty means in-cluster.")
	fs.StringVar(&f.delegation.RequestHeaderClientCAFile, "requestheader-client-ca-file", "", "Root certificate bundle to use to verify client certificates on incoming requests before trusting usernames in headers specified by --requestheader-username-headers.")
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
	b.addFlowControlFlags(fs)

	b.addKubeFlags(fs, f)
	f.audit = audit.AddFlags(fs)
}

// AddPFlags registers the flags of AddFlags on a pflag.FlagSet (the flag
// library of kube's components and cobra), so that --help and the command
// line take them in their --name form, as kube's servers do.
func (b *Builder) AddPFlags(fs *pflag.FlagSet) {
	gfs := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	b.AddFlags(gfs)
	b.flags.pfs = fs
	fs.AddGoFlagSet(gfs)
	nameTypes(fs)
	fs.Usage = sectionedUsage(fs)
}

// givenFlags are the names of the flags given on the command line.
func (f *flagState) givenFlags() map[string]bool {
	given := map[string]bool{}
	if f.pfs != nil {
		f.pfs.Visit(func(fl *pflag.Flag) { given[fl.Name] = true })
	} else if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	}
	return given
}

// applyFlags moves what AddFlags collected into the Builder's fields.
func (b *Builder) applyFlags() error {
	f := b.flags
	if f == nil {
		return nil
	}
	b.applyFlowControlFlags()
	b.DisableProfiling = !f.profiling
	if len(f.policyFiles) > 0 {
		b.AuthorizationPolicyFiles = append(b.AuthorizationPolicyFiles, f.policyFiles...)
	}
	if len(f.alwaysAllow) > 0 {
		b.AlwaysAllowPaths = f.alwaysAllow
	}
	fromCode := fieldsSetInCode{delegation: b.Delegation != nil, requestHeader: b.RequestHeader != nil, oidc: b.OIDC != nil, logger: b.loggerInCode}
	d := f.delegation
	switch {
	case b.Delegation == nil && f.delegated:
		d.SkipLookup = f.skipLookup
		d.RequestHeaderAllowedNames, d.RequestHeaderUsernameHeaders = f.allowedNames, f.usernameHdrs
		d.RequestHeaderGroupHeaders, d.RequestHeaderExtraPrefixes, d.RequestHeaderUIDHeaders = f.groupHdrs, f.extraPrefixes, f.uidHdrs
		b.Delegation = &d
	case b.Delegation == nil && b.RequestHeader == nil && d.RequestHeaderClientCAFile != "":
		b.RequestHeader = &RequestHeader{ClientCAFile: d.RequestHeaderClientCAFile, AllowedNames: f.allowedNames,
			UsernameHeaders: f.usernameHdrs, GroupHeaders: f.groupHdrs, ExtraHeaderPrefixes: f.extraPrefixes, UIDHeaders: f.uidHdrs}
	}
	if b.OIDC == nil && f.oidc.IssuerURL != "" {
		o := f.oidc
		if f.oidcCAFile != "" {
			ca, err := os.ReadFile(f.oidcCAFile)
			if err != nil {
				return fmt.Errorf("--oidc-ca-file: %w", err)
			}
			o.CAData = ca
		}
		o.RequiredClaims = f.oidcRequired
		o.SigningAlgorithms = f.oidcSigningAlg
		b.OIDC = &o
	}
	return errors.Join(b.applyAuditFlags(), b.applyKubeFlags(f.givenFlags()), b.checkFlagEffects(fromCode))
}

// commaList is a flag of comma-separated values; repeating it appends.
type commaList []string

func (l *commaList) String() string { return strings.Join(*l, ",") }
func (l *commaList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// stringMap is a repeatable key=value flag.
type stringMap map[string]string

func (m *stringMap) String() string {
	var parts []string
	for k, v := range *m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (m *stringMap) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	if *m == nil {
		*m = stringMap{}
	}
	(*m)[k] = val
	return nil
}

// audienceFlag sets the OIDC audience (--oidc-client-id).
type audienceFlag authn.OIDCConfig

func (a *audienceFlag) String() string { return strings.Join(a.Audiences, ",") }
func (a *audienceFlag) Set(v string) error {
	a.Audiences = []string{v}
	return nil
}
