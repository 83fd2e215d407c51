// Package e2e proves annex with real clients: client-go's dynamic and
// metadata clients and informers (with client-go's WatchListClient feature
// on and off) and kubectl, against a server built in-process with
// annex.Builder. It is its own module so that client-go never enters the
// library's go.mod.
//
// Run it with: cd e2e && ANNEX_REQUIRE_KUBECTL=1 go test -count=1 ./...
//
// The load benchmarks of a whole server are in package loadbench
// (./loadbench), the load tool comparing annex with kube-apiserver in
// cmd/annexload.
package e2e
