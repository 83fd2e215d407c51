// This file holds the goroutine of a backend's watcher: the loop that sends
// the initial state, then follows the revision the store publishes, reads
// the watch's events behind it, and sends bookmarks, until the watch or the
// store ends. A backend supplies how to read (WatchLoop.Read) and where the
// published revision is (WatchLoop.State); the loop is the same for all.

package backend

import (
	"context"
	"errors"
	"time"

	"github.com/annexapi/annex/storage"
)

// WatchLoop is one watcher's goroutine. A backend fills it in, starts Run
// on a goroutine of its own, and returns a storage.Watcher whose
// ResultChan is Out and whose Stop cancels Ctx.
//
// Every field is set before Run; Run and the functions it calls run on one
// goroutine.
type WatchLoop struct {
	// Ctx is the watch's context: Stop cancels it.
	Ctx context.Context
	// Quit is closed when the store closes.
	Quit <-chan struct{}
	// Out is the watch's channel; Run closes it when it returns.
	Out chan storage.Event
	// Closed reports whether the store is closed: when it closes under a
	// reading consumer, Run tells it why the watch ends (an ERROR event
	// with storage.ErrClosed, best effort).
	Closed func() bool
	// State returns the revision published to watchers, a channel closed
	// when it advances, and a channel closed at the next progress
	// notification (storage.ProgressRequester).
	State func() (rev uint64, changed, progress <-chan struct{})
	// Read returns the watch's events after revision last, up to rev at
	// most (a batch of them), and the revision read up to. It makes
	// progress (upTo > last) or waits before returning, so that Run does
	// not spin; an error ends the watch with an ERROR event.
	Read func(last, rev uint64) (evs []storage.Event, upTo uint64, err error)
	// ProgressNotify sends a bookmark every ProgressInterval and after each
	// progress notification (storage.WatchOptions.ProgressNotify).
	ProgressNotify   bool
	ProgressInterval time.Duration
}

// Send delivers e unless the watch or the store ends first.
func (l *WatchLoop) Send(e storage.Event) bool {
	select {
	case l.Out <- e:
		return true
	case <-l.Ctx.Done():
		return false
	case <-l.Quit:
		return false
	}
}

// Fail delivers an ERROR event with err unless the watch or the store ends
// first.
func (l *WatchLoop) Fail(err error) {
	l.Send(storage.Event{Type: storage.EventError, Err: err})
}

// Run sends initial as ADDED events, then every event after revision last,
// in order, until the watch or the store ends; then it closes Out. start,
// when not nil, runs first (a check of the start revision): its error ends
// the watch with an ERROR event. progress is the progress channel State
// returned when the watch was created, so that a progress request made
// since is not missed.
func (l *WatchLoop) Run(last uint64, initial []storage.Object, start func() error, progress <-chan struct{}) {
	defer close(l.Out)
	defer func() {
		if l.Closed() && l.Ctx.Err() == nil {
			select {
			case l.Out <- storage.Event{Type: storage.EventError, Err: &storage.Error{Err: storage.ErrClosed}}:
			default:
			}
		}
	}()
	for _, o := range initial {
		if !l.Send(storage.Event{Type: storage.EventAdded, Object: o}) {
			return
		}
	}
	if start != nil {
		if err := start(); err != nil {
			l.Fail(err)
			return
		}
	}
	var tick <-chan time.Time
	if l.ProgressNotify {
		t := time.NewTicker(l.ProgressInterval)
		defer t.Stop()
		tick = t.C
	}
	wantBookmark := false
	for {
		rev, changed, _ := l.State()
		if last < rev {
			evs, upTo, err := l.Read(last, rev)
			if err != nil {
				if l.Ctx.Err() == nil {
					l.Fail(err)
				}
				return
			}
			for _, e := range evs {
				if !l.Send(e) {
					return
				}
			}
			last = upTo
			continue
		}
		if wantBookmark {
			wantBookmark = false
			if !l.Send(storage.Event{Type: storage.EventBookmark, Object: storage.Object{ResourceVersion: last}}) {
				return
			}
		}
		select {
		case <-changed:
		case <-progress:
			_, _, progress = l.State()
			wantBookmark = l.ProgressNotify
		case <-tick:
			wantBookmark = true
		case <-l.Ctx.Done():
			return
		case <-l.Quit:
			return
		}
	}
}

// WatchEvent is the event a watch with predicate pred sees of the write at
// rev to key: obj is the new state (nil for a deletion), prev the previous
// one (nil after a create). It applies the predicate to both states as
// Kubernetes does: both match, MODIFIED; only the new one, ADDED; only the
// old one, DELETED with the old state at rev (as a deletion). false when
// the watch sees nothing of it.
func WatchEvent(pred storage.Predicate, key string, rev uint64, obj, prev *storage.Object) (storage.Event, bool, error) {
	oldM := prev != nil && (pred == nil || pred.Matches(prev))
	newM := obj != nil && (pred == nil || pred.Matches(obj))
	switch {
	case newM && oldM:
		return storage.Event{Type: storage.EventModified, Object: *obj, Prev: prev}, true, nil
	case newM:
		return storage.Event{Type: storage.EventAdded, Object: *obj}, true, nil
	case oldM:
		gone, err := AtRevision(key, prev, rev)
		if err != nil {
			return storage.Event{}, false, err
		}
		return storage.Event{Type: storage.EventDeleted, Object: gone, Prev: prev}, true, nil
	}
	return storage.Event{}, false, nil
}

// AtRevision is o with its revision set to rev, in its bytes and its
// metadata: the object of a DELETED event at rev. Its error names key.
func AtRevision(key string, o *storage.Object, rev uint64) (storage.Object, error) {
	data, err := SpliceResourceVersion(o.Data, rev)
	if err != nil {
		var se *storage.Error
		if errors.As(err, &se) && se.Key == "" {
			c := *se
			c.Key = key
			err = &c
		}
		return storage.Object{}, err
	}
	m := o.Meta
	m.ResourceVersion = storage.FormatResourceVersion(rev)
	return storage.Object{Key: key, ResourceVersion: rev, Data: data, Meta: m}, nil
}
