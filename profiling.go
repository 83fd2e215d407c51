// This file serves Go's profiles under /debug/pprof/, as kube-apiserver
// does with --profiling (on by default): behind authentication and
// authorization like any other path, and long-running (no request timeout),
// so that a 30 s CPU profile completes; and on the unauthenticated debug
// socket (--debug-socket-path).

package annex

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
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

// debugSocket serves Go's profiles on a unix socket, without
// authentication or authorization, as kube's --debug-socket-path.
func debugSocket(path string) (net.Listener, *http.Server, error) {
	_ = os.Remove(path) // a socket left by an earlier run
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return ln, &http.Server{Handler: mux, ReadHeaderTimeout: 32e9}, nil
}
