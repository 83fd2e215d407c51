// This file holds NewHandler and the dispatch of a request to a resource verb
// or a discovery document.

package rest

import (
	"cmp"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/internal/managedfields"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/storage"
)

// handler serves the declared resources and discovery. It is immutable after
// NewHandler, so it is safe for concurrent use.
type handler struct {
	resources map[resourceKey]*resourceHandler
	// contentTypeJSON is the Content-Type value of a JSON response, shared
	// by every response as flowcontrol shares its header values: its
	// capacity equals its length, so an append by a filter copies, and Set
	// and Del replace it. nil (a handler made by a test) means Set.
	contentTypeJSON []string
	discovery       *discoveryDocs
	openapi         *openapiDocs
	minTimeout      time.Duration
	shutdown        context.Context // Config.Shutdown; nil: none
	admission       Admitter
	// watchEvents is Config.WatchEvents.
	watchEvents func(group, version, kind string) func(size int)
	// deleteWorkers is Config.DeleteCollectionWorkers, at least 1.
	deleteWorkers int
	// listBufs holds the buffers LISTs are written through (*[]byte of
	// listChunk bytes), so that a LIST allocates nothing in proportion to
	// its size.
	listBufs sync.Pool
	// gzips pools the writers of compressed responses; noCompression is
	// Config.DisableResponseCompression.
	gzips         gzipWriters
	noCompression bool
	// jsonPasses, set only by tests and benchmarks, counts the write path's
	// JSON passes: each decode or encode of a whole object or of its
	// metadata (see jsonPass).
	jsonPasses *atomic.Int64
	// conversions and frameEncodes, set only by tests and benchmarks,
	// count the objects converted between versions and the watch frames
	// encoded.
	conversions, frameEncodes *atomic.Int64
}

// jsonPass records n JSON passes when a test asked for the count.
func (h *handler) jsonPass(n int64) {
	if h.jsonPasses != nil {
		h.jsonPasses.Add(n)
	}
}

type resourceKey struct{ group, version, plural string }

// resourceHandler serves one resource; the byte strings are precomputed
// pieces of its responses.
type resourceHandler struct {
	Resource
	gr         meta.GroupResource
	gk         meta.GroupKind
	apiVersion string
	// listHead is `{"kind":"<ListKind>","apiVersion":"<g/v>","metadata":{`.
	listHead string
	// fieldNames are the selectable field names, built-ins first.
	fieldNames []string
	// columns are the Table columns.
	columns tableColumns
	// blueprint is the base64 of an empty list of the kind, the
	// initial-events-list-blueprint annotation of a watch-list's bookmark.
	blueprint string
	// fields is the field manager; nil when field management is off.
	fields *managedfields.Manager
	// versions is shared by the versions of a resource served at several;
	// nil for one version.
	versions *versionSet
	// warning is the deprecation warning of a deprecated version.
	warning string
	// servedPrefix is how stored bytes at this version begin:
	// {"apiVersion":"<group/version>" (see isServed).
	servedPrefix []byte
	h            *handler
}

var _ http.Handler = (*handler)(nil)

// NewHandler returns the handler of cfg's resources and of discovery. It
// checks the whole Config and returns every problem at once, joined; each is a
// *ConfigError.
func NewHandler(cfg Config) (http.Handler, error) {
	if err := validateResources(cfg.Resources); err != nil {
		return nil, err
	}
	h := &handler{resources: map[resourceKey]*resourceHandler{}, contentTypeJSON: []string{mediaJSON}[:1:1], minTimeout: cfg.MinRequestTimeout, admission: cfg.Admission, watchEvents: cfg.WatchEvents,
		deleteWorkers: max(cfg.DeleteCollectionWorkers, 1), noCompression: cfg.DisableResponseCompression}
	if h.minTimeout <= 0 {
		h.minTimeout = defaultMinRequestTimeout
	}
	h.shutdown = cfg.Shutdown
	sets := map[[2]string]*versionSet{}
	siblings := map[[2]string][]Resource{} // the versions of each stored resource
	for _, set := range versionSets(cfg.Resources) {
		siblings[[2]string{set[0].Group, set[0].Plural}] = set
		if len(set) < 2 {
			continue
		}
		vs := &versionSet{conv: noConversion{}, schemas: map[string]*schema.Props{}}
		var conv Converter
		for _, r := range set {
			vs.versions = append(vs.versions, r.Version)
			vs.schemas[r.Group+"/"+r.Version] = r.Schema
			if r.StorageVersion {
				vs.storageVersion = r.Version
			}
			if r.Conversion != nil {
				conv = r.Conversion
			}
		}
		vs.storageAPIVersion = set[0].Group + "/" + vs.storageVersion
		if cf, ok := funcsOf(conv); ok {
			if cf.Hub == "" {
				cf.Hub = vs.storageVersion
			}
			conv = cf
		}
		if conv != nil {
			vs.conv = conv
		}
		sets[[2]string{set[0].Group, set[0].Plural}] = vs
	}
	var rs []*resourceHandler
	for _, r := range cfg.Resources {
		r = r.complete()
		gv := r.Group + "/" + r.Version
		rh := &resourceHandler{
			Resource:   r,
			gr:         meta.GroupResource{Group: r.Group, Resource: r.Plural},
			gk:         meta.GroupKind{Group: r.Group, Kind: r.Kind},
			apiVersion: gv,
			listHead:   `{"kind":` + strconv.Quote(r.ListKind) + `,"apiVersion":` + strconv.Quote(gv) + `,"metadata":{`,
			fieldNames: append([]string{"metadata.name", "metadata.namespace"}, r.Strategy.SelectableFields...),
			columns:    newTableColumns(r.PrinterColumns),
			blueprint: base64.StdEncoding.EncodeToString([]byte(`{"kind":` + strconv.Quote(r.ListKind) +
				`,"apiVersion":` + strconv.Quote(gv) + `,"metadata":{},"items":[]}`)),
			h: h,
		}
		rh.servedPrefix = []byte(`{"apiVersion":` + strconv.Quote(gv))
		if r.Storage != nil {
			rh.versions = sets[[2]string{r.Group, r.Plural}]
		}
		if r.Deprecated {
			rh.warning = cmp.Or(r.DeprecationWarning, deprecationWarning(r, siblings[[2]string{r.Group, r.Plural}]))
		}
		if !cfg.DisableManagedFields {
			mc := managedfields.Config{APIVersion: gv, Kind: r.Kind, Schema: r.Schema, StatusSubresource: r.StatusSubresource}
			if vs := rh.versions; vs != nil {
				// Entries recorded at another version compare on the
				// object converted to it.
				mc.Versions = map[string]*schema.Props{}
				for av, s := range vs.schemas {
					if av != gv {
						mc.Versions[av] = s
					}
				}
				mc.Convert = func(obj map[string]any, apiVersion string) (map[string]any, error) {
					_, v := splitAPIVersion(apiVersion)
					return rh.convertObject(context.Background(), obj, v)
				}
			}
			fm, err := managedfields.New(mc)
			if err != nil {
				return nil, err
			}
			rh.fields = fm
		}
		h.resources[resourceKey{r.Group, r.Version, r.Plural}] = rh
		rs = append(rs, rh)
	}
	d, err := buildDiscovery(rs)
	if err != nil {
		return nil, err
	}
	h.discovery = d
	if h.openapi, err = buildOpenAPI(cfg.OpenAPITitle, rs); err != nil {
		return nil, err
	}
	return h, nil
}

// ServeHTTP serves discovery paths by path and everything else by the
// RequestInfo in the context.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.discovery.serve(w, r) || h.openapi.serve(w, r) {
		return
	}
	info, ok := filters.RequestInfoFrom(r.Context())
	if !ok {
		filters.WriteStatus(w, meta.NewInternalError(errNoRequestInfo))
		return
	}
	if !info.IsResourceRequest || info.APIPrefix != "apis" {
		filters.WriteStatus(w, errNotFoundPath())
		return
	}
	rh := h.resources[resourceKey{info.APIGroup, info.APIVersion, info.Resource}]
	if rh == nil || (info.Subresource != "" && !(info.Subresource == "status" && rh.StatusSubresource) && !(info.Subresource == "scale" && rh.Scale != nil)) {
		filters.WriteStatus(w, errNotFoundPath())
		return
	}
	if rh.warning != "" {
		filters.AddWarning(r.Context(), rh.warning)
	}
	rh.serve(w, r, info)
}

// errNoRequestInfo is the 500 of a handler mounted without the resolver.
const errNoRequestInfo = constError("no RequestInfo found in the context")

type constError string

func (e constError) Error() string { return string(e) }

// serve dispatches one resource request by verb, after the checks of routes
// k8s.io/apiserver would not have installed.
func (rh *resourceHandler) serve(w http.ResponseWriter, r *http.Request, info *filters.RequestInfo) {
	// The name in the URL, not the one the resolver took from a field selector.
	urlName := ""
	if len(info.Parts) >= 2 {
		urlName = info.Parts[1]
	}
	if rh.Namespaced {
		// Named requests and writes exist only under namespaces/<ns>/.
		if info.Namespace == "" && (urlName != "" || info.Verb == "create" || info.Verb == "deletecollection") {
			filters.WriteStatus(w, errNotFoundPath())
			return
		}
	} else if info.Namespace != "" {
		filters.WriteStatus(w, errNotFoundPath())
		return
	}
	if urlName == "" && (info.Verb == "update" || info.Verb == "patch") {
		// k8s.io/apiserver installs no PUT or PATCH on a collection.
		filters.WriteStatus(w, errMethodNotAllowed())
		return
	}
	sub := info.Subresource
	if sub != "" {
		switch info.Verb {
		case "get", "update", "patch":
		default:
			filters.WriteStatus(w, meta.NewMethodNotSupported(rh.gr, info.Verb))
			return
		}
	}
	sc := scopeObject
	switch info.Verb {
	case "list", "deletecollection":
		sc = scopeList
	case "watch":
		sc = scopeWatch
	}
	out, st := negotiateOutput(r.Header.Get("Accept"), sc, filters.QueryValue(r, "includeObject"))
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	if !rh.h.noCompression && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		out.gzip = true
	}
	if out.yaml { // the JSON answer is written to yw, which compresses the YAML
		yw := &yamlWriter{ResponseWriter: w, h: rh.h, gzip: out.gzip}
		defer yw.flush()
		w = yw
		out.gzip = false
	}
	if st := rh.checkPathNames(info, urlName); st != nil {
		filters.WriteStatus(w, st)
		return
	}
	if rh.computed() {
		rh.serveComputed(w, r, out, info, urlName)
		return
	}
	if sub == "scale" {
		switch info.Verb {
		case "get":
			rh.getScale(w, r, info.Namespace, urlName)
		case "update":
			rh.updateScale(w, r, info.Namespace, urlName)
		case "patch":
			rh.patchScale(w, r, info.Namespace, urlName)
		}
		return
	}
	switch info.Verb {
	case "get":
		rh.get(w, r, out, info.Namespace, urlName)
	case "list":
		rh.list(w, r, out, info.Namespace)
	case "watch":
		rh.watch(w, r, out, info.Namespace, urlName)
	case "create":
		rh.create(w, r, out, info.Namespace)
	case "update":
		rh.update(w, r, out, sub, info.Namespace, urlName)
	case "patch":
		rh.patch(w, r, out, sub, info.Namespace, urlName)
	case "delete":
		rh.delete(w, r, out, info.Namespace, urlName)
	case "deletecollection":
		rh.deleteCollection(w, r, out, info.Namespace)
	default:
		filters.WriteStatus(w, meta.NewMethodNotSupported(rh.gr, info.Verb))
	}
}

// checkPathNames refuses, before storage is reached, a namespace or name in
// the path that can never name an object. Kubernetes checks only the name's
// path-segment rules and lets a namespace of ".." reach storage, which
// answers 500 "invalid key"; here:
//
//   - a namespace or name of "." or "..", or holding "/" or "%": 400, with
//     k8s's "Name parameter invalid" message (and its like for namespaces);
//   - a namespace that is not a DNS-1123 label (what a Namespace's name
//     must be): 400 naming the rule;
//   - for a stored resource, a name that is not a DNS-1123 subdomain (every
//     stored object's name is one): 404 NotFound, the answer storage would
//     give, for get, patch and delete. A watch of such a name is served (it
//     sees nothing, as in k8s); an update is left to create-on-update's
//     validation, which answers 422 naming metadata.name, as k8s does.
func (rh *resourceHandler) checkPathNames(info *filters.RequestInfo, urlName string) *meta.Status {
	if ns := info.Namespace; ns != "" {
		if msgs := meta.ValidatePathSegmentName(ns, false); len(msgs) > 0 {
			return meta.NewBadRequest("Namespace parameter invalid: " + strconv.Quote(ns) + ": " + strings.Join(msgs, ";"))
		}
		if msgs := meta.NameIsDNSLabel(ns, false); len(msgs) > 0 {
			return meta.NewBadRequest("Namespace parameter invalid: " + strconv.Quote(ns) + ": " + strings.Join(msgs, ";"))
		}
	}
	if urlName == "" {
		return nil
	}
	if msgs := meta.ValidatePathSegmentName(urlName, false); len(msgs) > 0 {
		return meta.NewBadRequest("Name parameter invalid: " + strconv.Quote(urlName) + ": " + strings.Join(msgs, ";"))
	}
	if rh.computed() || info.Verb == "update" || info.Verb == "watch" {
		return nil
	}
	if len(meta.NameIsDNSSubdomain(urlName, false)) > 0 {
		return meta.NewNotFound(rh.gr, urlName)
	}
	return nil
}

// fail writes the Status for err.
func (rh *resourceHandler) fail(w http.ResponseWriter, err error, ec ErrorContext) {
	ec.Resource = rh.gr
	filters.WriteStatus(w, StatusForError(err, ec))
}

// writeOne writes one object (stored bytes, or a dry run's answer) in the
// negotiated output, at the version asked for.
func (rh *resourceHandler) writeOne(ctx context.Context, w http.ResponseWriter, o output, code int, data []byte) {
	if o.kind != outPartial {
		var err error
		if data, err = rh.asServed(ctx, data); err != nil {
			rh.fail(w, err, ErrorContext{})
			return
		}
	}
	switch o.kind {
	case outTable:
		data = rh.encodeTable(o, []storage.Object{{Data: data}}, meta.ListMeta{ResourceVersion: storage.FormatResourceVersion(resourceVersionOf(data))}, true)
	case outPartial:
		data = appendPartial(nil, o.apiVersion(), data)
	}
	rh.h.writeObject(w, o.gzip, code, data)
}

// resourceVersionOf reads metadata.resourceVersion from an object's JSON.
func resourceVersionOf(data []byte) uint64 {
	m, err := storage.ParseMeta(data)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(m.ResourceVersion, 10, 64)
	return n
}

// setContentTypeJSON sets Content-Type: application/json without an
// allocation.
func (h *handler) setContentTypeJSON(hd http.Header) {
	if h.contentTypeJSON == nil {
		hd.Set("Content-Type", mediaJSON)
		return
	}
	hd["Content-Type"] = h.contentTypeJSON
}

// writeObject writes a stored object's bytes as the response, followed by a
// newline as k8s's JSON encoder writes; gzipped when gz and it is large
// (see startBody).
func (h *handler) writeObject(w http.ResponseWriter, gz bool, code int, data []byte) {
	h.setContentTypeJSON(w.Header())
	body, done := h.startBody(w, gz, code, len(data)+1)
	_, _ = body.Write(data)
	_, _ = io.WriteString(body, "\n")
	done()
}
