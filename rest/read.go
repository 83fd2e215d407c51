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
	rv := filters.QueryValue(r, "resourceVersion")
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
	opts := rh.storageListOptions(p)
	// A whole list from the cache is written as it is read, in two passes;
	// a selected one is collected, so that its selectors run once per object
	// (a field selector may convert each).
	opts.Stream = o.kind == outObject && opts.Predicate == nil
	res, err := rh.Storage.List(r.Context(), storage.ResourcePrefix(rh.Group, rh.Plural, namespace), opts)
	step.storageDone(r.Context(), err)
	if err != nil {
		rh.fail(w, err, ErrorContext{Verb: "list", ResourceVersion: p.resourceVersion, Continue: p.continueToken})
		return
	}
	if res.Each != nil {
		if rh.streamList(w, o.gzip, res) {
			return
		}
		for o := range res.Each { // some items need converting: all at once
			res.Items = append(res.Items, *o)
		}
	}
	rh.writeList(r.Context(), w, o, res.Items, res.ResourceVersion, res.Continue, res.RemainingItemCount)
}

// streamList writes the list res.Each yields, when every item is stored at
// the version asked for, without collecting the items: a first pass sums
// their sizes (the Content-Length) and checks their versions, a second
// writes them. It returns false, having written nothing, when an item needs
// converting.
func (rh *resourceHandler) streamList(w http.ResponseWriter, gz bool, res storage.ListResult) bool {
	size, count := 0, 0
	served := true
	res.Each(func(o *storage.Object) bool {
		if served = rh.isServed(o.Data); !served {
			return false
		}
		size += len(o.Data)
		count++
		return true
	})
	if !served {
		return false
	}
	rh.writeItems(w, gz, res.ResourceVersion, "", nil, size, count, res.Each)
	return true
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
		rh.h.writeObject(w, o.gzip, http.StatusOK, rh.encodeTable(o, items, meta.ListMeta{ResourceVersion: storage.FormatResourceVersion(rev), Continue: cont, RemainingItemCount: remaining}, true))
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
		rh.h.writeObject(w, o.gzip, http.StatusOK, buf)
		return
	}
	size := 0
	for i := range items {
		size += len(items[i].Data)
	}
	rh.writeItems(w, o.gzip, rev, cont, remaining, size, len(items), func(yield func(*storage.Object) bool) {
		for i := range items {
			if !yield(&items[i]) {
				return
			}
		}
	})
}

// writeItems writes a <Kind>List of the count items each yields, whose
// stored bytes add up to size, with its Content-Length (or gzipped, when gz
// and it is large: see startBody), in chunks of at most listChunk bytes (the
// items' bytes copied once, into a pooled buffer).
func (rh *resourceHandler) writeItems(w http.ResponseWriter, gz bool, rev uint64, cont string, remaining *int64, size, count int, each func(yield func(*storage.Object) bool)) {
	bp := rh.h.getListBuf()
	defer rh.h.listBufs.Put(bp)
	buf := append((*bp)[:0], rh.listHead...)
	buf = appendListMeta(buf, rev, cont, remaining) // continue tokens are base64url: no escaping differs from JSON
	buf = append(buf, `},"items":[`...)
	n := len(buf) + max(count-1, 0) + len(listTail) + size
	rh.h.setContentTypeJSON(w.Header())
	body, done := rh.h.startBody(w, gz, http.StatusOK, n)
	defer done()
	// The stored bytes of the items go out through one listChunk buffer:
	// a LIST of any size is written in chunks, one Write for a small one.
	first, gone := true, false
	each(func(o *storage.Object) bool {
		d := o.Data
		if len(buf)+1+len(d) > cap(buf) {
			if _, err := body.Write(buf); err != nil {
				gone = true // the client is gone
				return false
			}
			buf = buf[:0]
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		if len(d) > cap(buf)-len(buf) { // larger than the buffer: as it is
			if _, err := body.Write(buf); err != nil {
				gone = true
				return false
			}
			buf = buf[:0]
			if _, err := body.Write(d); err != nil {
				gone = true
				return false
			}
			return true
		}
		buf = append(buf, d...)
		return true
	})
	if gone {
		return
	}
	buf = append(buf, listTail...)
	_, _ = body.Write(buf)
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
