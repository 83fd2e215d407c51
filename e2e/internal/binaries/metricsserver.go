// This file holds the metrics-server build: the incumbent the metrics
// example is compared with, side by side against the same cluster and the
// same kubelets.

package binaries

import "testing"

// MetricsServerVersion is the metrics-server release compared: its latest
// release on the Go module proxy when it was pinned.
const MetricsServerVersion = "v0.9.0"

// MetricsServerModule is the wrapper that builds metrics-server with the
// same main as its cmd/metrics-server (without the release's version
// ldflags: --version prints a development version).
func MetricsServerModule() Module {
	return Module{
		Name:    "metrics-server",
		Go:      "1.26.4", // metrics-server v0.9.0's go directive
		Require: []Require{{Path: "sigs.k8s.io/metrics-server", Version: MetricsServerVersion}},
		Main: `package main

import (
	"os"
	"runtime"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"

	"sigs.k8s.io/metrics-server/cmd/metrics-server/app"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()

	if len(os.Getenv("GOMAXPROCS")) == 0 {
		runtime.GOMAXPROCS(runtime.NumCPU())
	}

	cmd := app.NewMetricsServerCommand(genericapiserver.SetupSignalHandler())
	if err := cmd.Execute(); err != nil {
		panic(err)
	}
}
`,
	}
}

// MetricsServer returns the path of the metrics-server binary, building it
// on first use.
func MetricsServer(t testing.TB) string { return BuildT(t, MetricsServerModule()) }
