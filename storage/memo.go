// This file holds EventMemo, the slot that lets work derived from one watch
// event be done once however many watchers receive it.

package storage

import (
	"sync"
	"sync/atomic"
)

// EventMemo memoizes what consumers derive from one watch event. A fan-out
// (the watch cache) attaches one EventMemo to each event it dispatches and
// shares it with every watcher that receives the event; the REST layer keeps
// the event's encoded watch frames in it, so that an event is encoded once
// per output, not once per watcher.
//
// It lives here, with [Event], because it is part of an event as the fan-out
// hands it over: the watch cache creates it and the REST layer reads it, and
// those two share no package but this one. Storage itself never reads it and
// knows nothing of what the bytes are: what a key names, and what the bytes
// hold, is the consumer's business (for the REST layer, see rest/watch.go).
//
// # Contract
//
//   - An EventMemo belongs to one event. Within it, one key names one byte
//     string: a consumer builds keys from everything the bytes depend on
//     besides the event itself. The event's type is one of them: a fan-out
//     translates one stored change into different types for different
//     watchers (a MODIFIED change is ADDED for a watcher whose predicate the
//     object just started matching), all sharing one EventMemo.
//   - [EventMemo.Get] calls compute at most once per key, even when called
//     concurrently; every caller gets the same slice, which nobody may modify.
//   - compute must not call Get on the same EventMemo.
//   - The zero value is ready to use. A nil *EventMemo memoizes nothing: Get
//     calls compute every time, so consumers need no nil check for events
//     from a backend without a fan-out.
type EventMemo struct {
	// first is the first entry computed, published once its bytes are:
	// most events are watched in one form only, and every watcher but the
	// first then reads it without a lock (a fan-out to thousands of
	// watchers would otherwise take mu thousands of times per event).
	first   atomic.Pointer[memoEntry]
	mu      sync.Mutex   // guards entries
	entries []*memoEntry // few keys per event: a slice beats a map
}

// memoEntry is one memoized result.
type memoEntry struct {
	key  string
	once sync.Once
	b    []byte
}

// Get returns the bytes for key, computing them with compute the first time.
func (m *EventMemo) Get(key string, compute func() []byte) []byte {
	if m == nil {
		return compute()
	}
	if e := m.first.Load(); e != nil && e.key == key {
		return e.b
	}
	m.mu.Lock()
	var e *memoEntry
	for _, x := range m.entries {
		if x.key == key {
			e = x
			break
		}
	}
	if e == nil {
		e = &memoEntry{key: key}
		m.entries = append(m.entries, e)
	}
	m.mu.Unlock()
	e.once.Do(func() { e.b = compute() })
	m.first.CompareAndSwap(nil, e)
	return e.b
}
