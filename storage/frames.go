// This file holds FrameCache, the memo that lets a watch event be encoded once
// however many watchers deliver it.

package storage

import "sync"

// FrameCache memoizes the encodings of one watch event. A watch cache attaches
// one FrameCache to each event it dispatches and shares it with every watcher
// that receives the event, so that the bytes written to the wire (a JSON watch
// frame, a Table row frame, a PartialObjectMetadata frame) are computed once
// per event and output kind, not once per watcher.
//
// # Contract
//
//   - A FrameCache belongs to one event. Within it, one key names one byte
//     string: consumers build keys from everything the bytes depend on besides
//     the event itself, at least the output kind and the event type as the
//     watcher sees it (for example "json/ADDED"), because a watch cache
//     translates one stored change into different types for different
//     watchers (a MODIFIED change is ADDED for a watcher whose selector the
//     object just started matching). For one event, a given type always
//     carries the same object, so type plus output kind is enough.
//   - [FrameCache.Get] calls encode at most once per key, even when called
//     concurrently; every caller gets the same slice, which nobody may modify.
//   - encode must not call Get on the same FrameCache.
//   - The zero value is ready to use. A nil *FrameCache memoizes nothing:
//     Get calls encode every time, so consumers need no nil check for events
//     from a backend that does not attach frames.
type FrameCache struct {
	mu      sync.Mutex // guards entries
	entries []*frame   // few keys per event: a slice beats a map
}

// frame is one memoized encoding.
type frame struct {
	key  string
	once sync.Once
	b    []byte
}

// Get returns the bytes for key, computing them with encode the first time.
func (c *FrameCache) Get(key string, encode func() []byte) []byte {
	if c == nil {
		return encode()
	}
	c.mu.Lock()
	var f *frame
	for _, e := range c.entries {
		if e.key == key {
			f = e
			break
		}
	}
	if f == nil {
		f = &frame{key: key}
		c.entries = append(c.entries, f)
	}
	c.mu.Unlock()
	f.once.Do(func() { f.b = encode() })
	return f.b
}
