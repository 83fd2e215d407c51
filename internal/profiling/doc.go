// Package profiling serves Go's profiles as kube-apiserver does: under
// /debug/pprof/ of the API (--profiling, behind authentication and
// authorization, long-running so that a 30 s CPU profile completes) and on
// an unauthenticated unix socket (--debug-socket-path).
package profiling
