// Package kubectltest runs the real kubectl against a test server: each
// Kubectl has its own kubeconfig, HOME and discovery cache, and every command
// is bounded in time. Tests of the examples and of the e2e module share it.
//
// Without kubectl on the PATH a test is skipped, unless ANNEX_REQUIRE_KUBECTL
// is set (as .ci/run sets it), in which case it fails: a skipped test is not a
// passing one.
package kubectltest
