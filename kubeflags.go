// This file holds the rest of the generic server's flags that
// k8s.io/sample-apiserver's --help lists (the checklist of issue 19), each
// with kube's name, default and meaning: serving (--cert-dir, --tls-*,
// --tls-sni-cert-key, --permit-*-sharing, --disable-http2-serving,
// --debug-socket-path), the watch cache, delegation (--kubeconfig,
// --authentication-tolerate-lookup-failure), admission plugins, and the
// flags that mean nothing for this server, accepted only to be refused at
// Build with the reason (kubeRefusals).

package annex

import (
	"crypto/tls"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SNICertKey is one --tls-sni-cert-key: a certificate and key served to
// clients that ask for one of Names (wildcards allowed in the first label),
// or for the names of the certificate itself when Names is empty.
type SNICertKey struct {
	CertFile, KeyFile string
	Names             []string
}

// AdmissionPlugins are kube's admission plugin names for what this server
// runs: NamespaceLifecycle (delegated mode), MutatingAdmissionPolicy,
// ValidatingAdmissionPolicy (AdmissionPolicyFiles), MutatingAdmissionWebhook
// and ValidatingAdmissionWebhook (AdmissionWebhookFiles). All are on by
// default, as in kube.
var admissionPluginNames = []string{"NamespaceLifecycle", "MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"}

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
type sniList []SNICertKey

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
	*s = append(*s, SNICertKey{CertFile: strings.TrimSpace(cert), KeyFile: strings.TrimSpace(key), Names: ns})
	return nil
}

// addKubeFlags registers the flags of this file on fs.
func (b *Builder) addKubeFlags(fs *flag.FlagSet, f *flagState) {
	k := &f.kube
	fs.DurationVar(&b.ShutdownDelay, "shutdown-delay-duration", b.ShutdownDelay, "Time to delay the termination. During that time the server keeps serving requests normally. The endpoints /healthz and /livez will return success, but /readyz immediately returns failure. Graceful termination starts after this delay has elapsed. This can be used to allow load balancer to stop sending traffic to this server.")
	fs.BoolVar(&b.ShutdownSendRetryAfter, "shutdown-send-retry-after", b.ShutdownSendRetryAfter, "If true the HTTP Server will continue listening until all non long running request(s) in flight have been drained, during this window all incoming requests will be rejected with a status code 429 and a 'Retry-After' response header, in addition 'Connection: close' response header is set in order to tear down the TCP connection when idle.")
	fs.DurationVar(&b.ShutdownWatchTerminationGracePeriod, "shutdown-watch-termination-grace-period", b.ShutdownWatchTerminationGracePeriod, "This option, if set, represents the maximum amount of grace period the apiserver will wait for active watch request(s) to drain during the graceful server shutdown window.")
	fs.Float64Var(&b.GoAwayChance, "goaway-chance", b.GoAwayChance, "To prevent HTTP/2 clients from getting stuck on a single apiserver, randomly close a connection (GOAWAY). The client's other in-flight requests won't be affected, and the client will reconnect, likely landing on a different apiserver after going through the load balancer again. This argument sets the fraction of requests that will be sent a GOAWAY. Min is 0 (off), Max is .02 (1/50 requests); .001 (1/1000) is a recommended starting point.")
	fs.StringVar(&b.AdmissionControlConfigFile, "admission-control-config-file", b.AdmissionControlConfigFile, "File with admission control configuration.")
	fs.StringVar(&b.TracingConfigFile, "tracing-config-file", b.TracingConfigFile, "File with apiserver tracing configuration.")
	fs.StringVar(&b.CertDir, "cert-dir", b.CertDir, "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored. Empty means <data-dir>/certs.")
	fs.StringVar(&k.tlsMinVersion, "tls-min-version", "", "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13")
	fs.Var(&k.tlsCipherSuites, "tls-cipher-suites", "Comma-separated list of cipher suites for the server. If omitted, the default Go cipher suites will be used.")
	fs.Var(&k.tlsCurves, "tls-curve-preferences", "Comma-separated list of numeric Go crypto/tls CurveID values, as the allowed key exchange mechanisms for the server.")
	fs.Var(&k.sniCertKeys, "tls-sni-cert-key", "A pair of x509 certificate and private key file paths, optionally suffixed with a list of domain patterns which are fully qualified domain names, possibly with prefixed wildcard segments. Examples: \"example.crt,example.key\" or \"foo.crt,foo.key:*.foo.com,foo.com\". Repeatable.")
	fs.BoolVar(&b.PermitPortSharing, "permit-port-sharing", b.PermitPortSharing, "If true, SO_REUSEPORT will be used when binding the port, which allows more than one instance to bind on the same address and port. [default=false]")
	fs.BoolVar(&b.PermitAddressSharing, "permit-address-sharing", b.PermitAddressSharing, "If true, SO_REUSEADDR will be used when binding the port. This allows binding to wildcard IPs like 0.0.0.0 and specific IPs in parallel, and it avoids waiting for the kernel to release sockets in TIME_WAIT state. [default=false]")
	fs.BoolVar(&b.DisableHTTP2Serving, "disable-http2-serving", b.DisableHTTP2Serving, "If true, HTTP2 serving will be disabled [default=false]")
	fs.StringVar(&b.DebugSocketPath, "debug-socket-path", b.DebugSocketPath, "Use an unprotected (no authn/authz) unix-domain socket for profiling with the given path")
	k.watchCache = !b.DisableWatchCache
	fs.BoolVar(&k.watchCache, "watch-cache", k.watchCache, "Enable watch caching in the apiserver")
	fs.Var(&k.watchCacheSizes, "watch-cache-sizes", "Watch cache size settings for some resources, comma separated. The individual setting format: resource[.group]#size, where resource is lowercase plural (no version), group is omitted for resources of apiVersion v1 (the legacy core API) and included for others, and size is a number (the events each cache keeps).")
	fs.DurationVar(&k.dbPoll, "etcd-db-metric-poll-interval", 30*time.Second, "The interval of requests to poll etcd (or the embedded bbolt file) and update metric. 0 disables the metric collection")
	fs.IntVar(&k.deleteWorkers, "delete-collection-workers", 1, "Number of workers spawned for DeleteCollection call. These are used to speed up namespace cleanup.")
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server (the namespaces and flowcontrol objects are read with it). Empty means the --authentication-kubeconfig one.")
	fs.BoolVar(&k.tolerateLookup, "authentication-tolerate-lookup-failure", false, "If true, failures to look up missing authentication configuration from the cluster are not considered fatal. Note that this can result in authentication that treats all requests as anonymous.")
	fs.Var(&k.enablePlugins, "enable-admission-plugins", "admission plugins that should be enabled in addition to default enabled ones ("+strings.Join(admissionPluginNames, ", ")+"). Comma-delimited list of admission plugins: "+strings.Join(admissionPluginNames, ", ")+".")
	fs.Var(&k.disablePlugins, "disable-admission-plugins", "admission plugins that should be disabled although they are in the default enabled plugins list ("+strings.Join(admissionPluginNames, ", ")+"). Comma-delimited list of admission plugins: "+strings.Join(admissionPluginNames, ", ")+".")
	k.gc = true
	fs.BoolVar(&k.gc, "enable-garbage-collector", true, "Enables the generic garbage collector. MUST be synced with the corresponding flag of the kube-controller-manager. (Always true here: deletion leaves dependents to the cluster's garbage collector.)")
	fs.StringVar(&k.storageBackend, "storage-backend", "", "The storage backend for persistence. Options: 'etcd3' (with --etcd-servers). Without --etcd-servers objects are in the embedded bbolt file.")
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

// applyKubeFlags moves the flags of this file into the Builder; errors
// name the flag.
func (b *Builder) applyKubeFlags(given map[string]bool) error {
	k := &b.flags.kube
	var errs []string
	bad := func(name, why string) { errs = append(errs, "--"+name+": "+why) }
	if given["watch-cache"] {
		b.DisableWatchCache = !k.watchCache
	}
	for _, s := range k.watchCacheSizes {
		res, size, ok := strings.Cut(s, "#")
		n, err := strconv.Atoi(size)
		if !ok || res == "" || err != nil || n < 0 {
			bad("watch-cache-sizes", fmt.Sprintf("invalid value of watch cache size: %s", s))
			continue
		}
		if b.WatchCacheSizes == nil {
			b.WatchCacheSizes = map[string]int{}
		}
		b.WatchCacheSizes[res] = n
	}
	if given["etcd-db-metric-poll-interval"] {
		switch {
		case k.dbPoll < 0:
			bad("etcd-db-metric-poll-interval", "must not be negative")
		case k.dbPoll == 0:
			b.StorageDBMetricPollInterval = -1
		default:
			b.StorageDBMetricPollInterval = k.dbPoll
		}
	}
	if given["delete-collection-workers"] {
		if k.deleteWorkers < 1 {
			bad("delete-collection-workers", "must be at least 1")
		}
		b.DeleteCollectionWorkers = k.deleteWorkers
	}
	if k.tlsMinVersion != "" {
		v, ok := map[string]uint16{"VersionTLS10": tls.VersionTLS10, "VersionTLS11": tls.VersionTLS11, "VersionTLS12": tls.VersionTLS12, "VersionTLS13": tls.VersionTLS13}[k.tlsMinVersion]
		if !ok {
			bad("tls-min-version", fmt.Sprintf("unknown tls version %q", k.tlsMinVersion))
		}
		b.TLSMinVersion = v
	}
	for _, name := range k.tlsCipherSuites {
		id, ok := cipherSuiteID(name)
		if !ok {
			bad("tls-cipher-suites", fmt.Sprintf("Cipher suite %s not supported or doesn't exist", name))
			continue
		}
		b.TLSCipherSuites = append(b.TLSCipherSuites, id)
	}
	for _, c := range k.tlsCurves {
		n, err := strconv.ParseUint(c, 10, 16)
		if err != nil {
			bad("tls-curve-preferences", fmt.Sprintf("%q is not a numeric CurveID", c))
			continue
		}
		b.TLSCurvePreferences = append(b.TLSCurvePreferences, tls.CurveID(n))
	}
	b.SNICertKeys = append(b.SNICertKeys, k.sniCertKeys...)
	for _, p := range append(slices.Clone(k.enablePlugins), k.disablePlugins...) {
		if !slices.Contains(admissionPluginNames, p) {
			errs = append(errs, fmt.Sprintf("--enable-admission-plugins/--disable-admission-plugins: plugin %q is unknown (known: %s)", p, strings.Join(admissionPluginNames, ", ")))
		}
	}
	for _, p := range k.enablePlugins {
		if slices.Contains(k.disablePlugins, p) {
			bad("enable-admission-plugins", fmt.Sprintf("%s is both enabled and disabled", p))
		}
	}
	b.DisabledAdmissionPlugins = append(b.DisabledAdmissionPlugins, k.disablePlugins...)
	if given["enable-garbage-collector"] && !k.gc {
		bad("enable-garbage-collector", "cannot be false here: deletion always leaves dependents to the cluster's garbage collector (the orphan and foregroundDeletion finalizers)")
	}
	if given["storage-backend"] && k.storageBackend != "etcd3" {
		bad("storage-backend", fmt.Sprintf("%q is not supported: the backends are etcd3 (with --etcd-servers) and the embedded bbolt file", k.storageBackend))
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
		b.DisableResponseCompression = !on
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
		if b.Delegation != nil {
			b.Delegation.Kubeconfig = k.kubeconfig
			b.Delegation.TolerateLookupFailure = k.tolerateLookup
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// refusalReason is why a refused flag means nothing here.
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

// cipherSuiteID is the ID of a Go cipher suite name (crypto/tls's names,
// as kube's --tls-cipher-suites takes them).
func cipherSuiteID(name string) (uint16, bool) {
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if cs.Name == name {
			return cs.ID, true
		}
	}
	return 0, false
}
