// Command metrics-server is the annex sample the library is judged by: a
// metrics-style aggregated API server serving metrics.k8s.io/v1beta1
// NodeMetrics and PodMetrics, computed from the last two samples of each
// node and container into an in-memory snapshot after every scrape, the way
// metrics-server serves kubectl top.
//
// Standalone (the default) it needs no cluster: a self-signed serving
// certificate, an admin client certificate and a kubeconfig in its data
// directory, and simulated nodes and pods:
//
//	go run ./examples/metrics-server
//	kubectl --kubeconfig .annex/metrics-server/kubeconfig get nodemetrics
//	kubectl --kubeconfig .annex/metrics-server/kubeconfig get --raw /apis/metrics.k8s.io/v1beta1/nodes
//
// Behind kube-aggregator (the same binary, as deploy/ runs it) it trusts the
// aggregator's front-proxy certificate and asks the cluster about tokens and
// permissions (TokenReview, SubjectAccessReview):
//
//	metrics-server --delegated-auth --service metrics-server.kube-system --register-apiservice
//
// Samples come from a Source (source.go): the simulated one here; a kubelet
// scraper would implement the same one-method interface. The resources are
// read-only: writes answer 405 MethodNotAllowed, as metrics-server's do.
//
// /readyz explains why kube-aggregator would mark the APIService unavailable
// or why proxied requests would fail: the front-proxy CA missing from the
// cluster's ConfigMap or unreadable (delegated-authentication), TokenReview,
// SubjectAccessReview or ConfigMap permissions missing
// (delegation-permissions), a serving certificate without the
// <service>.<namespace>.svc name (serving-certificate-name, the Builder's
// check for --service). The first two are also logged at start-up, and
// /readyz/<check> answers with the reason. As
// metrics-server's, /readyz also fails ("no metrics to serve",
// metric-storage-ready) until the store can compute at least one node's or
// pod's metrics, so the APIService is not marked available while kubectl
// top would print nothing.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/kubeflags"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "metrics-server:", err)
		os.Exit(1)
	}
}

// options are the command-line flags: the Builder's kube-named ones plus the
// example's own.
type options struct {
	builder annex.Builder

	nodes, pods    string
	simulationFile string
	variation      float64
	resolution     time.Duration
	source         string // simulated or kubelet
	kubelet        KubeletOptions
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{builder: annex.Builder{
		Name:    "metrics-server",
		DataDir: ".annex/metrics-server",
		Serving: annex.Serving{BindAddress: "127.0.0.1", SecurePort: 8443},
		// metrics-server's manifest's priorities for v1beta1.metrics.k8s.io
		// (--register-apiservice).
		Registration: annex.Registration{GroupPriorityMinimum: 100, VersionPriority: 100},
	}}
	fs := pflag.NewFlagSet("metrics-server", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var flags kubeflags.Options
	flags.AddFlags(fs, &o.builder)
	fs.StringVar(&o.nodes, "nodes", "node-1,node-2", "Simulated nodes, comma-separated (ignored with --simulation-file).")
	fs.StringVar(&o.pods, "pods", "default/web-0,default/web-1,kube-system/coredns-0", "Simulated pods as namespace/name, comma-separated (ignored with --simulation-file).")
	fs.StringVar(&o.simulationFile, "simulation-file", "", "YAML file declaring simulated nodes and pods with their mean usage (see testdata/cluster.yaml).")
	fs.Float64Var(&o.variation, "variation", 0.2, "How far simulated usage swings around its mean (0.2 is ±20%; 0 is constant).")
	fs.DurationVar(&o.resolution, "metric-resolution", 15*time.Second, "The resolution at which metrics are scraped.")
	fs.StringVar(&o.source, "source", "simulated", "Where samples come from: simulated (no cluster needed), or kubelet (the cluster's nodes' /metrics/resource, as metrics-server; needs --delegated-auth).")
	fs.IntVar(&o.kubelet.Port, "kubelet-port", 10250, "The port to use to connect to Kubelets.")
	fs.BoolVar(&o.kubelet.UseNodeStatusPort, "kubelet-use-node-status-port", false, "Use the port in the node status. Takes precedence over --kubelet-port flag.")
	fs.StringSliceVar(&o.kubelet.PreferredAddressTypes, "kubelet-preferred-address-types", defaultAddressTypes, "The priority of node address types to use when determining which address to use to connect to a particular node")
	fs.BoolVar(&o.kubelet.InsecureTLS, "kubelet-insecure-tls", false, "Do not verify CA of serving certificates presented by Kubelets.  For testing purposes only.")
	fs.StringVar(&o.kubelet.CAFile, "kubelet-certificate-authority", "", "Path to the CA to use to validate the Kubelet's serving certificates.")
	fs.StringVar(&o.kubelet.ClientCertFile, "kubelet-client-certificate", "", "Path to a client cert file for TLS.")
	fs.StringVar(&o.kubelet.ClientKeyFile, "kubelet-client-key", "", "Path to a client key file for TLS.")
	fs.DurationVar(&o.kubelet.RequestTimeout, "kubelet-request-timeout", 10*time.Second, "The length of time to wait before giving up on a single request to Kubelet. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h).")
	fs.DurationVar(&o.builder.Storage.ComputedWatchLinger, "watch-linger", 0, "How long the watch cache of NodeMetrics and PodMetrics outlives its last watcher; it exists only while someone watches (0: 30s; negative: once started, it stays).")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := flags.Apply(&o.builder); err != nil {
		return nil, err
	}
	switch o.source {
	case "simulated":
		for _, f := range []string{"kubelet-port", "kubelet-use-node-status-port", "kubelet-preferred-address-types", "kubelet-insecure-tls",
			"kubelet-certificate-authority", "kubelet-client-certificate", "kubelet-client-key", "kubelet-request-timeout"} {
			if fs.Changed(f) {
				return nil, fmt.Errorf("--%s has no effect without --source kubelet", f)
			}
		}
	case "kubelet":
		if !o.delegated() {
			return nil, errors.New("--source kubelet needs --delegated-auth: the nodes and pods come from the cluster")
		}
		for _, f := range []string{"nodes", "pods", "simulation-file", "variation"} {
			if fs.Changed(f) {
				return nil, fmt.Errorf("--%s has no effect with --source kubelet", f)
			}
		}
	default:
		return nil, fmt.Errorf("--source %q: want simulated or kubelet", o.source)
	}
	return o, nil
}

// delegated reports whether the server is delegated (--delegated-auth).
func (o *options) delegated() bool { return o.builder.Authentication.Delegation != nil }

// clusterClient is a client with this server's own credentials
// (--authentication-kubeconfig, or in-cluster).
func (o *options) clusterClient() (*kubeclient.Client, *kubeclient.Config, error) {
	var cfg *kubeclient.Config
	var err error
	if kc := o.builder.Authentication.Delegation.AuthenticationKubeconfig; kc != "" {
		cfg, err = kubeclient.LoadKubeconfig(kc, "")
	} else {
		cfg, err = kubeclient.InClusterConfig()
	}
	if err != nil {
		return nil, nil, err
	}
	c, err := kubeclient.New(*cfg)
	return c, cfg, err
}

// newLogger is the server's logger from the logging flags (--logging-format,
// -v, --vmodule) on stderr: the example logs its own lines with it too.
func newLogger(o *options, stderr io.Writer) (*zap.Logger, error) {
	o.builder.Observability.Logging.Output = stderr
	return o.builder.ServerLogger()
}

// app is a built server and what runs beside it.
type app struct {
	opts   *options
	log    *zap.Logger
	store  *Store
	srv    *annex.Server
	checks []namedCheck
	client *kubeclient.Client // delegated mode only
	// kubelets is the kubelet source (--source kubelet), nil otherwise.
	kubelets *Kubelets
}

// namedCheck is a self-diagnosis check, also served on /readyz/<name>.
type namedCheck struct {
	name string
	rc   healthz.ReadinessChecker
}

// setup builds the server the flags describe; ln, when not nil, replaces the
// listening address (tests pass one on port 0).
func setup(args []string, stderr io.Writer, ln net.Listener) (*app, error) {
	return setupSource(args, stderr, ln, nil)
}

// setupSource is setup with src, when not nil, in place of the simulated
// source the flags describe.
func setupSource(args []string, stderr io.Writer, ln net.Listener, src Source) (*app, error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return nil, err
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		return nil, err
	}
	a := &app{opts: o, log: log}
	var creds *kubeclient.Config
	if o.delegated() {
		if a.client, creds, err = o.clusterClient(); err != nil {
			return nil, fmt.Errorf("cluster client: %w", err)
		}
	}
	if src == nil && o.source == "kubelet" {
		if a.kubelets, err = NewKubelets(o.kubelet, a.client, creds, a.log.Named("kubelets")); err != nil {
			return nil, err
		}
		src = a.kubelets
	}
	if src == nil {
		var spec Spec
		if o.simulationFile != "" {
			spec, err = LoadSpec(o.simulationFile)
		} else {
			spec, err = SpecFromNames(splitList(o.nodes), splitList(o.pods), o.variation)
		}
		if err != nil {
			return nil, err
		}
		if src, err = NewSimulated(spec, nil); err != nil {
			return nil, err
		}
	}
	a.store = NewStore(src, o.resolution, a.log.Named("store"))

	b := o.builder
	if b.Resources, err = Resources(a.store); err != nil {
		return nil, err
	}
	b.Observability.Registerer = prometheus.NewRegistry()
	b.Serving.Listener = ln
	b.Stages = append(b.Stages, annex.InsertedStage{After: annex.StageAuthorization, Stage: identityStage(a.log.Named("identity"))})
	a.checks = append(a.checks, namedCheck{storeCheckName, a.store})
	if o.delegated() {
		pc, err := authz.NewPermissionCheck(authz.PermissionCheckConfig{Client: a.client, Interval: 30 * time.Second})
		if err != nil {
			return nil, err
		}
		a.checks = append(a.checks, namedCheck{"delegation-permissions", pc})
	}
	for _, c := range a.checks {
		b.Serving.ReadyChecks = append(b.Serving.ReadyChecks, healthz.ReadyCheck(c.name, c.rc))
	}
	if a.srv, err = b.Build(); err != nil {
		return nil, err
	}
	return a, nil
}

// identityStage logs who each request comes from (user, uid, groups, extra),
// as the front proxy told it, at -v=3 (with kube's request lines).
func identityStage(log *zap.Logger) annex.Stage {
	return annex.Stage{Name: "identity-log", Needs: []annex.Provision{annex.ProvidesUser}, Filter: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, ok := filters.UserFrom(r.Context()); ok {
				if ce := log.Check(annex.V(3), "identity"); ce != nil {
					ce.Write(zap.String("path", r.URL.Path), zap.String("user", u.Name), zap.String("uid", u.UID),
						zap.Strings("groups", u.Groups), zap.Any("extra", u.Extra))
				}
			}
			next.ServeHTTP(w, r)
		})
	}}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// diagnose runs every self-diagnosis check once and logs the result: what
// would make the APIService unavailable or proxied requests fail.
func (a *app) diagnose(ctx context.Context) {
	for _, c := range a.checks {
		if c.name == storeCheckName {
			continue // waits for scrapes, not a configuration problem
		}
		if err := c.rc.Ready(ctx); err != nil {
			a.log.Error("self-diagnosis: "+c.name+" failed", zap.Error(err))
		} else {
			a.log.Info("self-diagnosis: " + c.name + " ok")
		}
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := setup(args, stderr, nil)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	defer func() { _ = a.log.Sync() }()
	return a.run(ctx, stdout)
}

// run serves until ctx ends, with the store scraping (and, with
// --register-apiservice, the Builder keeping the APIService registered).
func (a *app) run(ctx context.Context, stdout io.Writer) error {
	if kc := a.srv.KubeconfigPath(); kc != "" {
		fmt.Fprintf(stdout, "Serving metrics.k8s.io on %s\n\n  kubectl --kubeconfig %s get nodemetrics\n  kubectl --kubeconfig %s get --raw /apis/metrics.k8s.io/v1beta1/nodes\n\n", a.srv.URL(), kc, kc)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() { defer wg.Done(); _ = a.store.Start(ctx) }()
	go func() { defer wg.Done(); a.diagnose(ctx) }()
	if a.kubelets != nil {
		wg.Add(1)
		go func() { defer wg.Done(); _ = a.kubelets.Run(ctx) }()
	}
	return a.srv.Run(ctx)
}
