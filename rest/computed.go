// This file serves computed resources: resources that are not stored but
// computed on read by a Getter and a Lister (metrics-server's NodeMetrics and
// PodMetrics are the model). They answer get and list (with label and field
// selectors and Table output), watch from a watch cache over their Events
// (or 405 without, as an apiserver whose storage is no rest.Watcher), and
// every write with the 405 go-restful gives a method without a route.

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// Getter computes one object of a resource that is not stored: its complete
// JSON (kind, apiVersion and metadata included). A missing object is an error
// that wraps storage.ErrNotFound (404 NotFound). namespace is "" for a
// cluster-scoped resource. Get is called concurrently from request goroutines.
type Getter interface {
	Get(ctx context.Context, namespace, name string) ([]byte, error)
}

// GetterFunc adapts a function to a Getter.
type GetterFunc func(ctx context.Context, namespace, name string) ([]byte, error)

// Get calls f.
func (f GetterFunc) Get(ctx context.Context, namespace, name string) ([]byte, error) {
	return f(ctx, namespace, name)
}

// Lister computes the objects of a resource that is not stored, each as its
// complete JSON. namespace "" means every namespace (or a cluster-scoped
// resource). The selectors in opts are hints: the handler filters the result
// again, so a Lister may ignore them. List is called concurrently from
// request goroutines.
type Lister interface {
	List(ctx context.Context, namespace string, opts ListOptions) ([][]byte, error)
}

// ListerFunc adapts a function to a Lister.
type ListerFunc func(ctx context.Context, namespace string, opts ListOptions) ([][]byte, error)

// List calls f.
func (f ListerFunc) List(ctx context.Context, namespace string, opts ListOptions) ([][]byte, error) {
	return f(ctx, namespace, opts)
}

var (
	_ Getter      = GetterFunc(nil)
	_ Lister      = ListerFunc(nil)
	_ EventSource = EventSourceFunc(nil)
)

// EventSource feeds the watch of a computed resource. Run first puts every
// object that exists (sink.Put with its complete JSON) and calls
// sink.Synced; then, until ctx ends, it puts an object when it appears or
// changes (an unchanged object is no event) and calls sink.Remove when one
// goes away. Run is called only while someone watches the resource (the
// Builder's watch.OnDemand), each time anew, so that nothing is spent on
// the changes while nobody does; a watch waits for Synced.
type EventSource interface {
	Run(ctx context.Context, sink EventSink) error
}

// EventSourceFunc adapts a function to an EventSource.
type EventSourceFunc func(ctx context.Context, sink EventSink) error

// Run calls f.
func (f EventSourceFunc) Run(ctx context.Context, sink EventSink) error { return f(ctx, sink) }

// EventSink receives a computed resource's changes (watch.Feed is one).
type EventSink interface {
	// Put records an object's complete JSON as its current state.
	Put(data []byte) error
	// Remove records that an object is gone.
	Remove(namespace, name string) error
	// Synced says that every object that exists has been put.
	Synced()
}

// WatchStore serves the watch of a computed resource (Resource's
// WatchStorage): watch.OnDemand, or a watch.Cacher over a watch.Feed. The
// returned Watcher is stopped by the handler when the watch ends. It may
// also implement storage.RevisionReader (a watch from a resourceVersion
// beyond it answers 504, as kube's) and InitialEventsSender (watch-lists).
// Watch is called concurrently from request goroutines.
type WatchStore interface {
	Watch(ctx context.Context, key string, opts storage.WatchOptions) (storage.Watcher, error)
}

// ListOptions are the selectors of a list of a computed resource.
type ListOptions struct {
	// Labels is the labelSelector; the zero value selects everything.
	Labels meta.LabelSelector
	// Fields is the fieldSelector (metadata.name, metadata.namespace and the
	// Strategy's SelectableFields); the zero value selects everything.
	Fields meta.FieldSelector
}

// computed reports whether the resource is computed rather than stored.
func (r Resource) computed() bool { return r.Storage == nil && (r.Getter != nil || r.Lister != nil) }

// computedVerbs are the discovery verbs of a computed resource.
func (r Resource) computedVerbs() []string {
	var v []string
	if r.Getter != nil {
		v = append(v, "get")
	}
	if r.Lister != nil {
		v = append(v, "list")
	}
	if r.WatchStorage != nil {
		v = append(v, "watch")
	}
	return v
}

// errMethodNotAllowed is the 405 k8s.io/apiserver gives a method its
// go-restful container has no route for (a write to a read-only resource):
// NewGenericServerResponse(405) with empty details.
func errMethodNotAllowed() *meta.Status {
	return &meta.Status{Kind: "Status", APIVersion: "v1", Status: meta.StatusFailure, Code: http.StatusMethodNotAllowed,
		Reason: meta.StatusReasonMethodNotAllowed, Message: "the server does not allow this method on the requested resource",
		Details: &meta.StatusDetails{}}
}

// serveComputed dispatches a request for a computed resource; scope and
// name checks are done.
func (rh *resourceHandler) serveComputed(w http.ResponseWriter, r *http.Request, o output, info *filters.RequestInfo, name string) {
	switch {
	case info.Verb == "get" && rh.Getter != nil:
		if st := checkResourceVersion(filters.QueryValue(r, "resourceVersion")); st != nil {
			filters.WriteStatus(w, st)
			return
		}
		data, err := rh.Getter.Get(r.Context(), info.Namespace, name)
		if err != nil {
			rh.fail(w, err, ErrorContext{Name: name, Verb: "get"})
			return
		}
		rh.writeComputed(w, o, data)
	case info.Verb == "list" && rh.Lister != nil:
		p, st := rh.parseListParams(r.URL.Query(), false)
		if st != nil {
			filters.WriteStatus(w, st)
			return
		}
		items, err := rh.Lister.List(r.Context(), info.Namespace, ListOptions{Labels: p.labels, Fields: p.fields})
		if err != nil {
			rh.fail(w, err, ErrorContext{Verb: "list"})
			return
		}
		rh.writeComputedList(w, o, rh.selectComputed(items, info.Namespace, p))
	case info.Verb == "watch" && rh.WatchStorage != nil:
		rh.watch(w, r, o, info.Namespace, name)
	case info.Verb == "watch":
		// The list route exists, the storage is no watcher: k8s's ListResource
		// answers MethodNotSupported.
		filters.WriteStatus(w, meta.NewMethodNotSupported(rh.gr, "watch"))
	default:
		filters.WriteStatus(w, errMethodNotAllowed())
	}
}

// selectComputed keeps the items in namespace (all for "") that the
// selectors match.
func (rh *resourceHandler) selectComputed(items [][]byte, namespace string, p listParams) []storage.Object {
	pred := rh.predicate(p)
	out := make([]storage.Object, 0, len(items))
	for _, data := range items {
		m, err := storage.ParseMeta(data)
		if err != nil {
			continue
		}
		if namespace != "" && m.Namespace != namespace {
			continue
		}
		o := storage.Object{Data: data, Meta: m}
		if pred != nil && !pred.Matches(&o) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// writeComputed writes one computed object in the negotiated output.
func (rh *resourceHandler) writeComputed(w http.ResponseWriter, o output, data []byte) {
	switch o.kind {
	case outTable:
		data = rh.encodeTable(o, []storage.Object{{Data: data}}, meta.ListMeta{}, true)
	case outPartial:
		data = appendPartial(nil, o.apiVersion(), data)
	}
	rh.h.writeObject(w, o.gzip, http.StatusOK, data)
}

// writeComputedList writes a list with empty list metadata, as
// metrics-server does: a computed list has no resourceVersion.
func (rh *resourceHandler) writeComputedList(w http.ResponseWriter, o output, items []storage.Object) {
	var buf []byte
	switch o.kind {
	case outTable:
		rh.h.writeObject(w, o.gzip, http.StatusOK, rh.encodeTable(o, items, meta.ListMeta{}, true))
		return
	case outPartialList:
		buf = append(buf, `{"kind":"PartialObjectMetadataList","apiVersion":`...)
		buf = strconv.AppendQuote(buf, o.apiVersion())
		buf = append(buf, `,"metadata":{},"items":[`...)
		for i := range items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendPartial(buf, o.apiVersion(), items[i].Data)
		}
	default:
		buf = append(buf, rh.listHead...)
		buf = append(buf, `},"items":[`...)
		for i := range items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, items[i].Data...)
		}
	}
	buf = append(buf, "]}"...)
	rh.h.writeObject(w, o.gzip, http.StatusOK, buf)
}

// ObjectJSON is the JSON of one object of the computed resource r, the
// envelope filled in: kind and apiVersion from r, metadata with name,
// namespace (for a namespaced resource) and labels (when any), then the
// top-level fields of fields, any value that encodes as a JSON object (a
// struct with json tags, or a map) and holds none of kind, apiVersion or
// metadata:
//
//	return r.ObjectJSON("", name, nil, struct {
//		Timestamp time.Time         `json:"timestamp"`
//		Usage     map[string]string `json:"usage"`
//	}{now, usage})
func (r Resource) ObjectJSON(namespace, name string, labels map[string]string, fields any) ([]byte, error) {
	md := map[string]any{"name": name}
	if r.Namespaced {
		md["namespace"] = namespace
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	head, err := json.Marshal(struct {
		Kind       string         `json:"kind"`
		APIVersion string         `json:"apiVersion"`
		Metadata   map[string]any `json:"metadata"`
	}{r.Kind, r.Group + "/" + r.Version, md})
	if err != nil {
		return nil, err
	}
	if fields == nil {
		return head, nil
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("rest: the fields of %s %q are not a JSON object", r.Kind, name)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return nil, err
	}
	for _, k := range []string{"kind", "apiVersion", "metadata"} {
		if _, ok := keys[k]; ok {
			return nil, fmt.Errorf("rest: the fields of %s %q hold %s, which ObjectJSON sets", r.Kind, name, k)
		}
	}
	if len(keys) == 0 {
		return head, nil
	}
	out := append(head[:len(head)-1:len(head)-1], ',')
	return append(out, body[1:]...), nil
}

// NotFound is what a Getter returns for an object that does not exist: the
// request answers 404 NotFound with kube's message
// (`nodes.metrics.k8s.io "a" not found`).
func NotFound(namespace, name string) error {
	if namespace != "" {
		return fmt.Errorf("%s/%s: %w", namespace, name, storage.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", name, storage.ErrNotFound)
}
