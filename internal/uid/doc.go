// Package uid generates the random UUIDs Kubernetes uses for an object's
// metadata.uid and a request's audit ID. It imports nothing of annex's, so
// the leaves that need one (filters, storage) share it.
package uid
