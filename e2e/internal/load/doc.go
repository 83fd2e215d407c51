// Package load drives a Kubernetes-style collection over HTTPS the way real
// clients do, one TLS connection (HTTP/2) per client: creates, gets, lists
// (full, paged, resourceVersion=0), updates (GET then PUT), stale updates
// (conflicts), and watch fan-out with the latency of each event from the
// write's acknowledgement to its delivery; and the footprint (RSS, CPU
// seconds) of the server processes, read from /proc. cmd/annexload runs it.
package load
