// This file holds the rest of the generic server's flags that
// k8s.io/sample-apiserver's --help lists, each with kube's name, default and
// meaning: serving (--cert-dir, --tls-*, --tls-sni-cert-key,
// --permit-*-sharing, --disable-http2-serving, --debug-socket-path), the
// watch cache, delegation (--kubeconfig,
// --authentication-tolerate-lookup-failure), admission plugins, the
// limits, and the flags that mean nothing for this server, accepted only to
// be refused by Apply with the reason (refusalReason).

package kubeflags

import (
	"crypto/tls"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/authn"
)

func (o *Options) addKubeFlags(fs *flag.FlagSet, b *annex.Builder) {
	k := &o.kube
	fs.DurationVar(&b.Shutdown.Delay, "shutdown-delay-duration", b.Shutdown.Delay, "Time to delay the termination. During that time the server keeps serving requests normally. The endpoints /healthz and /livez will return success, but /readyz immediately returns failure. Graceful termination starts after this delay has elapsed. This can be used to allow load balancer to stop sending traffic to this server.")
	fs.BoolVar(&b.Shutdown.SendRetryAfter, "shutdown-send-retry-after", b.Shutdown.SendRetryAfter, "If true the HTTP Server will continue listening until all non long running request(s) in flight have been drained, during this window all incoming requests will be rejected with a status code 429 and a 'Retry-After' response header, in addition 'Connection: close' response header is set in order to tear down the TCP connection when idle.")
	fs.DurationVar(&b.Shutdown.WatchTerminationGracePeriod, "shutdown-watch-termination-grace-period", b.Shutdown.WatchTerminationGracePeriod, "This option, if set, represents the maximum amount of grace period the apiserver will wait for active watch request(s) to drain during the graceful server shutdown window.")
	fs.Float64Var(&b.Shutdown.GoAwayChance, "goaway-chance", b.Shutdown.GoAwayChance, "To prevent HTTP/2 clients from getting stuck on a single apiserver, randomly close a connection (GOAWAY). The client's other in-flight requests won't be affected, and the client will reconnect, likely landing on a different apiserver after going through the load balancer again. This argument sets the fraction of requests that will be sent a GOAWAY. Min is 0 (off), Max is .02 (1/50 requests); .001 (1/1000) is a recommended starting point.")
	fs.StringVar(&b.Admission.ConfigFile, "admission-control-config-file", b.Admission.ConfigFile, "File with admission control configuration.")
	fs.StringVar(&b.Observability.TracingConfigFile, "tracing-config-file", b.Observability.TracingConfigFile, "File with apiserver tracing configuration.")
	fs.StringVar(&b.Serving.CertDir, "cert-dir", b.Serving.CertDir, "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored. Empty means <data-dir>/certs.")
	fs.StringVar(&k.tlsMinVersion, "tls-min-version", "", "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13")
	fs.Var(&k.tlsCipherSuites, "tls-cipher-suites", "Comma-separated list of cipher suites for the server. If omitted, the default Go cipher suites will be used.")
	fs.Var(&k.tlsCurves, "tls-curve-preferences", "Comma-separated list of numeric Go crypto/tls CurveID values, as the allowed key exchange mechanisms for the server.")
	fs.Var(&k.sniCertKeys, "tls-sni-cert-key", "A pair of x509 certificate and private key file paths, optionally suffixed with a list of domain patterns which are fully qualified domain names, possibly with prefixed wildcard segments. Examples: \"example.crt,example.key\" or \"foo.crt,foo.key:*.foo.com,foo.com\". Repeatable.")
	fs.BoolVar(&b.Serving.PermitPortSharing, "permit-port-sharing", b.Serving.PermitPortSharing, "If true, SO_REUSEPORT will be used when binding the port, which allows more than one instance to bind on the same address and port. [default=false]")
	fs.BoolVar(&b.Serving.PermitAddressSharing, "permit-address-sharing", b.Serving.PermitAddressSharing, "If true, SO_REUSEADDR will be used when binding the port. This allows binding to wildcard IPs like 0.0.0.0 and specific IPs in parallel, and it avoids waiting for the kernel to release sockets in TIME_WAIT state. [default=false]")
	fs.BoolVar(&b.Serving.DisableHTTP2, "disable-http2-serving", b.Serving.DisableHTTP2, "If true, HTTP2 serving will be disabled [default=false]")
	fs.StringVar(&b.Observability.DebugSocketPath, "debug-socket-path", b.Observability.DebugSocketPath, "Use an unprotected (no authn/authz) unix-domain socket for profiling with the given path")
	k.watchCache = !b.Storage.DisableWatchCache
	fs.BoolVar(&k.watchCache, "watch-cache", k.watchCache, "Enable watch caching in the apiserver")
	fs.Var(&k.watchCacheSizes, "watch-cache-sizes", "Watch cache size settings for some resources, comma separated. The individual setting format: resource[.group]#size, where resource is lowercase plural (no version), group is omitted for resources of apiVersion v1 (the legacy core API) and included for others, and size is a number (the events each cache keeps).")
	fs.DurationVar(&k.dbPoll, "etcd-db-metric-poll-interval", 30*time.Second, "The interval of requests to poll etcd (or the embedded bbolt file) and update metric. 0 disables the metric collection")
	fs.IntVar(&k.deleteWorkers, "delete-collection-workers", 1, "Number of workers spawned for DeleteCollection call. These are used to speed up namespace cleanup.")
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server (the namespaces and flowcontrol objects are read with it). Empty means the --authentication-kubeconfig one.")
	fs.BoolVar(&k.tolerateLookup, "authentication-tolerate-lookup-failure", false, "If true, failures to look up missing authentication configuration from the cluster are not considered fatal. Note that this can result in authentication that treats all requests as anonymous.")
	fs.Var(&k.enablePlugins, "enable-admission-plugins", "admission plugins that should be enabled in addition to default enabled ones ("+strings.Join(admission.PluginNames(), ", ")+"). Comma-delimited list of admission plugins: "+strings.Join(admission.PluginNames(), ", ")+".")
	fs.Var(&k.disablePlugins, "disable-admission-plugins", "admission plugins that should be disabled although they are in the default enabled plugins list ("+strings.Join(admission.PluginNames(), ", ")+"). Comma-delimited list of admission plugins: "+strings.Join(admission.PluginNames(), ", ")+".")
	k.gc = true
	fs.BoolVar(&k.gc, "enable-garbage-collector", true, "Enables the generic garbage collector. MUST be synced with the corresponding flag of the kube-controller-manager. (Always true here: deletion leaves dependents to the cluster's garbage collector.)")
	fs.StringVar(&k.storageBackend, "storage-backend", "", "The storage backend for persistence. Options: 'etcd3' (with --etcd-servers), 'postgres' (with --postgres-dsn). Without it objects are in the embedded bbolt file.")
	fs.StringVar(&k.storageMediaType, "storage-media-type", "application/json", "The media type to use to store objects in storage. Supported media types: [application/json]")
	fs.Var(&k.featureGates, "feature-gates", "Comma-separated list of component:key=value pairs that describe feature gates for alpha/experimental features of different components. This server has one: APIResponseCompression=true|false (default true), gzip for responses larger than 128 KiB.")
	fs.Var(&k.emulatedVersions, "emulated-version", "The versions different components emulate their capabilities (APIs, features, ...) of. Not supported: this server serves one version.")
	fs.Var(&k.minCompatVersions, "min-compatibility-version", "The min version of control plane components the server should be compatible with. Not supported: this server serves one version.")
	fs.Var(&k.overrides, "etcd-servers-overrides", "Per-resource etcd servers overrides. Not supported: one etcd cluster serves every resource.")
	k.refusedStrings = map[string]*string{}
	k.refusedStrings["livez-grace-period"] = new(string)
	fs.StringVar(k.refusedStrings["livez-grace-period"], "livez-grace-period", "", "This option represents the maximum amount of time it should take for apiserver to complete its startup sequence and become live. Not applicable: /livez checks nothing that starts late here.")
	for _, r := range []struct{ name, usage string }{
		{"egress-selector-config-file", "File with apiserver egress selector configuration. Not supported: this server dials the cluster and webhooks directly."},
		{"lease-reuse-duration-seconds", "The time in seconds that each lease is reused. Not supported: no object here is stored with an etcd lease."},
		{"etcd-count-metric-poll-period", "Frequency of polling etcd for number of resources per type. Not supported: apiserver_storage_objects is kept by the watch cache, not polled."},
	} {
		v := new(string)
		k.refusedStrings[r.name] = v
		fs.StringVar(v, r.name, "", r.usage)
	}
}

func (o *Options) applyKubeFlags(b *annex.Builder, given map[string]bool) error {
	k := &o.kube
	var errs []string
	bad := func(name, why string) { errs = append(errs, "--"+name+": "+why) }
	if given["watch-cache"] {
		b.Storage.DisableWatchCache = !k.watchCache
	}
	for _, s := range k.watchCacheSizes {
		res, size, ok := strings.Cut(s, "#")
		n, err := strconv.Atoi(size)
		if !ok || res == "" || err != nil || n < 0 {
			bad("watch-cache-sizes", fmt.Sprintf("invalid value of watch cache size: %s", s))
			continue
		}
		if b.Storage.WatchCacheSizes == nil {
			b.Storage.WatchCacheSizes = map[string]int{}
		}
		b.Storage.WatchCacheSizes[res] = n
	}
	if given["etcd-db-metric-poll-interval"] {
		switch {
		case k.dbPoll < 0:
			bad("etcd-db-metric-poll-interval", "must not be negative")
		case k.dbPoll == 0:
			b.Storage.DBMetricPollInterval = -1
		default:
			b.Storage.DBMetricPollInterval = k.dbPoll
		}
	}
	if given["delete-collection-workers"] {
		if k.deleteWorkers < 1 {
			bad("delete-collection-workers", "must be at least 1")
		}
		b.Limits.DeleteCollectionWorkers = k.deleteWorkers
	}
	if k.tlsMinVersion != "" {
		v, ok := map[string]uint16{"VersionTLS10": tls.VersionTLS10, "VersionTLS11": tls.VersionTLS11, "VersionTLS12": tls.VersionTLS12, "VersionTLS13": tls.VersionTLS13}[k.tlsMinVersion]
		if !ok {
			bad("tls-min-version", fmt.Sprintf("unknown tls version %q", k.tlsMinVersion))
		}
		b.Serving.TLSMinVersion = v
	}
	for _, name := range k.tlsCipherSuites {
		id, ok := cipherSuiteID(name)
		if !ok {
			bad("tls-cipher-suites", fmt.Sprintf("Cipher suite %s not supported or doesn't exist", name))
			continue
		}
		b.Serving.TLSCipherSuites = append(b.Serving.TLSCipherSuites, id)
	}
	for _, c := range k.tlsCurves {
		n, err := strconv.ParseUint(c, 10, 16)
		if err != nil {
			bad("tls-curve-preferences", fmt.Sprintf("%q is not a numeric CurveID", c))
			continue
		}
		b.Serving.TLSCurvePreferences = append(b.Serving.TLSCurvePreferences, tls.CurveID(n))
	}
	b.Serving.SNICertKeys = append(b.Serving.SNICertKeys, k.sniCertKeys...)
	known := admission.PluginNames()
	for _, p := range append(slices.Clone(k.enablePlugins), k.disablePlugins...) {
		if !slices.Contains(known, p) {
			errs = append(errs, fmt.Sprintf("--enable-admission-plugins/--disable-admission-plugins: plugin %q is unknown (known: %s)", p, strings.Join(known, ", ")))
		}
	}
	for _, p := range k.enablePlugins {
		if slices.Contains(k.disablePlugins, p) {
			bad("enable-admission-plugins", fmt.Sprintf("%s is both enabled and disabled", p))
		}
	}
	b.Admission.DisabledPlugins = append(b.Admission.DisabledPlugins, k.disablePlugins...)
	if given["enable-garbage-collector"] && !k.gc {
		bad("enable-garbage-collector", "cannot be false here: deletion always leaves dependents to the cluster's garbage collector (the orphan and foregroundDeletion finalizers)")
	}
	switch {
	case given["storage-backend"] && k.storageBackend != "etcd3" && k.storageBackend != "postgres":
		bad("storage-backend", fmt.Sprintf("%q is not supported: the backends are etcd3 (with --etcd-servers), postgres (with --postgres-dsn) and the embedded bbolt file", k.storageBackend))
	case k.storageBackend == "etcd3" && !o.etcd.Enabled():
		bad("storage-backend", "etcd3 needs --etcd-servers (without both, objects are kept in the embedded bbolt file)")
	case k.storageBackend == "postgres" && !o.pg.Enabled():
		bad("storage-backend", "postgres needs --postgres-dsn")
	case k.storageBackend == "postgres" && o.etcd.Enabled():
		bad("storage-backend", "postgres and --etcd-servers exclude each other: one store keeps every resource")
	case k.storageBackend != "postgres" && o.pg.Enabled():
		bad("postgres-dsn", "has no effect without --storage-backend=postgres")
	}
	if given["storage-media-type"] && k.storageMediaType != "application/json" {
		bad("storage-media-type", fmt.Sprintf("%q is not supported: objects are stored as application/json", k.storageMediaType))
	}
	for _, g := range k.featureGates {
		name, value, _ := strings.Cut(strings.TrimPrefix(g, "kube:"), "=")
		if name != "APIResponseCompression" {
			bad("feature-gates", fmt.Sprintf("unrecognized feature gate: %s (this server has one: APIResponseCompression)", g))
			continue
		}
		on, err := strconv.ParseBool(value)
		if err != nil {
			bad("feature-gates", fmt.Sprintf("invalid value of %s=%s, err: %v", name, value, err))
			continue
		}
		b.Serving.DisableResponseCompression = !on
	}
	if len(k.emulatedVersions) > 0 {
		bad("emulated-version", "not supported: this server serves one version and emulates no other")
	}
	if len(k.minCompatVersions) > 0 {
		bad("min-compatibility-version", "not supported: this server serves one version")
	}
	if len(k.overrides) > 0 {
		bad("etcd-servers-overrides", "not supported: one etcd cluster (--etcd-servers) serves every resource")
	}
	for name, v := range k.refusedStrings {
		if given[name] {
			_ = v
			bad(name, refusalReason(name))
		}
	}
	if given["kubeconfig"] || given["authentication-tolerate-lookup-failure"] {
		if b.Authentication.Delegation != nil {
			b.Authentication.Delegation.Kubeconfig = k.kubeconfig
			b.Authentication.Delegation.TolerateLookupFailure = k.tolerateLookup
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// kubeFlagState holds the values of the flags of this file that are not a
// Builder field.
type kubeFlagState struct {
	watchCache        bool
	watchCacheSizes   commaList
	enablePlugins     commaList
	disablePlugins    commaList
	tlsMinVersion     string
	tlsCipherSuites   commaList
	tlsCurves         commaList
	sniCertKeys       sniList
	gc                bool
	storageBackend    string
	storageMediaType  string
	featureGates      commaList
	refusedStrings    map[string]*string
	tolerateLookup    bool
	kubeconfig        string
	deleteWorkers     int
	dbPoll            time.Duration
	emulatedVersions  commaList
	minCompatVersions commaList
	overrides         commaList
}

// sniList is --tls-sni-cert-key, repeatable.
type sniList []annex.SNICertKey

func (s *sniList) String() string { return "" }

// Set takes "cert.crt,key.key" or "cert.crt,key.key:*.example.com,foo.example.com".
func (s *sniList) Set(v string) error {
	files, names, _ := strings.Cut(v, ":")
	cert, key, ok := strings.Cut(files, ",")
	if !ok || cert == "" || key == "" {
		return fmt.Errorf("expected comma separated certificate and key file paths in %q", v)
	}
	var ns []string
	if names != "" {
		for _, n := range strings.Split(names, ",") {
			if n = strings.TrimSpace(n); n != "" {
				ns = append(ns, n)
			}
		}
	}
	*s = append(*s, annex.SNICertKey{CertFile: strings.TrimSpace(cert), KeyFile: strings.TrimSpace(key), Names: ns})
	return nil
}

func refusalReason(name string) string {
	switch name {
	case "egress-selector-config-file":
		return "not supported: this server dials the cluster and webhooks directly (no egress selector)"
	case "lease-reuse-duration-seconds":
		return "not supported: no object here is stored with an etcd lease"
	case "livez-grace-period":
		return "not applicable: /livez checks nothing that starts late here (no post-start hooks)"
	case "etcd-count-metric-poll-period":
		return "not supported: apiserver_storage_objects is kept by the watch cache, not polled from etcd"
	}
	return "not supported"
}

func cipherSuiteID(name string) (uint16, bool) {
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if cs.Name == name {
			return cs.ID, true
		}
	}
	return 0, false
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

// addLimitFlags registers the flags of the limits, named and meaning as
// kube-apiserver's.
func addLimitFlags(fs *flag.FlagSet, b *annex.Builder) {
	if b.Limits.RequestTimeout <= 0 {
		b.Limits.RequestTimeout = 60 * time.Second
	}
	fs.DurationVar(&b.Limits.RequestTimeout, "request-timeout", b.Limits.RequestTimeout, "An optional field indicating the duration a handler must keep a request open before timing it out. This is the default request timeout for requests but may be overridden by flags such as --min-request-timeout for specific types of requests.")
	if b.Limits.MinRequestTimeout <= 0 {
		b.Limits.MinRequestTimeout = 1800 * time.Second
	}
	fs.Var((*secondsFlag)(&b.Limits.MinRequestTimeout), "min-request-timeout", "An optional field indicating the minimum number of seconds a handler must keep a request open before timing it out. Currently only honored by the watch request handler, which picks a randomized value above this number as the connection timeout, to spread out load.")
	if b.Limits.HTTP2MaxStreamsPerConnection == 0 {
		b.Limits.HTTP2MaxStreamsPerConnection = 1000
	}
	fs.IntVar(&b.Limits.HTTP2MaxStreamsPerConnection, "http2-max-streams-per-connection", b.Limits.HTTP2MaxStreamsPerConnection, "The limit that the server gives to clients for the maximum number of streams in an HTTP/2 connection. Zero means 1000, kube-apiserver's default.")
}

// secondsFlag is a duration given as a whole number of seconds, as
// kube-apiserver's --min-request-timeout.
type secondsFlag time.Duration

func (s *secondsFlag) String() string {
	return strconv.FormatInt(int64(time.Duration(*s)/time.Second), 10)
}
func (s *secondsFlag) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("want a number of seconds: %w", err)
	}
	*s = secondsFlag(time.Duration(n) * time.Second)
	return nil
}
