package profiling

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

// Router is the part of a router Route needs (chi.Router has it).
type Router interface {
	HandleFunc(pattern string, h http.HandlerFunc)
}

// Route adds /debug/pprof/ and its profiles to r; contention turns on the
// block and mutex profiles.
func Route(r Router, contention bool) {
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

// Socket serves Go's profiles on a unix socket at path, without
// authentication or authorization, as kube's --debug-socket-path. The
// caller serves the returned server on the returned listener.
func Socket(path string) (net.Listener, *http.Server, error) {
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
