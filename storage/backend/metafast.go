// This file holds the fast path of DecodeMeta: the metadata fields storage
// needs read straight from the bytes, in one string allocation, when they
// are plain (no escapes, the expected types); anything else goes to
// encoding/json, which decides.

package backend

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/annexapi/annex/storage"
)

// metaFields are the metadata members storage.Meta holds, in the order of
// decodeMetaFast's spans, and labels last (decoded apart).
const metaFields = 6

// metaField returns the index of the member key among metaFields, -1 for
// none; folded also reports a member encoding/json would take for one of
// them (or labels) only because it matches names without regard to case.
func metaField(key string) (i int, folded bool) {
	names := [metaFields + 1]string{"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "labels"}
	for i, f := range names[:metaFields] {
		if key == f {
			return i, false
		}
	}
	for _, f := range names {
		if len(key) == len(f) && strings.EqualFold(key, f) {
			return -1, true
		}
	}
	return -1, false
}

// stopScan ends forEachMember early: the fast path gives up.
type stopScan struct{}

func (stopScan) Error() string { return "not on the fast path" }

// maxFastLabels is the most labels the fast path sorts on the stack.
const maxFastLabels = 32

// decodeMetaFast decodes the metadata object md; ok is false
// when it cannot (an escaped string, a value of another type, a member whose
// name matches a field's only without regard to case, as encoding/json's
// would, or more labels than maxFastLabels): the caller decodes with
// encoding/json then. md must be valid JSON (DecodeMeta's contract). With
// alias, the strings are views into md (see DecodeMetaOf), else copies.
func decodeMetaFast(md []byte, alias bool) (m storage.Meta, ok bool) {
	// Spans of the values in md, start and end without quotes; -1: absent
	// or null. The last of duplicate members wins, as in encoding/json.
	var spans [metaFields][2]int
	for i := range spans {
		spans[i] = [2]int{-1, -1}
	}
	var pairs [2 * maxFastLabels][2]int // label key and value spans
	np := 0
	hasLabels := false
	ok = true
	err := forEachMember(md, 0, func(ks, ke, vs, ve int) error {
		key := md[ks+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			ok = false
			return stopScan{}
		}
		if string(key) == "labels" {
			switch md[vs] {
			case 'n': // null: no labels, as for a map
				hasLabels, np = false, 0
				return nil
			case '{':
			default:
				ok = false
				return stopScan{}
			}
			hasLabels, np = true, 0
			return forEachMember(md, vs, func(lks, lke, lvs, lve int) error {
				if np == len(pairs) || !plainString(md, lks, lke) || !plainString(md, lvs, lve) {
					ok = false
					return stopScan{}
				}
				pairs[np] = [2]int{lks + 1, lke - 1}
				pairs[np+1] = [2]int{lvs + 1, lve - 1}
				np += 2
				return nil
			})
		}
		i, folded := metaField(string(key))
		switch {
		case folded:
			ok = false // encoding/json would take it: let it
			return stopScan{}
		case i < 0:
			return nil
		case md[vs] == 'n':
			spans[i] = [2]int{-1, -1}
		case plainString(md, vs, ve):
			spans[i] = [2]int{vs + 1, ve - 1}
		default:
			ok = false
			return stopScan{}
		}
		return nil
	})
	if err != nil || !ok {
		return storage.Meta{}, false
	}
	var vals [metaFields]string
	if alias {
		for i, s := range spans {
			if s[1] > s[0] {
				vals[i] = unsafe.String(&md[s[0]], s[1]-s[0])
			}
		}
	} else {
		vals = copyValues(md, &spans)
	}
	m = storage.Meta{Name: vals[0], Namespace: vals[1], UID: vals[2], ResourceVersion: vals[3],
		CreationTimestamp: vals[4], DeletionTimestamp: vals[5]}
	if hasLabels && np > 0 {
		var kv [2 * maxFastLabels][]byte
		for i := range np {
			kv[i] = md[pairs[i][0]:pairs[i][1]]
		}
		m.Labels = storage.LabelsFromPairs(kv[:np])
	}
	return m, true
}

// copyValues returns the values at spans of md in one new string: the
// fields are slices of it.
func copyValues(md []byte, spans *[metaFields][2]int) (vals [metaFields]string) {
	n := 0
	for _, s := range spans {
		n += max(s[1]-s[0], 0)
	}
	var all strings.Builder
	all.Grow(n)
	for _, s := range spans {
		if s[0] >= 0 {
			all.Write(md[s[0]:s[1]])
		}
	}
	str := all.String()
	at := 0
	for i, s := range spans {
		if s[0] >= 0 {
			vals[i] = str[at : at+s[1]-s[0]]
			at += s[1] - s[0]
		}
	}
	return vals
}

// plainString reports whether b[s:e] is a JSON string without escapes or
// invalid UTF-8 (which encoding/json would replace): its bytes are its value.
func plainString(b []byte, s, e int) bool {
	return b[s] == '"' && bytes.IndexByte(b[s+1:e-1], '\\') < 0 && utf8.Valid(b[s+1:e-1])
}
