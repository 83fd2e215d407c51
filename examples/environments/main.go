// Command environments is the annex example of a stored resource: a platform
// team's Environment (platform.example.com, v1beta1 and v1alpha1, declared
// by crd.yaml), namespaced, kept in an embedded bbolt file.
//
//	go run ./examples/environments --data-dir .annex/environments
//	export KUBECONFIG=.annex/environments/kubeconfig
//	kubectl api-resources --api-group platform.example.com
//	kubectl create -f examples/environments/environment.yaml
//	kubectl get environments
//
// Standalone (the default), it generates a CA, a serving certificate and an
// admin client certificate in the data directory and writes a kubeconfig there
// for kubectl. With --audit-policy-file=examples/environments/audit-policy.yaml
// and --audit-log-path=audit.log it writes kube-apiserver's audit log
// (README.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/kubeflags"
	"github.com/annexapi/annex/otlp/otlpgrpc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return // --help printed the flags
		}
		fmt.Fprintln(os.Stderr, "environments:", err)
		os.Exit(1)
	}
}

// options are the command-line flags: kube's (package kubeflags, etcd's
// included: --etcd-servers lets several replicas share one etcd cluster),
// applied to the Builder.
type options struct {
	builder annex.Builder
}

func parseFlags(args []string) (options, error) {
	b := annex.Builder{
		Name:          "environments",
		Resources:     Resources(),
		DataDir:       ".annex/environments",
		Serving:       annex.Serving{BindAddress: "127.0.0.1", SecurePort: 8443},
		Observability: annex.Observability{TraceExporter: otlpgrpc.Exporter}, // --tracing-config-file exports as kube's
	}
	var flags kubeflags.Options
	fs := pflag.NewFlagSet("environments", pflag.ContinueOnError)
	flags.AddFlags(fs, &b)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	err := flags.Apply(&b)
	return options{builder: b}, err
}

// builder declares the server the flags describe.
func builder(o options, log *zap.Logger) (annex.Builder, error) {
	b := o.builder
	if log != nil { // tests quiet the server; run uses the flags' logger
		b.Observability.Logger = log
	}
	b.Observability.Registerer = prometheus.NewRegistry()
	var err error
	b.Admission.Mutators, b.Admission.Validators, err = policies()
	return b, err
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	b, err := builder(o, nil)
	if err != nil {
		return err
	}
	srv, err := b.Build()
	if err != nil {
		return err
	}
	if kc := srv.KubeconfigPath(); kc != "" {
		fmt.Fprintf(out, "Serving %s on %s\n\n  export KUBECONFIG=%s\n  kubectl get environments -A\n\n", b.Name, srv.URL(), kc)
	}
	return srv.Run(ctx)
}
