// This file holds the helpers every backend uses to edit metadata inside an
// object's JSON bytes (resourceVersion, uid, creationTimestamp) without
// decoding and re-encoding the rest of the object.

package backend

import (
	"github.com/annexapi/annex/internal/jsonscan"

	"bytes"
	"encoding/json"
	"strconv"

	"github.com/annexapi/annex/storage"
)

// PrepareCreate returns data ready to be stored by a Create at revision rev,
// and the metadata parsed from it. It fails with
// storage.ErrResourceVersionSetOnCreate when metadata.resourceVersion is set to
// anything but "" or null, and with storage.ErrInvalidObject when data is not a
// JSON object or metadata is not an object.
//
// The result is data in compact form with metadata.resourceVersion set to rev,
// metadata.uid set to uid and metadata.creationTimestamp set to now when they
// are empty, null or absent. Members keep their order; members that were absent
// are appended to metadata, which is itself appended to the object when absent.
// Callers pass [NewUID] and the time in RFC 3339, UTC, second precision.
func PrepareCreate(data []byte, rev uint64, uid, now string) ([]byte, storage.Meta, error) {
	out, err := editMeta(data, rev, uid, now, true)
	if err != nil {
		return nil, storage.Meta{}, err
	}
	m, err := DecodeMeta(out)
	return out, m, err
}

// PrepareUpdate is PrepareCreate for the result of an UpdateFunc: it only sets
// metadata.resourceVersion (whatever it was) and returns the metadata.
func PrepareUpdate(data []byte, rev uint64) ([]byte, storage.Meta, error) {
	out, err := editMeta(data, rev, "", "", false)
	if err != nil {
		return nil, storage.Meta{}, err
	}
	m, err := DecodeMeta(out)
	return out, m, err
}

// SetResourceVersion returns data in compact form with
// metadata.resourceVersion set to rev, as PrepareUpdate does, without parsing
// the metadata. It fails with storage.ErrInvalidObject as PrepareCreate does.
func SetResourceVersion(data []byte, rev uint64) ([]byte, error) {
	return editMeta(data, rev, "", "", false)
}

// SpliceResourceVersion returns data with metadata.resourceVersion set to
// rev: where data holds the member already (bytes a backend stored), only
// its value is replaced, the rest copied as it is; otherwise as
// SetResourceVersion.
func SpliceResourceVersion(data []byte, rev uint64) ([]byte, error) {
	start, end, ok := ResourceVersionIndex(data)
	return SpliceResourceVersionAt(data, start, end, ok, rev)
}

// SpliceResourceVersionAt is SpliceResourceVersion with data's
// ResourceVersionIndex known already: the value goes in at [start, end)
// when ok. The result is a copy: it never shares data's memory (bbolt
// splices values it may not keep after its transaction).
func SpliceResourceVersionAt(data []byte, start, end int, ok bool, rev uint64) ([]byte, error) {
	if !ok {
		return SetResourceVersion(data, rev)
	}
	out := make([]byte, 0, len(data)-(end-start)+22)
	out = append(out, data[:start]...)
	out = append(out, '"')
	out = strconv.AppendUint(out, rev, 10)
	out = append(out, '"')
	return append(out, data[end:]...), nil
}

// DecodeMeta parses the metadata of an object's JSON as storage.ParseMeta
// does, but decodes only the metadata member. It is meant for bytes this
// package produced (which are valid JSON): it does not validate the rest of
// data, and it matches the member name "metadata" exactly (storage.ParseMeta,
// like encoding/json, also accepts other cases). It fails with
// storage.ErrInvalidObject.
func DecodeMeta(data []byte) (storage.Meta, error) { return decodeMeta(data, false) }

// DecodeMetaOf is DecodeMeta for the bytes an Object keeps as its Data:
// the metadata's strings are views into data where they can be (plain
// strings, the rule), not copies, so that a cached object costs its bytes
// and no second copy of its name, namespace, uid, resourceVersion and
// creationTimestamp. data must never be modified afterwards (the contract
// of Object.Data), and any of the strings keeps all of data alive: use it
// for a backend's own copy of an object that becomes that object's Data.
func DecodeMetaOf(data []byte) (storage.Meta, error) { return decodeMeta(data, true) }

func decodeMeta(data []byte, alias bool) (storage.Meta, error) {
	var m storage.Meta
	found := -1
	var vs, ve int
	err := forEachMember(data, firstNonSpace(data), func(ks, ke, s, e int) error {
		if keyEquals(data[ks:ke], "metadata") {
			found, vs, ve = ks, s, e
		}
		return nil
	})
	if err != nil {
		return storage.Meta{}, err
	}
	if found < 0 {
		return m, nil
	}
	if m, ok := decodeMetaFast(data[vs:ve], alias); ok {
		return m, nil
	}
	m, err = storage.DecodeMetadata(withoutMember(data[vs:ve], `"managedFields"`))
	if err != nil {
		return storage.Meta{}, &storage.Error{Err: storage.ErrInvalidObject, Msg: "metadata: " + err.Error()}
	}
	return m, nil
}

// withoutMember returns the object md without its member named key (quotes
// included), or md itself when it has none: metadata.managedFields, often
// most of an object's metadata, is none of Meta's business, and
// encoding/json would scan it on every decode.
func withoutMember(md []byte, key string) []byte {
	if !bytes.Contains(md, []byte(key)) {
		return md
	}
	var prevEnd, ks, ve = -1, -1, -1
	var firstNext bool
	err := forEachMember(md, firstNonSpace(md), func(s, e, vs, vEnd int) error {
		switch {
		case ks >= 0 && ve >= 0 && firstNext:
			// The member after a first-position key: remove up to its key.
			ve, firstNext = s, false
		case string(md[s:e]) == key && ks < 0:
			if prevEnd >= 0 {
				ks, ve = prevEnd, vEnd
			} else {
				ks, ve, firstNext = s, vEnd, true
			}
		}
		prevEnd = vEnd
		return nil
	})
	if err != nil || ks < 0 {
		return md
	}
	out := make([]byte, 0, len(md)-(ve-ks))
	out = append(out, md[:ks]...)
	return append(out, md[ve:]...)
}

// jsonEdit replaces data[start:end] with repl (an insertion when start == end).
type jsonEdit struct {
	start, end int
	repl       []byte
}

// malformed is forEachMember's error, made only when it fails (it runs
// several times on every write).
func malformed() error { return invalidObject("malformed JSON object") }

func invalidObject(msg string) error { return &storage.Error{Err: storage.ErrInvalidObject, Msg: msg} }

// editMeta compacts data and sets the metadata fields; create also fills
// uid and creationTimestamp and refuses a set resourceVersion. Every metadata
// member is edited (JSON allows duplicates; decoders keep the last).
func editMeta(data []byte, rev uint64, uid, now string, create bool) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(data) + 96)
	if isCompactJSON(data) { // the usual bytes: what json.Compact would return
		buf.Write(data)
	} else if err := json.Compact(&buf, data); err != nil {
		return nil, invalidObject(err.Error())
	}
	b := buf.Bytes()
	if len(b) == 0 || b[0] != '{' {
		return nil, invalidObject("not a JSON object")
	}
	rvValue := strconv.AppendUint([]byte{'"'}, rev, 10)
	rvValue = append(rvValue, '"')

	var edits []jsonEdit
	foundMeta := false
	err := forEachMember(b, 0, func(ks, ke, vs, ve int) error {
		if !keyEquals(b[ks:ke], "metadata") {
			return nil
		}
		foundMeta = true
		switch b[vs] {
		case 'n': // null: replace with a fresh metadata object
			edits = append(edits, jsonEdit{vs, ve, newMetaObject(rvValue, uid, now, create)})
			return nil
		case '{':
		default:
			return invalidObject("metadata is not an object")
		}
		var hasRV, hasUID, hasTS bool
		empty := b[vs+1] == '}'
		err := forEachMember(b, vs, func(ks, ke, s, e int) error {
			v := b[s:e]
			unset := string(v) == `""` || string(v) == "null"
			switch {
			case keyEquals(b[ks:ke], "resourceVersion"):
				hasRV = true
				if create && !unset {
					return &storage.Error{Err: storage.ErrResourceVersionSetOnCreate}
				}
				edits = append(edits, jsonEdit{s, e, rvValue})
			case create && keyEquals(b[ks:ke], "uid"):
				hasUID = true
				if unset {
					edits = append(edits, jsonEdit{s, e, strconv.AppendQuote(nil, uid)})
				}
			case create && keyEquals(b[ks:ke], "creationTimestamp"):
				hasTS = true
				if unset {
					edits = append(edits, jsonEdit{s, e, strconv.AppendQuote(nil, now)})
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		var add []byte
		member := func(name string, value []byte) {
			if !empty || len(add) > 0 {
				add = append(add, ',')
			}
			add = append(add, '"')
			add = append(add, name...)
			add = append(add, '"', ':')
			add = append(add, value...)
		}
		if create && !hasUID {
			member("uid", strconv.AppendQuote(nil, uid))
		}
		if !hasRV {
			member("resourceVersion", rvValue)
		}
		if create && !hasTS {
			member("creationTimestamp", strconv.AppendQuote(nil, now))
		}
		if len(add) > 0 {
			edits = append(edits, jsonEdit{ve - 1, ve - 1, add})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !foundMeta {
		add := []byte(`"metadata":`)
		if b[1] != '}' {
			add = append([]byte{','}, add...)
		}
		add = append(add, newMetaObject(rvValue, uid, now, create)...)
		edits = append(edits, jsonEdit{len(b) - 1, len(b) - 1, add})
	}
	// Edits were collected in document order and never overlap.
	n := len(b)
	for _, e := range edits {
		n += len(e.repl) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	pos := 0
	for _, e := range edits {
		out = append(out, b[pos:e.start]...)
		out = append(out, e.repl...)
		pos = e.end
	}
	return append(out, b[pos:]...), nil
}

func newMetaObject(rvValue []byte, uid, now string, create bool) []byte {
	m := []byte{'{'}
	if create {
		m = append(m, `"uid":`...)
		m = strconv.AppendQuote(m, uid)
		m = append(m, ',')
	}
	m = append(m, `"resourceVersion":`...)
	m = append(m, rvValue...)
	if create {
		m = append(m, `,"creationTimestamp":`...)
		m = strconv.AppendQuote(m, now)
	}
	return append(m, '}')
}

// keyEquals reports whether the quoted JSON string key decodes to name.
func keyEquals(key []byte, name string) bool {
	raw := key[1 : len(key)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == name
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == name
}

// forEachMember calls f with the spans of each member's key (quotes included)
// and value of the JSON object starting at b[start]. b must be valid JSON from
// start on; a malformed object fails with storage.ErrInvalidObject, never a
// panic.
func forEachMember(b []byte, start int, f func(ks, ke, vs, ve int) error) error {
	if start >= len(b) || b[start] != '{' {
		return invalidObject("not a JSON object")
	}
	i := jsonscan.SkipSpace(b, start+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return malformed()
		}
		ks := i
		ke := jsonscan.SkipString(b, i)
		if ke < 0 {
			return malformed()
		}
		i = jsonscan.SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return malformed()
		}
		vs := jsonscan.SkipSpace(b, i+1)
		ve := jsonscan.SkipValue(b, vs)
		if ve < 0 {
			return malformed()
		}
		if err := f(ks, ke, vs, ve); err != nil {
			return err
		}
		i = jsonscan.SkipSpace(b, ve)
		if i >= len(b) {
			return malformed()
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
		case '}':
			return nil
		default:
			return malformed()
		}
	}
}

func firstNonSpace(b []byte) int { return jsonscan.SkipSpace(b, 0) }

// ResourceVersionIndex returns where the value of metadata.resourceVersion
// (quotes included) lies in data, for a backend that learns the revision
// only at commit: it prepares the object once with PrepareCreate or
// PrepareUpdate and then splices the digits in at [start, end) instead of
// editing data again. data must be valid JSON, as those functions return. ok
// is false when data has no such member or more than one (duplicate members):
// use SetResourceVersion then.
func ResourceVersionIndex(data []byte) (start, end int, ok bool) {
	n := 0
	_ = forEachMember(data, firstNonSpace(data), func(ks, ke, vs, ve int) error {
		if !keyEquals(data[ks:ke], "metadata") || data[vs] != '{' {
			return nil
		}
		return forEachMember(data, vs, func(ks, ke, s, e int) error {
			if keyEquals(data[ks:ke], "resourceVersion") {
				n++
				start, end = s, e
			}
			return nil
		})
	})
	if n != 1 {
		return 0, 0, false
	}
	return start, end, true
}
