// This file holds the k8s.io/sample-apiserver build, the reference the load
// tool compares annex with.

package binaries

// SampleAPIServerVersion is the k8s.io/sample-apiserver release compared.
const SampleAPIServerVersion = "v0.37.2"

// SampleAPIServerModule is the wrapper that builds sample-apiserver: the
// same main as the module's own.
func SampleAPIServerModule() Module {
	return Module{
		Name:    "sample-apiserver",
		Require: []Require{{Path: "k8s.io/sample-apiserver", Version: SampleAPIServerVersion}},
		Main: `package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/sample-apiserver/pkg/cmd/server"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	options := server.NewWardleServerOptions(os.Stdout, os.Stderr)
	cmd := server.NewCommandStartWardleServer(ctx, options, false)
	os.Exit(cli.Run(cmd))
}
`,
	}
}
