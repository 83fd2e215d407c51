// This file holds the watch verb: a chunked stream of newline-delimited JSON
// events, each built by concatenation: {"type":"ADDED","object":<bytes>}\n.

package rest

import (
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

func (rh *resourceHandler) watch(w http.ResponseWriter, r *http.Request, namespace, urlName string) {
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
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ec := ErrorContext{Name: name, Verb: "watch", ResourceVersion: p.resourceVersion}
	// A watch from the future would wait silently; k8s answers 504 so that
	// reflectors relist. Backends that can tell their revision are asked.
	if rr, ok := rh.Storage.(storage.RevisionReader); ok && p.resourceVersion != "" {
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
	watcher, err := rh.Storage.Watch(ctx, key, storage.WatchOptions{
		ResourceVersion: p.resourceVersion,
		Recursive:       recursive,
		Predicate:       rh.predicate(p),
		ProgressNotify:  p.allowBookmarks,
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
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	events := watcher.ResultChan()
	buf := make([]byte, 0, 4096)
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-rh.h.shutdown:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			switch ev.Type {
			case storage.EventError:
				_, _ = w.Write(rh.appendError(buf[:0], ev.Err, ec))
				_ = rc.Flush()
				return
			case storage.EventBookmark:
				if !p.allowBookmarks {
					continue
				}
				buf = append(buf[:0], rh.bookmarkHead...)
				buf = strconv.AppendUint(buf, ev.Object.ResourceVersion, 10)
				buf = append(buf, `","creationTimestamp":null}}}`+"\n"...)
			default:
				buf = appendEvent(buf[:0], ev.Type, ev.Object.Data)
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
			if len(events) == 0 {
				if err := rc.Flush(); err != nil {
					return
				}
			}
		}
	}
}

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
