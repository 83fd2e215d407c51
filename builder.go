// This file holds the Builder: the declaration of a server, grouped by
// concern (serving, authentication, authorization, admission, storage,
// limits, shutdown, audit, flow control, observability), and Build, which
// checks all of it at once (validate.go) and then assembles the server in
// named steps (assemble.go).

package annex

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/authn"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/internal/logs"
	"github.com/annexapi/annex/otlp"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/postgres"
	"github.com/annexapi/annex/storage/value"
)

// Builder declares a server. The zero value plus at least one resource is a
// working standalone server: self-signed TLS, a bbolt store, an admin
// kubeconfig, all in DataDir. Every field's doc says what its zero value
// means. Package kubeflags sets these fields from kube's command-line flags.
type Builder struct {
	// Name names the server in logs and in the kubeconfig it writes. Zero
	// means "annex".
	Name string
	// Resources are the served resources. A resource with a nil Storage (and
	// no Getter or Lister) is kept in the default store (Storage).
	Resources []rest.Resource
	// DataDir keeps what a standalone server generates: certificates, the
	// kubeconfig and the default store. Zero means ".annex".
	DataDir string

	Serving        Serving
	Authentication Authentication
	Authorization  Authorization
	Admission      Admission
	Storage        Storage
	Limits         Limits
	Shutdown       Shutdown
	// Registration puts the server behind kube-aggregator: the Service in
	// front of it and, on request, its APIServices.
	Registration Registration
	// Audit configures the audit stage (package audit), right after
	// authentication: a Policy and a backend (Log or Webhook) turn it on.
	// Zero means no audit, as kube-apiserver without --audit-policy-file.
	// A zero Registerer or Logger means the Builder's; a nil Stages means
	// the chain's trace (audit.TraceStages), timed while audit is on, for
	// the annex.dev/stage-latencies and annex.dev/rejected-by annotations.
	// Run stops the Auditor only after the server drained, so every
	// buffered event is written before Run returns.
	Audit audit.Config
	// FlowControl configures API priority and fairness (package
	// flowcontrol). The zero value is kube's default: on, with 400 + 200
	// seats and kube's mandatory and suggested FlowSchemas and
	// PriorityLevelConfigurations, which standalone are the whole
	// configuration. In delegated mode the server follows the cluster's
	// objects (list and watch; its identity needs get, list and watch on
	// flowschemas and prioritylevelconfigurations), so ConfigFiles and
	// Objects are then an error, as they are with Disabled, which applies
	// kube's two max-in-flight limits instead. Build fills the nil
	// Registerer, Logger, Cluster (delegated) and ObjectCounter (the stores'
	// object counts, refreshed every minute). The health paths are never
	// queued nor rejected; the debug dumps are served under
	// FlowControlDebugPath.
	FlowControl   flowcontrol.Config
	Observability Observability

	// Stages are user stages inserted into the table of stages.go, each
	// after the named stage; Build rejects one whose Needs no earlier stage
	// provides, with Chain's error.
	Stages []InsertedStage

	// logs is the logger Logging describes, made once (ServerLogger).
	logs *builtLogger
	// loggerInCode is true when Logger was set by the program (Build's
	// copy); loggingErr is why Logging made no logger.
	loggerInCode bool
	loggingErr   error
}

// Serving configures the listener, TLS and what is served beside the API.
type Serving struct {
	// BindAddress is the address to listen on (--bind-address). Zero means
	// all interfaces (0.0.0.0), as kube-apiserver.
	BindAddress string
	// SecurePort is the port to listen on (--secure-port). Zero means 8443.
	SecurePort int
	// Listener, when set, is used instead of BindAddress and SecurePort
	// (tests pass one on port 0). The server owns it: a failed Build closes
	// it, as Run does when it returns.
	Listener net.Listener
	// CertFile and KeyFile are the serving certificate and key
	// (--tls-cert-file, --tls-private-key-file), reloaded when they change.
	// Zero means a self-signed CA and serving certificate generated in
	// CertDir, valid for localhost and Hosts.
	CertFile, KeyFile string
	// CertDir is where the self-signed serving certificate and the admin
	// client certificate are generated when no certificate files are given
	// (--cert-dir). Empty means <DataDir>/certs.
	CertDir string
	// Hosts are extra names and IPs of the generated serving certificate
	// (e.g. "metrics.kube-system.svc").
	Hosts []string
	// TLSMinVersion, TLSCipherSuites and TLSCurvePreferences restrict the
	// handshake (--tls-min-version, --tls-cipher-suites,
	// --tls-curve-preferences). Zero values mean TLS 1.2, Go's secure
	// suites, Go's curves.
	TLSMinVersion       uint16
	TLSCipherSuites     []uint16
	TLSCurvePreferences []tls.CurveID
	// SNICertKeys are served to clients that ask for their names
	// (--tls-sni-cert-key); others get the default certificate.
	SNICertKeys []SNICertKey
	// DisableHTTP2 offers HTTP/1.1 only (--disable-http2-serving).
	DisableHTTP2 bool
	// PermitPortSharing and PermitAddressSharing bind with SO_REUSEPORT and
	// SO_REUSEADDR (--permit-port-sharing, --permit-address-sharing).
	PermitPortSharing, PermitAddressSharing bool
	// DisableResponseCompression sends every response uncompressed
	// (--feature-gates=APIResponseCompression=false). The default, as
	// kube-apiserver's, gzips a response body larger than 128 KiB for a
	// client that accepts gzip.
	DisableResponseCompression bool
	// ReadyChecks are added to /readyz (and /healthz).
	ReadyChecks []healthz.Check
	// Version is served on /version. Zero fields are filled from the build.
	Version VersionInfo
}

// SNICertKey is one --tls-sni-cert-key: a certificate and key served to
// clients that ask for one of Names (wildcards allowed in the first label),
// or for the names of the certificate itself when Names is empty.
type SNICertKey struct {
	CertFile, KeyFile string
	Names             []string
}

// Authentication configures who a request comes from. All zero means
// standalone: client certificates of a generated client CA (with an admin
// certificate and kubeconfig in DataDir), and anonymous access to the
// health paths only.
type Authentication struct {
	// ClientCAFile is the CA bundle client certificates are verified
	// against (--client-ca-file), reloaded when it changes. Zero means
	// standalone mode's generated client CA.
	ClientCAFile string
	// Delegation, when set, delegates authentication and authorization to
	// the cluster (a server behind kube-aggregator). Nil means standalone.
	Delegation *Delegation
	// RequestHeader, when set, trusts a front proxy in standalone mode
	// (kube-apiserver's --requestheader-* flags without a cluster). Nil
	// means none. A delegated server configures its front proxy in
	// Delegation.RequestHeader instead.
	RequestHeader *RequestHeader
	// TokenAuthFile is a static bearer token file in kube's CSV format
	// (token,user,uid,"group1,group2"; --token-auth-file). Empty means none.
	TokenAuthFile string
	// OIDC, when set, authenticates bearer tokens issued by an OpenID
	// Connect provider (the --oidc-* flags).
	OIDC *authn.OIDCConfig
	// Authenticator replaces the authentication built from the fields above;
	// setting it together with TokenAuthFile, OIDC, RequestHeader or
	// Delegation is an error (ClientCAFile still names the CAs asked for in
	// the handshake).
	Authenticator authn.Authenticator
}

// Authorization configures what a request may do. All zero means: the group
// system:masters may do anything, everyone may get the health paths,
// discovery and /version and ask about themself, as kube's bootstrap policy
// grants; delegated, the rest is asked of the cluster (SubjectAccessReview).
type Authorization struct {
	// PolicyFiles are RBAC YAML files (Roles, ClusterRoles and their
	// bindings, rbac.authorization.k8s.io/v1) evaluated in process
	// (--authorization-policy-file).
	PolicyFiles []string
	// AlwaysAllowPaths are non-resource paths everyone may get
	// (--authorization-always-allow-paths). Nil means /healthz, /livez,
	// /readyz.
	AlwaysAllowPaths []string
	// Authorizer replaces the authorization built from the fields above;
	// setting it together with PolicyFiles, AlwaysAllowPaths or
	// Authentication.Delegation is an error.
	Authorizer authz.Authorizer
}

// Admission configures the admission chain: Go plugins first, then the
// admission policies, then the webhooks (kube's order), each resource's
// schema, and in delegated mode NamespaceLifecycle against the cluster.
type Admission struct {
	// Mutators and Validators are admission plugins written in Go.
	Mutators   []admission.Mutator
	Validators []admission.Validator
	// PolicyFiles are YAML files of ValidatingAdmissionPolicy and
	// MutatingAdmissionPolicy objects, their bindings and params
	// (admissionregistration.k8s.io).
	PolicyFiles []string
	// WebhookFiles are YAML files of MutatingWebhookConfiguration and
	// ValidatingWebhookConfiguration objects.
	WebhookFiles []string
	// ConfigFile is kube's AdmissionConfiguration
	// (--admission-control-config-file): the webhook plugins'
	// WebhookAdmissionConfiguration names a kubeconfig with the credentials
	// presented to each webhook (users named after the hosts).
	ConfigFile string
	// DisabledPlugins turns off admission plugins by kube's names
	// (--disable-admission-plugins; admission.PluginNames lists them),
	// those of Mutators and Validators included (by admission.Named).
	DisabledPlugins []string
}

// Storage configures the default store and what every store gets.
type Storage struct {
	// Store is the default store. Nil means Open's, or else a bbolt file,
	// <DataDir>/storage.db, opened by Build and closed when Run returns. A
	// store with a Start(ctx) error method (compaction) is started by Run;
	// the caller closes a store it gave.
	Store storage.Interface
	// Open, when set and Store is nil, opens the default store in Build's
	// second phase (package kubeflags sets it for --etcd-servers); Run
	// closes it when it has a Close() error method. Nil means bbolt.
	Open func(StoreOptions) (storage.Interface, error)
	// Postgres, when its DSN is set and Store and Open are not, keeps the
	// objects in PostgreSQL (package storage/postgres; --storage-backend
	// postgres --postgres-dsn). The DSN's password is never logged.
	Postgres postgres.Config
	// DisableWatchCache serves reads and watches straight from storage
	// instead of from the in-memory watch cache (package watch) every
	// resource gets by default (--watch-cache=false).
	DisableWatchCache bool
	// WatchCacheSizes sets the events kept by the watch cache of the
	// resources it names, "plural.group" (--watch-cache-sizes).
	WatchCacheSizes map[string]int
	// ComputedWatchLinger is how long the watch cache of a computed
	// resource with Events (rest.Resource) outlives its last watcher: it
	// exists only while someone watches (watch.OnDemand), and a client that
	// re-watches within it finds its resourceVersion still served. Zero
	// means watch.DefaultLinger (30s); negative, once started it stays.
	ComputedWatchLinger time.Duration
	// DBMetricPollInterval is how often
	// apiserver_storage_db_total_size_in_bytes is read from the stores that
	// know their size (--etcd-db-metric-poll-interval). Zero means 30s;
	// negative, never.
	DBMetricPollInterval time.Duration
	// EncryptionProviderConfig is an apiserver.config.k8s.io/v1
	// EncryptionConfiguration file (--encryption-provider-config): the
	// values of the resources it names are encrypted at rest in the store
	// the Builder opens, with kube's providers and stored forms (aesgcm,
	// aescbc, secretbox, identity; KMS is refused). Empty means no
	// encryption. A Store given takes its transformer in its own options
	// (value.LoadEncryptionConfigurationFile gives it): setting both is a
	// Build error.
	EncryptionProviderConfig string
	// EncryptionProviderConfigAutomaticReload re-reads the file every
	// minute and switches to it when it changed and is valid
	// (--encryption-provider-config-automatic-reload).
	EncryptionProviderConfigAutomaticReload bool
	// DisableManagedFields turns field management off: no
	// metadata.managedFields is recorded and server-side apply answers 415,
	// which saves the CPU and bytes tracking costs on every write.
	DisableManagedFields bool
}

// StoreOptions is what Build gives Storage.Open: the store's logger, the
// encryption of EncryptionProviderConfig (nil for none) and the observer
// of storage metrics and tracing (nil for none).
type StoreOptions struct {
	Logger      *zap.Logger
	Transformer value.Transformer
	Observer    storage.RequestObserver
}

// Limits bound requests.
type Limits struct {
	// RequestTimeout bounds non-long-running requests and graceful shutdown
	// (--request-timeout). Zero means 60s.
	RequestTimeout time.Duration
	// MinRequestTimeout is the base of a watch's duration when the client
	// gives no timeoutSeconds (--min-request-timeout). Zero means 1800s.
	MinRequestTimeout time.Duration
	// MaxRequestBodyBytes limits request bodies. Zero means 3 MiB.
	MaxRequestBodyBytes int64
	// HTTP2MaxStreamsPerConnection is how many concurrent streams (requests
	// and watches) a client may open on one HTTP/2 connection
	// (--http2-max-streams-per-connection). Zero means 1000, kube's.
	HTTP2MaxStreamsPerConnection int
	// DeleteCollectionWorkers is how many deletes of a DeleteCollection run
	// at once (--delete-collection-workers). Zero means 1.
	DeleteCollectionWorkers int
}

// Shutdown configures graceful shutdown. All zero means: /readyz fails,
// watches end and in-flight requests get up to Limits.RequestTimeout.
type Shutdown struct {
	// Delay is how long the server keeps serving, with /readyz failing,
	// after Run's context ends, so load balancers stop sending requests
	// first (--shutdown-delay-duration). Zero means none.
	Delay time.Duration
	// SendRetryAfter keeps the listener open once shutdown starts (after
	// Delay) until the requests in flight are done, answering new ones 429
	// with Retry-After and Connection: close (--shutdown-send-retry-after).
	SendRetryAfter bool
	// WatchTerminationGracePeriod is how long open watches get to end once
	// shutdown starts (--shutdown-watch-termination-grace-period). Zero
	// means they are ended at once.
	WatchTerminationGracePeriod time.Duration
	// GoAwayChance is the probability (0 to 0.02) that a request's HTTP/2
	// connection is told to go away after the response (--goaway-chance),
	// so that clients spread over replicas. Zero means never.
	GoAwayChance float64
}

// Observability configures logs, metrics, traces and profiles.
type Observability struct {
	// Logger receives the server's logs. Nil means the logger Logging
	// describes (by default Info and above, one readable line each on
	// stderr; see ServerLogger); zap.NewNop() silences the server.
	Logger *zap.Logger
	// Logging configures the logger made when Logger is nil, as kube's
	// logging flags do; its verbosity can be changed at run time on
	// /debug/flags/v.
	Logging Logging
	// Registerer receives the server's metrics, served on /metrics when it is
	// also a prometheus.Gatherer. Nil means a registry of the server's own,
	// with the Go and process collectors, served on /metrics.
	Registerer prometheus.Registerer
	// TracingConfigFile is kube's TracingConfiguration file
	// (--tracing-config-file); Tracing is the same in code. Either exports a
	// span per request, per stage and per storage call (package otlp)
	// through TraceExporter, which must then be set: otlpgrpc.Exporter is
	// kube-apiserver's OTLP/gRPC.
	TracingConfigFile string
	Tracing           *otlp.Configuration
	TraceExporter     otlp.Exporter
	// DisableProfiling turns off /debug/pprof/ (Go's profiles, behind
	// authorization, as kube-apiserver's --profiling, on by default).
	DisableProfiling bool
	// ContentionProfiling turns on the block and mutex profiles
	// (--contention-profiling): a process-wide runtime setting, made at
	// Build.
	ContentionProfiling bool
	// DebugSocketPath serves /debug/pprof/ on a unix socket at this path,
	// without authentication or authorization (--debug-socket-path).
	DebugSocketPath string
}

// Logging configures the logger Build makes when Observability.Logger is
// nil, as kube's logging flags do (--logging-format, -v, --vmodule,
// --log-flush-frequency). The zero value is kube's default: text,
// verbosity 0, on stderr.
type Logging = logs.Config

// V is the zap level of kube's verbosity n (logr's V(n)).
func V(n int) zapcore.Level { return logs.V(n) }

// builtLogger is the logger of Logging and the level /debug/flags/v sets.
type builtLogger struct {
	log   *zap.Logger
	level zap.AtomicLevel
	err   error
}

// ServerLogger returns the server's logger: Observability.Logger when set,
// else the one Logging describes, made once and used by Build too; a program
// logs its own lines with it after applying its flags.
func (b *Builder) ServerLogger() (*zap.Logger, error) {
	if b.Observability.Logger != nil {
		return b.Observability.Logger, nil
	}
	if b.logs == nil {
		var out = b.Observability.Logging.Output
		if out == nil {
			out = os.Stderr
		}
		log, level, err := logs.New(b.Observability.Logging, zapcore.AddSync(out))
		b.logs = &builtLogger{log: log, level: level, err: err}
	}
	return b.logs.log, b.logs.err
}

// InsertedStage is a user stage and where it goes.
type InsertedStage struct {
	// After names the stage it follows ("" puts it first).
	After string
	Stage Stage
}

func (b *Builder) withDefaults() *Builder {
	c := *b
	c.Resources = slices.Clone(b.Resources)
	if c.Name == "" {
		c.Name = "annex"
	}
	if c.DataDir == "" {
		c.DataDir = ".annex"
	}
	if c.Serving.SecurePort == 0 {
		c.Serving.SecurePort = 8443
	}
	if c.Limits.RequestTimeout <= 0 {
		c.Limits.RequestTimeout = 60 * time.Second
	}
	o := &c.Observability
	c.loggerInCode = o.Logger != nil
	if o.Logger == nil {
		log, err := b.ServerLogger()
		if err != nil {
			c.loggingErr = err
			log, _, _ = logs.New(Logging{}, zapcore.AddSync(os.Stderr)) // the zero Logging is valid
		}
		o.Logger = log
		c.logs = b.logs
	}
	if o.Registerer == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		o.Registerer = reg
	}
	return &c
}

// Build assembles the server in two phases. First it checks the whole
// declaration and returns every problem at once, each naming its field,
// with no side effect: nothing is written, no directory made, no certificate
// generated, no port bound. Then it opens the default store, prepares TLS
// material, writes the standalone kubeconfig and binds the listening socket
// (so the address is known and a busy port fails here). Nothing is served
// until Run.
func (b *Builder) Build() (*Server, error) {
	c := b.withDefaults()
	p, err := c.validate()
	if err != nil {
		if c.Serving.Listener != nil { // Build owns it, failed or not
			_ = c.Serving.Listener.Close()
		}
		return nil, err
	}
	return c.assemble(p)
}

// defaultStore reports whether r is kept in the Builder's default store:
// it declares no store of its own and is not computed on read.
func defaultStore(r rest.Resource) bool {
	return r.Storage == nil && r.Getter == nil && r.Lister == nil
}

// stores returns the storage of every resource as declared, before any
// watch cache wraps it: the default store for resources without one.
func (b *Builder) stores() []storage.Interface {
	out := make([]storage.Interface, 0, len(b.Resources))
	for _, r := range b.Resources {
		if r.Storage != nil {
			out = append(out, r.Storage)
		} else if b.Storage.Store != nil && defaultStore(r) {
			out = append(out, b.Storage.Store)
		}
	}
	return out
}

// usesDefaultStore reports whether a resource is kept in the default store.
func (b *Builder) usesDefaultStore() bool { return slices.ContainsFunc(b.Resources, defaultStore) }

// UsesDataDir reports whether Build writes or reads anything in DataDir: a
// generated serving certificate, the standalone client CA and kubeconfig, or
// the embedded store (package kubeflags refuses --data-dir otherwise).
func (b *Builder) UsesDataDir() bool {
	a := b.Authentication
	if b.Serving.CertFile == "" || a.ClientCAFile == "" && a.Delegation == nil && a.Authenticator == nil {
		return true
	}
	return b.Storage.Store == nil && b.Storage.Open == nil && !b.Storage.Postgres.Enabled() && b.usesDefaultStore()
}

// certDir is where generated certificates go.
func (b *Builder) certDir() string {
	if b.Serving.CertDir != "" {
		return b.Serving.CertDir
	}
	return b.DataDir + string(os.PathSeparator) + "certs"
}

// starter is a long-running part (a store's periodic compaction).
type starter interface {
	Start(ctx context.Context) error
}
