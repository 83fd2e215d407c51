// Package version is the /version document of an annex server:
// kube-apiserver's version.Info, which kubectl version and kube-aggregator's
// discovery read, with its zero fields completed from the binary's build
// information.
package version
