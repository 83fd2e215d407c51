// This file resolves a request's method, path and query into a RequestInfo,
// with the rules of k8s.io/apiserver's RequestInfoFactory, and holds the
// filter that puts it into the context.

package filters

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/annexapi/annex/meta"
)

// RequestInfoResolver turns a request into a RequestInfo. Its zero value is
// Kubernetes' default: API prefixes "api" and "apis", with "api" groupless.
// Resolve is safe for concurrent use; do not change the fields while it runs.
type RequestInfoResolver struct {
	// APIPrefixes are the first path segments of resource requests, without
	// slashes. Nil means {"api", "apis"}.
	APIPrefixes []string
	// GrouplessAPIPrefixes are the prefixes whose next segment is the version
	// rather than a group. Nil means {"api"}.
	GrouplessAPIPrefixes []string
}

// Resolve returns what r asks for. On error the returned RequestInfo holds
// what was known before the failure, as in Kubernetes.
//
// Resource paths:
//
//	/api/{version}/{resource}[/{name}[/{subresource}]]
//	/api/{version}/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]
//	/apis/{group}/{version}/...                      (same forms)
//	/api/{version}/watch/...  /api/{version}/proxy/... (deprecated path verbs)
//
// Every other path (/api, /api/v1, /apis/{group}/{version}, /healthz, ...)
// is a non-resource request whose Verb is the lower-cased HTTP method.
func (res RequestInfoResolver) Resolve(r *http.Request) (*RequestInfo, error) {
	info := &RequestInfo{}
	return info, res.resolve(r, info)
}

// resolve is Resolve into info, which is zero.
func (res RequestInfoResolver) resolve(r *http.Request, info *RequestInfo) error {
	info.Path, info.Verb = r.URL.Path, lowerMethod(r.Method)

	prefixes, groupless := res.APIPrefixes, res.GrouplessAPIPrefixes
	if prefixes == nil {
		prefixes = []string{"api", "apis"}
	}
	if groupless == nil {
		groupless = []string{"api"}
	}

	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || !slices.Contains(prefixes, parts[0]) {
		return nil
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if !slices.Contains(groupless, info.APIPrefix) {
		// The prefix is consumed, so this asks for four segments in all.
		if len(parts) < 3 {
			return nil
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	verbViaPath := false
	switch parts[0] {
	case "watch", "proxy":
		if len(parts) < 2 {
			return fmt.Errorf("%w, %v", ErrUnresolvablePath, r.URL)
		}
		info.Verb = parts[0]
		parts = parts[1:]
		verbViaPath = true
	default:
		info.Verb = methodVerb(r.Method)
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			info.Namespace = parts[1]
			// namespaces/{ns}/status and namespaces/{ns}/finalize are
			// subresources of the namespace, not namespaced resources.
			if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
				parts = parts[2:]
			}
		}
	}
	info.Parts = parts

	switch {
	case len(parts) >= 3 && info.Verb != "proxy":
		info.Subresource = parts[2]
		fallthrough
	case len(parts) >= 2:
		info.Name = parts[1]
		fallthrough
	case len(parts) >= 1:
		info.Resource = parts[0]
	}

	if info.Name == "" && info.Verb == "get" {
		q := r.URL.Query()
		opts, ok := parseListOptions(q)
		if !ok {
			// Kubernetes falls back to reading only watch when the list
			// options do not parse, and then never takes a name from the
			// field selector.
			opts = listOptions{watch: queryBool(q["watch"])}
		}
		if opts.watch {
			info.Verb = "watch"
		} else {
			info.Verb = "list"
		}
		if opts.hasName && isPathSegmentName(opts.name) {
			info.Name = opts.name
		}
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}

	// Selectors are not recorded for the deprecated path verbs: they do not
	// support them consistently.
	if !verbViaPath && (info.Verb == "list" || info.Verb == "watch" || info.Verb == "deletecollection") {
		q := r.URL.Query()
		if v := q["fieldSelector"]; len(v) > 0 {
			info.FieldSelector = v[0]
		}
		if v := q["labelSelector"]; len(v) > 0 {
			info.LabelSelector = v[0]
		}
	}
	return nil
}

// lowerMethod is strings.ToLower(method) without an allocation for the
// methods clients send.
func lowerMethod(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	case http.MethodHead:
		return "head"
	case http.MethodOptions:
		return "options"
	}
	return strings.ToLower(method)
}

func methodVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// splitPath returns the segments of a URL path; empty segments inside the
// path are kept, as Kubernetes does.
func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// isPathSegmentName reports whether name can be used as one path segment:
// not "." or "..", and no "/" or "%". Empty is allowed, as in Kubernetes.
func isPathSegmentName(name string) bool {
	return name != "." && name != ".." && !strings.ContainsAny(name, "/%")
}

// WithRequestInfoResolver returns the filter that resolves each request with
// res and puts the RequestInfo into its context (read it with
// RequestInfoFrom). A path the resolver cannot read (/apis/g/v/watch with
// nothing after it) names no resource: 404 NotFound with a Status, "the
// server could not find the requested resource". Kubernetes answers a plain
// text 500 "failed to create RequestInfo" there; a client's bad path is
// never a server error here.
func WithRequestInfoResolver(res RequestInfoResolver) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var info *RequestInfo
			if v := room(r.Context(), requestInfoKey{}, roomInfo); v != nil {
				info = &v.infoRoom
			} else {
				info = &RequestInfo{}
			}
			if err := res.resolve(r, info); err != nil {
				WriteStatus(w, &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure,
					Message: "the server could not find the requested resource", Reason: meta.StatusReasonNotFound,
					Details: &meta.StatusDetails{}, Code: http.StatusNotFound})
				return
			}
			next.ServeHTTP(w, RequestWithContext(r, ContextWithRequestInfo(r.Context(), info)))
		})
	}
}

// requestInfo returns the RequestInfo in r's context, resolving it with the
// default resolver when no filter put one there, so a filter used without
// WithRequestInfoResolver still applies Kubernetes' rules.
func requestInfo(r *http.Request) *RequestInfo {
	if info, ok := RequestInfoFrom(r.Context()); ok {
		return info
	}
	info, _ := RequestInfoResolver{}.Resolve(r)
	return info
}
