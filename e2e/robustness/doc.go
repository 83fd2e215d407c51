// Package robustness is annex's robustness harness, after etcd's: it runs
// the environments example as an external process, drives it with
// concurrent clients over its HTTP API under injected faults, records the
// history, and checks it against the Kubernetes storage contract.
package robustness
