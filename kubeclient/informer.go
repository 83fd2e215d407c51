// This file holds Inform: list and watch a collection as an informer does.

package kubeclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/annexapi/annex/meta"
)

// InformHandler receives what Inform reads. Replace gets every object of a
// (re-)list, Event each change after it (type ADDED, MODIFIED or DELETED);
// Changed is called after each of them. An error from Replace or Event
// makes Inform re-list. OnError, when not nil, hears why a list or watch
// failed before Inform retries.
//
// With Metadata, the objects are PartialObjectMetadata (apiVersion
// meta.k8s.io/v1: kind, apiVersion and metadata only), as client-go's
// metadata informer asks for them: an informer that reads only names and
// labels (of a cluster's pods, say) then lists a small part of each object.
// The server must serve that form (kube-apiserver and annex do).
type InformHandler struct {
	Replace  func(items []json.RawMessage) error
	Event    func(typ string, obj json.RawMessage) error
	Changed  func()
	OnError  func(err error)
	Metadata bool
}

// The Accept headers of a metadata informer's list and watch, as client-go's
// metadata client sends them but without protobuf: the partial form, else
// the whole object (a server that cannot serve the partial form).
const (
	acceptMetadataList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	acceptMetadata     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)

// errGone means the watch's resourceVersion is too old: re-list.
var errGone = errors.New("resource version too old")

// listPageSize is how many objects one page of Inform's list asks for, as
// client-go's reflector: a large collection (a cluster's pods) comes in
// pages, never as one answer larger than a Get reads.
const listPageSize = 500

// Inform lists path (in pages of 500, as client-go does), then watches it
// from the list's resourceVersion, and re-lists after 410 Gone or a failed
// watch, backing off from retry (zero: one second) up to 30 s while the
// cluster fails, until ctx is done.
func Inform(ctx context.Context, c *Client, path string, retry time.Duration, h InformHandler) {
	if retry <= 0 {
		retry = time.Second
	}
	wait := retry
	changed := func() {
		if h.Changed != nil {
			h.Changed()
		}
	}
	listAccept, watchAccept := acceptJSON, acceptJSON
	if h.Metadata {
		listAccept, watchAccept = acceptMetadataList, acceptMetadata
	}
	for ctx.Err() == nil {
		err := func() error {
			items, rv, err := listPages(ctx, c, path, listAccept)
			if err != nil {
				return err
			}
			if err := h.Replace(items); err != nil {
				return err
			}
			changed()
			wait = retry
			for ctx.Err() == nil {
				w, err := c.watch(ctx, path+querySep(path)+"watch=true&allowWatchBookmarks=true&resourceVersion="+rv, watchAccept)
				if err != nil {
					return err
				}
				rv, err = follow(w, rv, h.Event, changed)
				w.Close()
				if err != nil {
					return err
				}
			}
			return nil
		}()
		if err == nil || ctx.Err() != nil || errors.Is(err, errGone) {
			continue
		}
		if h.OnError != nil {
			h.OnError(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// listPages lists path page by page and returns every item and the
// resourceVersion of the list (the first page's: the snapshot every page
// of a paged list is read from). An expired continue token is an error
// like any other: Inform lists again.
func listPages(ctx context.Context, c *Client, path, accept string) ([]json.RawMessage, string, error) {
	sep := querySep(path)
	var items []json.RawMessage
	var rv, cont string
	for first := true; ; first = false {
		page := path + sep + "limit=" + strconv.Itoa(listPageSize)
		if cont != "" {
			page += "&continue=" + url.QueryEscape(cont)
		}
		var list meta.List
		if err := c.do(ctx, http.MethodGet, page, accept, nil, &list); err != nil {
			return nil, "", err
		}
		if first {
			rv = list.Metadata.ResourceVersion
		}
		items = append(items, list.Items...)
		if cont = list.Metadata.Continue; cont == "" {
			return items, rv, nil
		}
	}
}

// querySep is what joins a query parameter to path: "&" when it has a
// query already, "?" otherwise.
func querySep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// follow reads watch events until the stream ends (nil, to re-watch from
// the returned resourceVersion) or fails (errGone on a 410 ERROR event).
func follow(w *Watcher, rv string, event func(string, json.RawMessage) error, changed func()) (string, error) {
	for {
		ev, err := w.Next()
		if errors.Is(err, io.EOF) {
			return rv, nil
		}
		if err != nil {
			return rv, err
		}
		var m struct {
			Metadata meta.ObjectMeta `json:"metadata"`
			Code     int             `json:"code"`
		}
		_ = json.Unmarshal(ev.Object, &m)
		switch ev.Type {
		case meta.WatchError:
			if m.Code == 410 {
				return rv, errGone
			}
			return rv, fmt.Errorf("watch error: %s", ev.Object)
		case meta.WatchBookmark:
		case meta.WatchAdded, meta.WatchModified, meta.WatchDeleted:
			if err := event(ev.Type, ev.Object); err != nil {
				return rv, err
			}
			changed()
		}
		if m.Metadata.ResourceVersion != "" {
			rv = m.Metadata.ResourceVersion
		}
	}
}
