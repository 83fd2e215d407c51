// This file keeps metadata.managedFields as bytes through a write: the
// field manager reads and writes the entries as JSON, and encoding/json
// would otherwise build a map for every node of every fieldsV1 tree of the
// stored object and of the body, on every write, only to encode them again.

package rest

import (
	"bytes"
	"encoding/json"

	"github.com/annexapi/annex/internal/jsonenc"
	"github.com/annexapi/annex/internal/jsonscan"
)

// member is one member of a JSON object: where its key starts and ends and
// where its value starts and ends.
type member struct{ keyStart, keyEnd, valStart, valEnd int }

// members lists the members of the object starting at b[start] ('{');
// ok is false when it is not a well-formed object.
func members(b []byte, start int) (ms []member, ok bool) {
	i := jsonscan.SkipSpace(b, start+1)
	if i < len(b) && b[i] == '}' {
		return nil, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		ke := jsonscan.SkipString(b, i)
		if ke < 0 {
			return nil, false
		}
		c := jsonscan.SkipSpace(b, ke)
		if c >= len(b) || b[c] != ':' {
			return nil, false
		}
		vs := jsonscan.SkipSpace(b, c+1)
		ve := jsonscan.SkipValue(b, vs)
		if ve < 0 {
			return nil, false
		}
		ms = append(ms, member{i, ke, vs, ve})
		n := jsonscan.SkipSpace(b, ve)
		switch {
		case n < len(b) && b[n] == ',':
			i = jsonscan.SkipSpace(b, n+1)
		case n < len(b) && b[n] == '}':
			return ms, true
		default:
			return nil, false
		}
	}
}

// only returns the one member of ms named key (as written, quotes
// included), or false when there is none or more than one.
func only(b []byte, ms []member, key string) (int, bool) {
	at := -1
	for i, m := range ms {
		if string(b[m.keyStart:m.keyEnd]) == key {
			if at >= 0 {
				return -1, false
			}
			at = i
		}
	}
	return at, at >= 0
}

// spliceManagedFields returns body without metadata.managedFields, and
// that member's value when it is a valid JSON array. Anything unusual (no
// metadata object, a member twice, an escaped key, null) leaves body whole,
// and the entries are decoded as any other member.
func spliceManagedFields(body []byte) ([]byte, json.RawMessage) {
	if !bytes.Contains(body, []byte(`"managedFields"`)) {
		return body, nil
	}
	top := jsonscan.SkipSpace(body, 0)
	if top >= len(body) || body[top] != '{' {
		return body, nil
	}
	ms, ok := members(body, top)
	if !ok {
		return body, nil
	}
	i, ok := only(body, ms, `"metadata"`)
	if !ok || body[ms[i].valStart] != '{' {
		return body, nil
	}
	mms, ok := members(body, ms[i].valStart)
	if !ok {
		return body, nil
	}
	j, ok := only(body, mms, `"managedFields"`)
	if !ok {
		return body, nil
	}
	m := mms[j]
	raw := body[m.valStart:m.valEnd]
	if raw[0] != '[' || !json.Valid(raw) {
		return body, nil
	}
	// The span to remove takes one comma with it.
	start, end := m.keyStart, m.valEnd
	switch {
	case j > 0:
		start = mms[j-1].valEnd
	case len(mms) > 1:
		end = mms[1].keyStart
	}
	out := make([]byte, 0, len(body)-(end-start))
	out = append(out, body[:start]...)
	out = append(out, body[end:]...)
	return out, json.RawMessage(raw)
}

// marshalObject is json.Marshal of obj (written by package jsonenc), with
// managedFields kept as bytes written in place rather than through
// encoding/json (which would check and compact them again, a pass over most
// of the metadata on every write).
func marshalObject(obj Object) ([]byte, error) {
	md, _ := obj["metadata"].(map[string]any)
	raw, ok := md["managedFields"].(json.RawMessage)
	if !ok {
		return jsonenc.AppendValue(make([]byte, 0, 1024), obj)
	}
	delete(md, "managedFields")
	data, err := jsonenc.AppendValue(make([]byte, 0, 1024), obj)
	md["managedFields"] = raw
	if err != nil {
		return nil, err
	}
	return insertManagedFields(data, raw), nil
}

// insertManagedFields writes "managedFields":raw into the metadata of
// data, a json.Marshal of an object, where json.Marshal would have (map keys
// sorted).
func insertManagedFields(data []byte, raw json.RawMessage) []byte {
	ms, ok := members(data, jsonscan.SkipSpace(data, 0))
	if !ok {
		return data
	}
	i, ok := only(data, ms, `"metadata"`)
	if !ok || data[ms[i].valStart] != '{' {
		return data
	}
	mms, ok := members(data, ms[i].valStart)
	if !ok {
		return data
	}
	at, comma := ms[i].valEnd-1, len(mms) > 0 // before metadata's '}'
	for _, m := range mms {
		if string(data[m.keyStart+1:m.keyEnd-1]) > "managedFields" {
			at, comma = m.keyStart, false
			break
		}
	}
	out := make([]byte, 0, len(data)+len(raw)+18)
	out = append(out, data[:at]...)
	if comma {
		out = append(out, ',')
	}
	out = append(out, `"managedFields":`...)
	out = append(out, raw...)
	if at != ms[i].valEnd-1 {
		out = append(out, ',')
	}
	return append(out, data[at:]...)
}
