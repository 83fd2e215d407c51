// This file holds the watch verb: a chunked stream of newline-delimited JSON
// events, each built by concatenation: {"type":"ADDED","object":<bytes>}\n.

package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/storage"
)

// InitialEventsSender is implemented by stores that serve
// storage.WatchOptions.SendInitialEvents (the watch cache). A watch-list
// (sendInitialEvents=true) on a store without it is answered with 422, as an
// apiserver with the WatchList feature gate off does, so clients fall back to
// list and watch.
type InitialEventsSender interface {
	SendsInitialEvents() bool
}

func (rh *resourceHandler) sendsInitialEvents() bool {
	s, ok := rh.watchStorage().(InitialEventsSender)
	return ok && s.SendsInitialEvents()
}

// watchStorage is what a watch reads: the Storage, or a computed
// resource's WatchStorage.
func (rh *resourceHandler) watchStorage() WatchStore {
	if rh.computed() {
		return rh.WatchStorage
	}
	return rh.Storage
}

func (rh *resourceHandler) watch(w http.ResponseWriter, r *http.Request, o output, namespace, urlName string) {
	p, st := rh.parseListParams(r.URL.Query(), true)
	if st != nil {
		filters.WriteStatus(w, st)
		return
	}
	name := urlName
	if v, ok := p.fields.RequiresExactMatch("metadata.name"); ok {
		if urlName != "" && v != urlName {
			filters.WriteStatus(w, meta.NewBadRequest("fieldSelector metadata.name doesn't match requested name"))
			return
		}
		name = v
	}
	// One object (a name and, if namespaced, a namespace): a single-key watch.
	key, recursive := storage.ResourcePrefix(rh.Group, rh.Plural, namespace), true
	if name != "" && (namespace != "" || !rh.Namespaced) && len(meta.ValidatePathSegmentName(name, false)) == 0 {
		key, recursive = rh.key(namespace, name), false
	}
	timeout := time.Duration(p.timeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Duration(float64(rh.h.minTimeout) * (1 + rand.Float64()))
	}
	// The deadline tells the watch cache when the watch ends: as in
	// Kubernetes, a watcher gets a bookmark 2 seconds before it.
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	ec := ErrorContext{Name: name, Verb: "watch", ResourceVersion: p.resourceVersion}
	// A watch from the future would wait silently; k8s answers 504 so that
	// reflectors relist. Backends that can tell their revision are asked.
	if rr, ok := rh.watchStorage().(storage.RevisionReader); ok && p.resourceVersion != "" {
		want, _ := strconv.ParseUint(p.resourceVersion, 10, 64)
		cur, err := rr.CurrentRevision(ctx)
		if err == nil && want > cur {
			err = &storage.Error{Err: storage.ErrTooLargeResourceVersion, ResourceVersion: cur}
		}
		if err != nil {
			rh.fail(w, err, ec)
			return
		}
	}
	watcher, err := rh.watchStorage().Watch(ctx, key, storage.WatchOptions{
		ResourceVersion:   p.resourceVersion,
		Recursive:         recursive,
		Predicate:         rh.predicate(p),
		ProgressNotify:    p.allowBookmarks,
		SendInitialEvents: p.sendInitialEvents,
	})
	if err != nil && !errors.Is(err, storage.ErrExpired) {
		rh.fail(w, err, ec)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	if err != nil {
		// A start revision already compacted: 200, then one ERROR event, as
		// the watch cache answers.
		_, _ = w.Write(rh.appendError(nil, err, ec))
		_ = rc.Flush()
		return
	}
	defer watcher.Stop()
	events := watcher.ResultChan()
	// The loop waits on the events alone, not in a select that also waits
	// for the watch's end: a receive from one channel costs a fraction of
	// a select over three (which locks every channel it waits on, twice),
	// and it is paid at every event of every watcher. A watch ends when its
	// context does, and its channel then closes (storage.Interface's
	// contract, storagetest's context_cancel_closes_channel): the deadline,
	// the client's going, and the server's shutdown, which ends ctx here.
	if rh.h.shutdown != nil {
		defer context.AfterFunc(rh.h.shutdown, cancel)()
	}
	done := ctx.Done()
	// Priority and fairness holds the watch's seats until its initial events
	// are sent (filters.WatchInitialized): a watch-list's end with its
	// bookmark, a watch from "" or "0" once its first burst is written (the
	// watch cache has queued the state's ADDED events by now), and a replay
	// from a resourceVersion at once.
	initial := p.resourceVersion == "" || p.resourceVersion == "0"
	switch {
	case p.sendInitialEvents:
		initial = false // the bookmark tells
	case !initial || len(events) == 0:
		filters.WatchInitialized(ctx)
	}
	// Frames shared by every watcher of an event (the memo's) are written
	// as they are; buf holds only the frames built for this watcher.
	var buf, frame []byte
	var sent func(size int)
	if rh.h.watchEvents != nil {
		sent = rh.h.watchEvents(rh.Group, rh.Version, rh.Plural)
	}
	first := true // a Table's first event carries the column definitions
	// The memo's keys, built once for the watch rather than per event.
	keys := frameKeys{prefix: o.frameKey() + "/" + rh.Version + "/"}
	for {
		ev, ok := <-events
		if !ok {
			return
		}
		// An event already queued when the watch ended is not written (a
		// non-blocking receive: no lock while the watch goes on).
		select {
		case <-done:
			return
		default:
		}
		switch ev.Type {
		case storage.EventError:
			_, _ = w.Write(rh.appendError(nil, ev.Err, ec))
			_ = rc.Flush()
			return
		case storage.EventBookmark:
			if ev.InitialEventsEnd {
				filters.WatchInitialized(ctx)
			}
			if !p.allowBookmarks {
				continue
			}
			frame = rh.bookmarkFrame(o, ev)
		default:
			if o.kind == outTable && first {
				buf = rh.appendTableEvent(buf[:0], o, ev, true)
				frame = buf
			} else if ev.Memo == nil && o.kind == outObject && rh.isServed(ev.Object.Data) {
				// An initial event (the cache keeps no frames for its
				// objects) at the stored version: its frame is the
				// stored bytes between a head and a tail, copied once,
				// into buf, instead of encoded into a new buffer.
				buf = appendEvent(buf[:0], ev.Type, ev.Object.Data)
				frame = buf
			} else {
				// Frames are shared by the watchers of every version of
				// the resource: the version is part of the key.
				frame = ev.Memo.Get(keys.of(ev.Type), func() []byte {
					return rh.encodeEvent(o, ev)
				})
			}
			first = false
			if isErrorFrame(frame) { // the object could not be converted
				_, _ = w.Write(frame)
				_ = rc.Flush()
				return
			}
		}
		if _, err := w.Write(frame); err != nil {
			return
		}
		if sent != nil {
			sent(len(frame))
		}
		if len(events) == 0 {
			if err := rc.Flush(); err != nil {
				return
			}
			// buf served a burst (initial events, a Table's first): an
			// idle watcher keeps no buffer the size of its largest frame.
			buf = nil
			if initial {
				initial = false
				filters.WatchInitialized(ctx)
			}
		}
	}
}

// frameKeys are a watcher's keys into an event's memo: its output's frame
// key and the served version, then the event's type. The key of each type
// is built the first time it is needed and kept for the watch, since a
// watcher asks for one at every event.
type frameKeys struct {
	prefix string
	byType [3]string // ADDED, MODIFIED, DELETED
}

func (k *frameKeys) of(t storage.EventType) string {
	i := -1
	switch t {
	case storage.EventAdded:
		i = 0
	case storage.EventModified:
		i = 1
	case storage.EventDeleted:
		i = 2
	}
	if i < 0 {
		return k.prefix + string(t)
	}
	if k.byType[i] == "" {
		k.byType[i] = k.prefix + string(t)
	}
	return k.byType[i]
}

// encodeEvent encodes one watch event in the output o; the bytes may be
// shared by every watcher of the event (see output.frameKey).
func (rh *resourceHandler) encodeEvent(o output, ev storage.Event) []byte {
	if rh.h.frameEncodes != nil {
		rh.h.frameEncodes.Add(1)
	}
	if o.kind != outPartial {
		data, err := rh.asServedObject(context.Background(), &ev.Object)
		if err != nil {
			return rh.appendError(nil, err, ErrorContext{Verb: "watch"})
		}
		ev.Object.Data = data
	}
	switch o.kind {
	case outTable:
		return rh.appendTableEvent(nil, o, ev, false)
	case outPartial:
		return appendEvent(nil, ev.Type, appendPartial(nil, o.apiVersion(), ev.Object.Data))
	}
	return appendEvent(nil, ev.Type, ev.Object.Data)
}

// appendTableEvent appends an event whose object is a one-row Table.
func (rh *resourceHandler) appendTableEvent(buf []byte, o output, ev storage.Event, withColumns bool) []byte {
	data, err := rh.asServedObject(context.Background(), &ev.Object)
	if err != nil {
		return rh.appendError(buf, err, ErrorContext{Verb: "watch"})
	}
	ev.Object.Data = data
	t := rh.encodeTable(o, []storage.Object{ev.Object}, meta.ListMeta{ResourceVersion: storage.FormatResourceVersion(ev.Object.ResourceVersion)}, withColumns)
	return appendEvent(buf, ev.Type, t)
}

// bookmarkFrame is a BOOKMARK event of the output's kind; the one that ends
// a watch-list's initial events carries k8s's two annotations.
func (rh *resourceHandler) bookmarkFrame(o output, ev storage.Event) []byte {
	kind, apiVersion := rh.Kind, rh.apiVersion
	switch o.kind {
	case outPartial:
		kind, apiVersion = meta.KindPartialObjectMetadata, o.apiVersion()
	case outTable:
		buf := append([]byte(nil), `{"type":"BOOKMARK","object":{"kind":"Table","apiVersion":`...)
		buf = strconv.AppendQuote(buf, o.apiVersion())
		buf = append(buf, `,"metadata":{"resourceVersion":"`...)
		buf = strconv.AppendUint(buf, ev.Object.ResourceVersion, 10)
		return append(buf, `"},"columnDefinitions":null,"rows":[]}}`+"\n"...)
	}
	var ann map[string]string
	if ev.InitialEventsEnd {
		ann = map[string]string{meta.InitialEventsAnnotation: "true", meta.InitialEventsListBlueprintAnnotation: rh.blueprint}
	}
	b, err := meta.EncodeBookmark(kind, apiVersion, storage.FormatResourceVersion(ev.Object.ResourceVersion), ann)
	if err != nil {
		return nil
	}
	return appendEvent(nil, storage.EventBookmark, b)
}

// isErrorFrame says whether a frame is an ERROR event.
func isErrorFrame(b []byte) bool { return bytes.HasPrefix(b, []byte(`{"type":"ERROR"`)) }

// appendEvent appends {"type":"<t>","object":<data>}\n.
func appendEvent(buf []byte, t storage.EventType, data []byte) []byte {
	buf = append(buf, `{"type":"`...)
	buf = append(buf, t...)
	buf = append(buf, `","object":`...)
	buf = append(buf, data...)
	return append(buf, "}\n"...)
}

// appendError appends the ERROR event of err: its Status as the object.
func (rh *resourceHandler) appendError(buf []byte, err error, ec ErrorContext) []byte {
	ec.Resource = rh.gr
	st, mErr := json.Marshal(StatusForError(err, ec))
	if mErr != nil {
		st = []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}`)
	}
	return appendEvent(buf, storage.EventError, st)
}
