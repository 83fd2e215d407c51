// Package healthz serves /healthz, /livez and /readyz the way k8s.io/apiserver
// does: named checks, "?verbose", "?exclude=", and one path per check.
//
// # Usage
//
//	h := healthz.New("readyz", healthz.PingCheck(), storageCheck, shutdownCheck)
//	mux.Handle("/readyz", h)
//	mux.Handle("/readyz/", h)
//
// A passing endpoint answers 200 "ok". A failing one answers 500 with one line
// per check; the reasons are withheld from the body (they can carry internal
// detail) and passed to the Handler's OnFailure callback for logging instead.
// A single check's path ("/readyz/ping") answers 200 "ok" or 500 "internal
// server error: <err>", as kube-apiserver does.
//
// Checks are fixed at construction; they run on every request, concurrently
// with other requests, so they must be cheap and safe for concurrent use.
package healthz
