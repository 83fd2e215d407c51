// This file holds the read verbs, get and list. Both copy stored bytes to the
// wire: a GET writes the object's bytes, a LIST a prefix, the items' bytes
// joined by commas, and a suffix.

package rest

import (
	"context"
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
	data, err := rh.asServedObject(r.Context(), &obj)
	if err != nil {
		rh.fail(w, err, ErrorContext{Name: name, Verb: "get"})
		return
	}
	rh.writeOne(r.Context(), w, o, http.StatusOK, data)
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
	rh.writeList(r.Context(), w, o, res.Items, res.ResourceVersion, res.Continue, res.RemainingItemCount)
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

// writeList writes a <Kind>List of items,
// {"kind":..,"apiVersion":..,"metadata":{...},"items":[item,item]}\n, with
// its Content-Length, in chunks of at most listChunk bytes (the items' stored
// bytes copied once, into a pooled buffer); or the Table or
// PartialObjectMetadataList of them.
func (rh *resourceHandler) writeList(ctx context.Context, w http.ResponseWriter, o output, items []storage.Object, rev uint64, cont string, remaining *int64) {
	if o.kind != outPartialList {
		var err error
		if items, err = rh.asServedItems(ctx, items); err != nil {
			rh.fail(w, err, ErrorContext{Verb: "list"})
			return
		}
	}
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
	bp := rh.h.getListBuf()
	defer rh.h.listBufs.Put(bp)
	buf := append((*bp)[:0], rh.listHead...)
	buf = appendListMeta(buf, rev, cont, remaining) // continue tokens are base64url: no escaping differs from JSON
	buf = append(buf, `},"items":[`...)
	n := len(buf) + max(len(items)-1, 0) + len(listTail)
	for i := range items {
		n += len(items[i].Data)
	}
	h := w.Header()
	h.Set("Content-Type", mediaJSON)
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	// The stored bytes of the items go out through one listChunk buffer:
	// a LIST of any size is written in chunks, one Write for a small one.
	for i := range items {
		d := items[i].Data
		if len(buf)+1+len(d) > cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return // the client is gone
			}
			buf = buf[:0]
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		if len(d) > cap(buf)-len(buf) { // larger than the buffer: as it is
			if _, err := w.Write(buf); err != nil {
				return
			}
			buf = buf[:0]
			if _, err := w.Write(d); err != nil {
				return
			}
			continue
		}
		buf = append(buf, d...)
	}
	buf = append(buf, listTail...)
	_, _ = w.Write(buf)
	*bp = buf[:0]
}

// listTail ends a list: the items array, the object, the line.
const listTail = "]}\n"

// listChunk is the size of the buffer a LIST is written through: large
// enough that each Write carries several HTTP/2 frames, small enough to
// stay in the pool.
const listChunk = 32 << 10

// getListBuf returns an empty buffer of listChunk bytes from the pool.
func (h *handler) getListBuf() *[]byte {
	if bp, ok := h.listBufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, listChunk)
	return &b
}
