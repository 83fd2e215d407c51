// This file holds entry, the compact form in which the cache keeps each
// current object: its key, revision and labels, a pointer to its stored
// bytes, and where in those bytes its metadata strings lie, instead of a
// whole storage.Object (whose metadata strings are views into the same
// bytes anyway: see backend.DecodeMetaOf). object rebuilds the Object.

package watch

import (
	"math"
	"unsafe"

	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/backend"
)

// entry is one current object in the cache: 80 bytes beside the object's
// bytes rather than a 160-byte storage.Object. It keeps no encodings of the
// object: the frames a watch event's memo holds live as long as the event
// stays in the ring, not as long as the object, which would double the
// cache's memory once watchers have seen each object (initial events are
// written from the stored bytes; see rest's watch loop).
type entry struct {
	key    string
	data   unsafe.Pointer // the object's Data (n bytes); nil in a probe and when full is set
	rev    uint64
	labels storage.Labels
	// full is the object itself when its metadata does not fit the compact
	// form (a string that is not a view into Data, a deletionTimestamp, a
	// string longer than 255 bytes).
	full *storage.Object
	n    uint32
	// The metadata strings Name, Namespace, UID, ResourceVersion and
	// CreationTimestamp (metaStrings) lie in Data at base+offs[i], lens[i]
	// bytes long.
	base uint32
	offs [metaStrings]uint16
	lens [metaStrings]uint8
}

// metaStrings is the number of metadata strings an entry locates in Data.
const metaStrings = 5

func entryLess(a, b *entry) bool { return a.key < b.key }

// probe is an entry to search the tree for key.
func probe(key string) *entry { return &entry{key: key} }

// newEntry returns the entry of o, a stored object the cache keeps. When
// o's metadata strings are copies (a feed's, a backend's that decodes with
// backend.DecodeMeta), they are decoded again as views into o.Data, which
// is immutable (storage.Object's contract).
func newEntry(o storage.Object) *entry {
	en := &entry{key: o.Key, rev: o.ResourceVersion, labels: o.Meta.Labels}
	if en.locate(&o) {
		return en
	}
	if m, err := backend.DecodeMetaOf(o.Data); err == nil && m == o.Meta {
		o.Meta = m
		if en.locate(&o) {
			return en
		}
	}
	full := o
	en.full = &full
	return en
}

// locate records where o's metadata strings lie in o.Data, and reports
// whether they all do (and fit the compact form).
func (en *entry) locate(o *storage.Object) bool {
	m := &o.Meta
	if len(o.Data) == 0 || len(o.Data) > math.MaxUint32 || m.DeletionTimestamp != "" {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(o.Data)))
	end := start + uintptr(len(o.Data))
	vals := [metaStrings]string{m.Name, m.Namespace, m.UID, m.ResourceVersion, m.CreationTimestamp}
	var at [metaStrings]uintptr
	base := end
	for i, s := range vals {
		if s == "" {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		if p < start || p+uintptr(len(s)) > end || len(s) > math.MaxUint8 {
			return false
		}
		at[i] = p - start
		base = min(base, at[i])
	}
	for i, s := range vals {
		if s == "" {
			continue
		}
		if at[i]-base > math.MaxUint16 {
			return false
		}
		en.offs[i], en.lens[i] = uint16(at[i]-base), uint8(len(s))
	}
	if base == end {
		base = 0 // no strings
	}
	en.data, en.n, en.base = unsafe.Pointer(unsafe.SliceData(o.Data)), uint32(len(o.Data)), uint32(base)
	return true
}

// object returns the stored object en holds.
func (en *entry) object() storage.Object {
	if en.full != nil {
		return *en.full
	}
	var vals [metaStrings]string
	for i, n := range en.lens {
		if n > 0 {
			vals[i] = unsafe.String((*byte)(unsafe.Add(en.data, int(en.base)+int(en.offs[i]))), int(n))
		}
	}
	return storage.Object{Key: en.key, ResourceVersion: en.rev, Data: unsafe.Slice((*byte)(en.data), en.n),
		Meta: storage.Meta{Name: vals[0], Namespace: vals[1], UID: vals[2], ResourceVersion: vals[3],
			CreationTimestamp: vals[4], Labels: en.labels}}
}
