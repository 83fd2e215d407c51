// This file decides which requests are long-running: those exempt from the
// request deadline and the timeout (watches, profiling).

package filters

import (
	"net/http"
	"slices"
	"strings"
)

// LongRunningFunc reports whether a request is long-running. info is the
// request's RequestInfo, never nil. It must be safe for concurrent use.
type LongRunningFunc func(r *http.Request, info *RequestInfo) bool

// BasicLongRunning returns Kubernetes' BasicLongRunningRequestCheck: a
// request is long-running when its verb is one of verbs, when it is a
// resource request for one of subresources, or when it is a non-resource
// request under /debug/pprof/.
func BasicLongRunning(verbs, subresources []string) LongRunningFunc {
	verbs, subresources = slices.Clone(verbs), slices.Clone(subresources)
	return func(_ *http.Request, info *RequestInfo) bool {
		if slices.Contains(verbs, info.Verb) {
			return true
		}
		if info.IsResourceRequest && slices.Contains(subresources, info.Subresource) {
			return true
		}
		return !info.IsResourceRequest && strings.HasPrefix(info.Path, "/debug/pprof/")
	}
}

// DefaultLongRunning is the check a nil LongRunningFunc means: the verb
// watch, and non-resource paths under /debug/pprof/.
func DefaultLongRunning(_ *http.Request, info *RequestInfo) bool {
	return info.Verb == "watch" || (!info.IsResourceRequest && strings.HasPrefix(info.Path, "/debug/pprof/"))
}

// IsLongRunning reports whether r is long-running by f (nil means
// DefaultLongRunning), using the RequestInfo in r's context, or resolving one
// with the default resolver when there is none.
func IsLongRunning(r *http.Request, f LongRunningFunc) bool {
	if f == nil {
		f = DefaultLongRunning
	}
	return f(r, requestInfo(r))
}
