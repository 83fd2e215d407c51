// This file holds the debug socket (--debug-socket-path); socket sharing is
// in serving_unix.go.

package annex

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

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
