// Package fakekubelet serves a kubelet's /metrics/resource for tests: over
// HTTPS with a certificate of its own CA, client certificates verified
// against the cluster's CA (the kubelet's x509 authentication), and the
// metric families a kubelet reports (kubelet 1.33: [STABLE] help, counters
// in core-seconds, working sets in bytes, each series with its timestamp in
// milliseconds), in the format the Accept header negotiates as the
// kubelet's promhttp handler does: the delimited protobuf format when
// asked for, the exposition text otherwise. CPU counters grow at the
// configured rate from the moment a value is set, so a scraper computing
// rates between two samples reads back exactly the configured usage.
package fakekubelet
