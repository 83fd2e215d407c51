// This file holds Inform: list and watch a collection as an informer does.

package kubeclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/annexapi/annex/meta"
)

// InformHandler receives what Inform reads. Replace gets every object of a
// (re-)list, Event each change after it (type ADDED, MODIFIED or DELETED);
// Changed is called after each of them. An error from Replace or Event
// makes Inform re-list. OnError, when not nil, hears why a list or watch
// failed before Inform retries.
type InformHandler struct {
	Replace func(items []json.RawMessage) error
	Event   func(typ string, obj json.RawMessage) error
	Changed func()
	OnError func(err error)
}

// errGone means the watch's resourceVersion is too old: re-list.
var errGone = errors.New("resource version too old")

// Inform lists path, then watches it from the list's resourceVersion, and
// re-lists after 410 Gone or a failed watch, backing off from retry (zero:
// one second) up to 30 s while the cluster fails, until ctx is done.
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
	for ctx.Err() == nil {
		err := func() error {
			var list meta.List
			if err := c.Get(ctx, path, &list); err != nil {
				return err
			}
			if err := h.Replace(list.Items); err != nil {
				return err
			}
			changed()
			wait = retry
			rv := list.Metadata.ResourceVersion
			for ctx.Err() == nil {
				w, err := c.Watch(ctx, path+"?watch=true&allowWatchBookmarks=true&resourceVersion="+rv)
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
