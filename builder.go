// This file holds the Builder: the declaration of a server (resources,
// storage, TLS, identity, observability) and Build, which checks all of it at
// once and assembles the stage chain.

package annex

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	"github.com/annexapi/annex/internal/stack"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
)

// Builder declares a server. The zero value plus at least one resource is a
// working standalone server: self-signed TLS, a bbolt store, an admin
// kubeconfig, all in DataDir. Every field's doc says what its zero value means.
type Builder struct {
	// Name names the server in logs and in the kubeconfig it writes. Zero
	// means "annex".
	Name string
	// Resources are the served resources. A resource with a nil Storage is
	// kept in the default store; a store given on a resource that has a
	// Start(ctx) error method is started by Run, like the default store.
	Resources []rest.Resource
	// Storage is the default store. Nil means a bbolt file,
	// <DataDir>/storage.db, opened by Build and closed when Run returns. A
	// store with a Start(ctx) error method (compaction) is started by Run; the
	// caller closes a store it gave.
	Storage storage.Interface

	// DisableWatchCache serves reads and watches straight from storage
	// instead of from the in-memory watch cache (package watch) every resource
	// gets by default.
	DisableWatchCache bool

	// DataDir keeps what a standalone server generates: certificates, the
	// kubeconfig and the default store. Zero means ".annex".
	DataDir string
	// BindAddress is the address to listen on. Zero means all interfaces
	// (0.0.0.0), as kube-apiserver.
	BindAddress string
	// SecurePort is the port to listen on. Zero means 8443.
	SecurePort int
	// Listener, when set, is used instead of BindAddress and SecurePort
	// (tests pass one on port 0). The server owns it: a failed Build closes
	// it, as Run does when it returns.
	Listener net.Listener

	// CertFile and KeyFile are the serving certificate and key, reloaded when
	// they change. Zero means a self-signed CA and serving certificate
	// generated in <DataDir>/certs, valid for localhost and ServingHosts.
	CertFile string
	KeyFile  string
	// ServingHosts are extra names and IPs of the generated serving
	// certificate (e.g. "metrics.kube-system.svc").
	ServingHosts []string
	// ClientCAFile is the CA bundle client certificates are verified
	// against, reloaded when it changes. Zero means standalone mode: a client
	// CA generated in <DataDir>/certs, an admin client certificate (user
	// "admin", group system:masters) and <DataDir>/kubeconfig.
	ClientCAFile string

	// Delegation, when set, delegates authentication and authorization to
	// the cluster (a server behind kube-aggregator). Nil means standalone.
	Delegation *Delegation
	// RequestHeader, when set, trusts a front proxy in standalone mode
	// (kube-apiserver's --requestheader-* flags without a cluster); see
	// requestheader.go. Nil means none. A delegated server configures its
	// front proxy in Delegation instead.
	RequestHeader *RequestHeader
	// TokenAuthFile is a static bearer token file in kube's CSV format
	// (token,user,uid,"group1,group2"; --token-auth-file). Empty means none.
	TokenAuthFile string
	// OIDC, when set, authenticates bearer tokens issued by an OpenID
	// Connect provider.
	OIDC *authn.OIDCConfig
	// AuthorizationPolicyFiles are RBAC YAML files (Roles, ClusterRoles and
	// their bindings, rbac.authorization.k8s.io/v1) evaluated in process.
	AuthorizationPolicyFiles []string
	// AlwaysAllowPaths are non-resource paths everyone may get
	// (--authorization-always-allow-paths). Nil means /healthz, /livez, /readyz.
	AlwaysAllowPaths []string
	// Authenticator replaces the authentication built from the fields above;
	// setting it together with TokenAuthFile, OIDC or Delegation is an
	// error (ClientCAFile still names the CAs asked for in the handshake).
	// Nil means: front proxy (delegated), x509 client certificates, bearer
	// tokens (token file, OIDC, TokenReview), and anonymous access to the
	// health paths only.
	Authenticator authn.Authenticator
	// Authorizer replaces the authorization built from the fields above;
	// setting it together with AuthorizationPolicyFiles, AlwaysAllowPaths or
	// Delegation is an error. Nil means: the group system:masters may do anything, everyone may get
	// AlwaysAllowPaths, then RBAC files and SubjectAccessReview (delegated).
	Authorizer authz.Authorizer

	// Mutators and Validators are admission plugins written in Go. They run
	// before the admission policies and webhooks of the files below.
	Mutators   []admission.Mutator
	Validators []admission.Validator
	// AdmissionPolicyFiles are YAML files of ValidatingAdmissionPolicy and
	// MutatingAdmissionPolicy objects, their bindings and params
	// (admissionregistration.k8s.io).
	AdmissionPolicyFiles []string
	// AdmissionWebhookFiles are YAML files of MutatingWebhookConfiguration
	// and ValidatingWebhookConfiguration objects.
	AdmissionWebhookFiles []string

	// Audit configures the audit stage (package audit), right after
	// authentication: a Policy and a backend (Log or Webhook) turn it on.
	// Zero means no audit, as kube-apiserver without --audit-policy-file.
	// The --audit-* flags (AddFlags) set Policy, Log and Webhook when
	// --audit-policy-file is given. A zero Registerer or Logger means the
	// Builder's; a nil Stages means the chain's trace, timed while audit is
	// on (ChainOptions.StageLatencies), for the annex.dev/stage-latencies
	// and annex.dev/rejected-by annotations. Build checks it in its first
	// phase (audit.Config.Validate) and Run starts the Auditor, stopping it
	// only after the server drained, so every buffered event is written
	// before Run returns.
	Audit audit.Config

	// Logger receives the server's logs. Nil means the logger Logging
	// describes (by default Info and above, one readable line each on
	// stderr; see ServerLogger); zap.NewNop() silences the server.
	Logger *zap.Logger
	// Logging configures the logger made when Logger is nil, as kube's
	// logging flags do (--logging-format, -v, --vmodule,
	// --log-flush-frequency); its verbosity can be changed at run time on
	// /debug/flags/v.
	Logging Logging
	// Registerer receives the server's metrics, served on /metrics when it is
	// also a prometheus.Gatherer. Nil means a registry of the server's own,
	// with the Go and process collectors, served on /metrics.
	Registerer prometheus.Registerer

	// DisableProfiling turns off /debug/pprof/ (Go's profiles, behind
	// authorization, as kube-apiserver's --profiling, on by default).
	DisableProfiling bool
	// ContentionProfiling turns on the block and mutex profiles
	// (--contention-profiling): a process-wide runtime setting, made at
	// Build.
	ContentionProfiling bool

	// EncryptionProviderConfig is an apiserver.config.k8s.io/v1
	// EncryptionConfiguration file (--encryption-provider-config): the
	// values of the resources it names are encrypted at rest in the store
	// the Builder opens (bbolt in DataDir), with kube's providers and stored
	// forms (aesgcm, aescbc, secretbox, identity; KMS is refused). Empty
	// means no encryption. A Storage given to the Builder takes its
	// transformer in its own options (value.LoadEncryptionConfigurationFile
	// gives it): setting both is a Build error.
	EncryptionProviderConfig string
	// EncryptionProviderConfigAutomaticReload re-reads the file every
	// minute and switches to it when it changed and is valid, as kube's
	// --encryption-provider-config-automatic-reload.
	EncryptionProviderConfigAutomaticReload bool

	// CertDir is where the self-signed serving certificate and the admin
	// client certificate are generated when no certificate files are given
	// (--cert-dir). Empty means <DataDir>/certs.
	CertDir string
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
	// DisableHTTP2Serving offers HTTP/1.1 only (--disable-http2-serving).
	DisableHTTP2Serving bool
	// PermitPortSharing and PermitAddressSharing bind with SO_REUSEPORT and
	// SO_REUSEADDR (--permit-port-sharing, --permit-address-sharing).
	PermitPortSharing, PermitAddressSharing bool
	// DebugSocketPath serves /debug/pprof/ on a unix socket at this path,
	// without authentication or authorization (--debug-socket-path).
	DebugSocketPath string
	// WatchCacheSizes sets the events kept by the watch cache of the
	// resources it names, "plural.group" (--watch-cache-sizes). Others
	// keep the default.
	WatchCacheSizes map[string]int
	// StorageDBMetricPollInterval is how often apiserver_storage_db_total_size_in_bytes
	// is read from the stores that know their size
	// (--etcd-db-metric-poll-interval). Zero means 30s; negative, never.
	StorageDBMetricPollInterval time.Duration
	// DeleteCollectionWorkers is how many deletes of a DeleteCollection
	// run at once (--delete-collection-workers). Zero means 1.
	DeleteCollectionWorkers int
	// AdmissionControlConfigFile is kube's AdmissionConfiguration
	// (--admission-control-config-file): the webhook plugins'
	// WebhookAdmissionConfiguration names a kubeconfig with the
	// credentials presented to each webhook (users named after the hosts).
	AdmissionControlConfigFile string
	// DisabledAdmissionPlugins turns off admission plugins by kube's names
	// (--disable-admission-plugins): NamespaceLifecycle,
	// MutatingAdmissionPolicy, ValidatingAdmissionPolicy,
	// MutatingAdmissionWebhook, ValidatingAdmissionWebhook.
	DisabledAdmissionPlugins []string

	// TracingConfigFile is kube's TracingConfiguration file
	// (--tracing-config-file); Tracing is the same in code. Either exports a
	// span per request, per stage and per storage call through
	// TraceExporter, which must then be set: otlp.GRPCExporter is
	// kube-apiserver's OTLP/gRPC (a separate package, so that programs that
	// do not trace do not link gRPC).
	TracingConfigFile string
	Tracing           *TracingConfiguration
	TraceExporter     TraceExporter

	// DisableManagedFields turns field management off: no
	// metadata.managedFields is recorded and server-side apply
	// (application/apply-patch+yaml) answers 415, which saves the CPU and
	// bytes tracking costs on every write. The default tracks every write
	// as kube-apiserver does (which cannot be turned off there).
	DisableManagedFields bool

	// DisableResponseCompression sends every response uncompressed
	// (--feature-gates=APIResponseCompression=false). The default, as
	// kube-apiserver's, gzips a response body larger than 128 KiB for a
	// client that accepts gzip (client-go and kubectl do): large LISTs cross
	// the network in about a tenth of the bytes, for more server CPU.
	DisableResponseCompression bool

	// RequestTimeout bounds non-long-running requests and graceful shutdown.
	// Zero means 60s.
	RequestTimeout time.Duration
	// MinRequestTimeout is the base of a watch's duration when the client
	// gives no timeoutSeconds. Zero means 1800s.
	MinRequestTimeout time.Duration
	// MaxRequestBodyBytes limits request bodies. Zero means 3 MiB.
	MaxRequestBodyBytes int64
	// HTTP2MaxStreamsPerConnection is how many concurrent streams (requests
	// and watches) a client may open on one HTTP/2 connection
	// (--http2-max-streams-per-connection). Zero means 1000, kube-apiserver's.
	HTTP2MaxStreamsPerConnection int
	// ShutdownDelay is how long the server keeps serving, with /readyz
	// failing, after Run's context ends, so load balancers stop sending
	// requests first. Zero means none.
	ShutdownDelay time.Duration
	// ShutdownSendRetryAfter keeps the listener open once shutdown starts
	// (after ShutdownDelay) until the requests in flight are done, answering
	// new ones 429 with Retry-After and Connection: close
	// (--shutdown-send-retry-after).
	ShutdownSendRetryAfter bool
	// ShutdownWatchTerminationGracePeriod is how long open watches get to
	// end once shutdown starts (--shutdown-watch-termination-grace-period).
	// Zero means they are ended at once.
	ShutdownWatchTerminationGracePeriod time.Duration
	// GoAwayChance is the probability (0 to 0.02) that a request's HTTP/2
	// connection is told to go away after the response (--goaway-chance),
	// so that clients spread over replicas. Zero means never.
	GoAwayChance float64

	// FlowControl configures API priority and fairness, the flowcontrol
	// stage (package flowcontrol; flags --enable-priority-and-fairness,
	// --max-requests-inflight, --max-mutating-requests-inflight,
	// --flowcontrol-config-file). The zero value is kube's default: on, with
	// 400 + 200 seats and kube's mandatory and suggested FlowSchemas and
	// PriorityLevelConfigurations, which standalone are the whole
	// configuration (no cluster needed). In delegated mode the server follows
	// the cluster's objects (list and watch, the last good ones kept while the
	// cluster is unreachable; its identity needs get, list and watch on
	// flowschemas and prioritylevelconfigurations in
	// flowcontrol.apiserver.k8s.io), so ConfigFiles and Objects are then an
	// error, as they are with Disabled, which applies kube's two max-in-flight
	// limits instead. Build fills the nil Registerer, Logger, Cluster
	// (delegated) and ObjectCounter (the stores' object counts, refreshed
	// every minute). The health paths are never queued nor rejected; the
	// debug dumps are served under FlowControlDebugPath.
	FlowControl flowcontrol.Config

	// ReadyChecks are added to /readyz (and /healthz).
	ReadyChecks []healthz.Check
	// Stages are user stages inserted into the table of stages.go, each
	// after the named stage; Build rejects one whose Needs no earlier stage
	// provides, with Chain's error.
	Stages []InsertedStage
	// Version is served on /version. Zero fields are filled from the build.
	Version VersionInfo

	// flags holds what AddFlags registered, applied at Build.
	flags *flagState
	// logs is the logger Logging describes, made once (ServerLogger).
	logs *builtLogger
	// loggerInCode is true when Logger was set by the program (Build's
	// copy); loggingErr is why Logging made no logger.
	loggerInCode bool
	loggingErr   error
}

// builtLogger is the logger of Logging and the level /debug/flags/v sets.
type builtLogger struct {
	log   *zap.Logger
	level zap.AtomicLevel
	err   error
}

// ServerLogger returns the server's logger: Logger when set, else the one
// Logging describes (the logging flags), on stderr, made once and used by
// Build too; a program logs its own lines with it after parsing its flags.
func (b *Builder) ServerLogger() (*zap.Logger, error) {
	if b.Logger != nil {
		return b.Logger, nil
	}
	if b.logs == nil {
		var out io.Writer = os.Stderr
		if b.Logging.Output != nil {
			out = b.Logging.Output
		}
		log, level, err := newLogger(b.Logging, zapcore.AddSync(out))
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
	if c.SecurePort == 0 {
		c.SecurePort = 8443
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 60 * time.Second
	}
	c.loggerInCode = c.Logger != nil
	if c.Logger == nil {
		log, err := b.ServerLogger()
		if err != nil {
			c.loggingErr = err
			log = defaultLogger(os.Stderr)
		}
		c.Logger = log
		c.logs = b.logs
	}
	if c.Registerer == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		c.Registerer = reg
	}
	return &c
}

// defaultLogger is the Logger of a Builder that has none: Info and above,
// one readable line per entry on stderr (where the server serves, the
// kubeconfig it wrote, what failed).
func defaultLogger(w zapcore.WriteSyncer) *zap.Logger {
	log, _, _ := newLogger(Logging{}, w) // the zero Logging is valid
	return log
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
		if c.Listener != nil { // Build owns it, failed or not
			_ = c.Listener.Close()
		}
		return nil, err
	}
	return c.assemble(p)
}

// assemble is Build's second phase, on a declaration validate accepted.
func (c *Builder) assemble(p *plan) (*Server, error) {
	s := &Server{name: c.Name, log: c.Logger, requestTimeout: c.RequestTimeout, shutdownDelay: c.ShutdownDelay,
		drain: &drain{retryAfter: c.ShutdownSendRetryAfter, goaway: c.GoAwayChance}, watchGrace: c.ShutdownWatchTerminationGracePeriod}
	var reg *trackingRegisterer
	if c.Registerer != nil {
		reg = &trackingRegisterer{Registerer: c.Registerer}
		c.Registerer = reg
	}
	ok := false
	defer func() {
		if !ok {
			s.closeAll()
			if reg != nil {
				reg.unregisterAll()
			}
		}
	}()

	if c.usesDataDir() { // else nothing goes there: no directory is made
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
	}
	needsStore := false // computed resources (Getter/Lister) have no storage
	for _, r := range c.Resources {
		needsStore = needsStore || (r.Storage == nil && r.Getter == nil && r.Lister == nil)
	}
	if c.EncryptionProviderConfig != "" && c.Storage == nil && !needsStore {
		return nil, errors.New("EncryptionProviderConfig: has no effect: no resource uses the store the Builder opens")
	}
	if p.tracing != nil {
		t, err := newTracer(p.tracing, c.Name, c.TraceExporter)
		if err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		s.tracer = t
		s.closers = append(s.closers, t.shutdown)
	}
	var sm *storageMetrics
	if c.Registerer != nil {
		var err error
		if sm, err = newStorageMetrics(c.Registerer); err != nil {
			return nil, err
		}
	}
	if c.Storage == nil && needsStore {
		tr, err := s.encryption(c)
		if err != nil {
			return nil, err
		}
		var observers []storage.RequestObserver
		if sm != nil {
			observers = append(observers, sm.observer())
		}
		if s.tracer != nil {
			observers = append(observers, s.tracer.observe)
		}
		var observe storage.RequestObserver
		if len(observers) > 0 {
			observe = func(ctx context.Context, op, key string, start time.Time, took time.Duration) {
				for _, o := range observers {
					o(ctx, op, key, start, took)
				}
			}
		}
		st, err := openDefaultStore(filepath.Join(c.DataDir, "storage.db"), c.Logger, tr, observe)
		if err != nil {
			return nil, err
		}
		c.Storage = st
		s.closers = append(s.closers, st.Close)
	}
	// Every store under a resource that has a Start(ctx) error method
	// (periodic compaction) is started by Run, the default one and those
	// given per resource alike; the caller closes a store it gave.
	if sm != nil && c.StorageDBMetricPollInterval >= 0 {
		var sized []storage.SizeReporter
		seen := map[storage.Interface]bool{}
		for _, st := range c.stores() {
			if sr, ok := st.(storage.SizeReporter); ok && !seen[st] {
				seen[st] = true
				sized = append(sized, sr)
			}
		}
		interval := c.StorageDBMetricPollInterval
		if interval == 0 {
			interval = 30 * time.Second
		}
		if len(sized) > 0 {
			s.runners = append(s.runners, sm.pollDBSize(sized, interval))
		}
	}
	started := map[storage.Interface]bool{}
	for _, st := range c.stores() {
		if r, isStarter := st.(starter); isStarter && !started[st] {
			started[st] = true
			s.runners = append(s.runners, r.Start)
		}
	}
	resources := make([]rest.Resource, len(c.Resources))
	for i, r := range c.Resources {
		if r.Storage == nil && r.Getter == nil && r.Lister == nil {
			r.Storage = c.Storage
		}
		resources[i] = r
	}
	if !c.DisableWatchCache {
		if err := s.addWatchCaches(c, resources); err != nil {
			return nil, err
		}
	}

	fd, err := s.buildFrontDoor(c, p)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := s.setupTLS(c, p, fd.advertised)
	if err != nil {
		return nil, err
	}

	ln := c.Listener
	if ln == nil {
		lc := net.ListenConfig{Control: socketOptions(c.PermitPortSharing, c.PermitAddressSharing)}
		ln, err = lc.Listen(context.Background(), "tcp", net.JoinHostPort(c.BindAddress, strconv.Itoa(c.SecurePort)))
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
	}
	s.listener = ln
	s.closers = append(s.closers, func() error { _ = ln.Close(); return nil })
	if c.DebugSocketPath != "" {
		dl, ds, err := debugSocket(c.DebugSocketPath)
		if err != nil {
			return nil, fmt.Errorf("--debug-socket-path: %w", err)
		}
		s.closers = append(s.closers, func() error { _ = dl.Close(); return nil })
		s.runners = append(s.runners, func(ctx context.Context) error {
			go func() { <-ctx.Done(); _ = ds.Close() }()
			if err := ds.Serve(dl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}

	if s.standalone != nil && s.standalone.admin != nil {
		if err := s.writeKubeconfig(c); err != nil {
			return nil, err
		}
	}

	handler, err := s.buildHandler(c, p, resources, fd)
	if err != nil {
		return nil, err
	}
	handshakeErrors, err := newHandshakeErrors(c.Registerer)
	if err != nil {
		return nil, err
	}
	s.chain = handler
	s.httpServer = &http.Server{
		Handler:           grownStack(s.drain.wrap(handler)),
		TLSConfig:         tlsCfg,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
		HTTP2:             http2Config(c.HTTP2MaxStreamsPerConnection),
		ErrorLog:          httpErrorLog(c.Logger.Named("http"), handshakeErrors),
	}
	ok = true
	return s, nil
}

// stores returns the storage of every resource as declared, before any
// watch cache wraps it: the Builder's default store for resources without one.
func (b *Builder) stores() []storage.Interface {
	out := make([]storage.Interface, 0, len(b.Resources))
	for _, r := range b.Resources {
		if r.Storage != nil {
			out = append(out, r.Storage)
		} else if b.Storage != nil && r.Getter == nil && r.Lister == nil {
			out = append(out, b.Storage)
		}
	}
	return out
}

// starter is a long-running part of a store (periodic compaction).
type starter interface {
	Start(ctx context.Context) error
}

// grownStack runs h with its goroutine's stack grown first (package
// internal/stack): net/http serves each request on a fresh goroutine.
// Writes, which go deeper, get the larger stack.
func grownStack(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			stack.GrowLarge()
		default:
			stack.Grow()
		}
		h.ServeHTTP(w, r)
	})
}
