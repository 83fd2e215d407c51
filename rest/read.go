// This file holds the read verbs, get and list. Both copy stored bytes to the
// wire: a GET writes the object's bytes, a LIST a prefix, the items' bytes
// joined by commas, and a suffix.

package rest

import (
	"net/http"
	"strconv"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

func (rh *resourceHandler) key(namespace, name string) string {
	return storage.ObjectKey(rh.Group, rh.Plural, namespace, name)
}

func (rh *resourceHandler) get(w http.ResponseWriter, r *http.Request, o output, namespace, name string) {
	rv := r.URL.Query().Get("resourceVersion")
	if st := checkResourceVersion(rv); st != nil {
		filters.WriteStatus(w, st)
		return
	}
	step := startStorage(r.Context())
	obj, err := rh.Storage.Get(r.Context(), rh.key(namespace, name), storage.GetOptions{ResourceVersion: rv})
	step.storageDone(r.Context(), err)
	if err != nil {
		rh.fail(w, err, ErrorContext{Name: name, Verb: "get", ResourceVersion: rv})
		return
	}
	rh.writeOne(w, o, http.StatusOK, obj.Data)
}

func (rh *resourceHandler) list(w http.ResponseWriter, r *http.Request, o output, namespace string) {
	p, st := rh.parseListParams(r.URL.Query(), false)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	step := startStorage(r.Context())
	res, err := rh.Storage.List(r.Context(), storage.ResourcePrefix(rh.Group, rh.Plural, namespace), rh.storageListOptions(p))
	step.storageDone(r.Context(), err)
	if err != nil {
		rh.fail(w, err, ErrorContext{Verb: "list", ResourceVersion: p.resourceVersion, Continue: p.continueToken})
		return
	}
	rh.writeList(w, o, res.Items, res.ResourceVersion, res.Continue, res.RemainingItemCount)
}

func (rh *resourceHandler) storageListOptions(p listParams) storage.ListOptions {
	return storage.ListOptions{
		ResourceVersion:      p.resourceVersion,
		ResourceVersionMatch: storage.ResourceVersionMatch(p.rvMatch),
		Limit:                p.limit,
		Continue:             p.continueToken,
		Predicate:            rh.predicate(p),
	}
}

// writeList writes a <Kind>List of items in one buffer sized up front:
// {"kind":..,"apiVersion":..,"metadata":{...},"items":[item,item]}\n; or
// the Table or PartialObjectMetadataList of them.
func (rh *resourceHandler) writeList(w http.ResponseWriter, o output, items []storage.Object, rev uint64, cont string, remaining *int64) {
	switch o.kind {
	case outTable:
		writeObject(w, http.StatusOK, rh.encodeTable(o, items, meta.ListMeta{ResourceVersion: storage.FormatResourceVersion(rev), Continue: cont, RemainingItemCount: remaining}, true))
		return
	case outPartialList:
		buf := append([]byte(nil), `{"kind":"PartialObjectMetadataList","apiVersion":`...)
		buf = strconv.AppendQuote(buf, o.apiVersion())
		buf = append(buf, `,"metadata":{`...)
		buf = appendListMeta(buf, rev, cont, remaining)
		buf = append(buf, `},"items":[`...)
		for i := range items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendPartial(buf, o.apiVersion(), items[i].Data)
		}
		buf = append(buf, "]}"...)
		writeObject(w, http.StatusOK, buf)
		return
	}
	n := len(rh.listHead) + 64 + len(cont) + len(items)
	for i := range items {
		n += len(items[i].Data)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, rh.listHead...)
	buf = appendListMeta(buf, rev, cont, remaining) // continue tokens are base64url: no escaping differs from JSON
	buf = append(buf, `},"items":[`...)
	for i := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, items[i].Data...)
	}
	buf = append(buf, "]}\n"...)
	h := w.Header()
	h.Set("Content-Type", mediaJSON)
	h.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}
