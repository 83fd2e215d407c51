// Package loadbench holds the load benchmarks of a whole annex server: a
// server built with annex.Builder, running in the test process on a free
// port, reached over HTTPS (HTTP/2, the certificates and admin kubeconfig
// it generates) or through Server.Handler. It has no code outside its
// tests.
//
// # Running
//
// Every benchmark compares configurations within one run and prints its
// figures (b.ReportMetric, and tables in its log with -v): read them as
// ratios of each other in the same run, not as absolutes, since the
// machine's other load moves them from run to run. Each takes its own
// rounds or durations, so a fixed -benchtime is part of its command:
//
//	cd e2e
//	go test -run '^$' -bench FairnessUnderFlood -benchtime 1x -v ./loadbench             # priority and fairness under a flood of LISTs
//	go test -run '^$' -bench ServerGETFlowControl -benchtime 20000x -count 3 ./loadbench # GET cost with APF on, off, no limit
//	go test -run '^$' -bench GETStackGrowth -benchtime 20000x ./loadbench                # GET cost with and without stack growth
//	go test -run '^$' -bench AuditOverhead -benchtime 2000x ./loadbench                  # no audit against four audit configurations
//	go test -run '^$' -bench Create -benchtime 3000x ./loadbench                         # create without and with schema and CEL policies
//	go test -run '^$' -bench ManagedFieldsThroughput -benchtime 4000x ./loadbench        # creates and patches with managedFields on and off
//	go test -run '^$' -bench CacheBytesPerObject -benchtime 1x ./loadbench               # heap per cached object, without and with a watcher
//	go test -run '^$' -bench WatchFanOutOverHTTP -benchtime 1x ./loadbench               # 1,000 watchers over TLS, 100 writes/s
//
// TestWatchFanOutOverHTTP, 200 watchers for 2s, is a test: it runs with the
// rest of the e2e module (go test ./...).
//
// # Caveats
//
// The servers and their clients share the process and the machine's cores:
// CPU figures (cpu-ns, the CPU columns) are the whole process's, server and
// clients. BenchmarkFairnessUnderFlood runs its flooder in a process of its
// own, the test binary re-executed by TestMain (ANNEX_FLOODER set); a
// TestMain added to this package must keep that.
//
// The benchmarks use only the library's exported API, except
// BenchmarkGETStackGrowth, which grows stacks with internal/stack as the
// server does (Go's internal rule is by import path, and this module's path
// is under the library's). Every Builder is declared by one function,
// newBuilder.
package loadbench
