// This file holds the helm build: the charts of the examples are rendered
// with it (helm template) and the result dry-run against kube-apiserver.

package binaries

import "testing"

// HelmVersion is the helm release the charts are rendered with.
const HelmVersion = "v3.22.0"

// HelmModule is the wrapper that builds helm's own command.
func HelmModule() Module {
	return Module{
		Name:    "helm",
		Require: []Require{{Path: "helm.sh/helm/v3", Version: HelmVersion}},
		// helm's main package cannot be imported: the tools-tagged file
		// keeps it in go.mod for go mod tidy, and Package builds it.
		Main: `//go:build tools

package main

import _ "helm.sh/helm/v3/cmd/helm"
`,
		Package: "helm.sh/helm/v3/cmd/helm",
	}
}

// Helm returns the path of the helm binary, building it on first use.
func Helm(t testing.TB) string { return BuildT(t, HelmModule()) }
