// Command environments is the annex example of a stored resource: a platform
// team's Environment (platform.example.com/v1alpha1), namespaced, kept in an
// embedded bbolt file.
//
//	go run ./examples/environments --data-dir .annex/environments
//	export KUBECONFIG=.annex/environments/kubeconfig
//	kubectl api-resources --api-group platform.example.com
//	kubectl create -f examples/environments/environment.yaml
//	kubectl get environments
//
// Standalone (the default), it generates a CA, a serving certificate and an
// admin client certificate in the data directory and writes a kubeconfig there
// for kubectl.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/rest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "environments:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		port     = flag.Int("secure-port", 8443, "port to serve HTTPS on")
		bind     = flag.String("bind-address", "127.0.0.1", "address to listen on")
		dataDir  = flag.String("data-dir", ".annex/environments", "directory for the store, certificates and kubeconfig")
		certFile = flag.String("tls-cert-file", "", "serving certificate (PEM); empty generates a self-signed one")
		keyFile  = flag.String("tls-private-key-file", "", "serving key (PEM)")
		clientCA = flag.String("client-ca-file", "", "CA bundle for client certificates; empty generates one and an admin kubeconfig")
		verbose  = flag.Bool("v", false, "log every request")
	)
	flag.Parse()

	level := zapcore.InfoLevel
	if *verbose {
		level = zapcore.DebugLevel
	}
	logCfg := zap.NewDevelopmentConfig()
	logCfg.Level = zap.NewAtomicLevelAt(level)
	log, err := logCfg.Build()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	b := annex.Builder{
		Name:         "environments",
		Resources:    []rest.Resource{Resource()},
		DataDir:      *dataDir,
		BindAddress:  *bind,
		SecurePort:   *port,
		CertFile:     *certFile,
		KeyFile:      *keyFile,
		ClientCAFile: *clientCA,
		Logger:       log,
		Registerer:   prometheus.NewRegistry(),
	}
	srv, err := b.Build()
	if err != nil {
		return err
	}
	if kc := srv.KubeconfigPath(); kc != "" {
		fmt.Printf("Serving %s on %s\n\n  export KUBECONFIG=%s\n  kubectl get environments -A\n\n", b.Name, srv.URL(), kc)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.Run(ctx)
}
