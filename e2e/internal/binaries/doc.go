// Package binaries builds and starts the external programs the end-to-end
// tests run against: etcd (and, from other files of this package,
// kube-apiserver and kube-controller-manager, from one wrapper go.mod so that
// the second build reuses the first's downloads and build cache).
//
// A program is built from a small wrapper module ([Module]): a go.mod that
// requires the program's module at a pinned version (with optional replace
// lines) and a main.go that calls its entry point. [Build] writes the wrapper
// to a temporary directory, resolves it (go mod tidy, through the ordinary
// module proxy) and runs go build into a cache directory ($ANNEX_E2E_CACHE,
// or os.UserCacheDir()/annex-e2e) under a name keyed by a hash of the
// wrapper's go.mod and main.go. A binary already in the cache is reused, so
// only the first run pays for the build. Concurrent builds of the same
// wrapper (test binaries of several packages run at once) wait on a lock
// file and build once.
//
// [Etcd] builds etcd and starts a single-member server on loopback with free
// ports and a data directory under t.TempDir(), and stops it when the test
// ends.
package binaries
