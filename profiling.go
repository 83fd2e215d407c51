// This file serves Go's profiles under /debug/pprof/, as kube-apiserver
// does with --profiling (on by default): behind authentication and
// authorization like any other path, and long-running (no request timeout),
// so that a 30 s CPU profile completes.

package annex

import (
	"net/http/pprof"
	"runtime"

	"github.com/go-chi/chi/v5"
)

// routeProfiling adds /debug/pprof/ and its profiles to r; contention turns
// on the block and mutex profiles.
func routeProfiling(r chi.Router, contention bool) {
	if contention {
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(1)
	}
	r.HandleFunc("/debug/pprof", pprof.Index)
	r.HandleFunc("/debug/pprof/", pprof.Index)
	r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	r.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	r.HandleFunc("/debug/pprof/{profile}", pprof.Index) // goroutine, heap, allocs, block, mutex, threadcreate
}
