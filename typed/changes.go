// This file writes a typed hook's changes back to the generic object: what
// differs between T's encoding before the hook and after it, and nothing
// else, so that what T does not hold (a zero value omitempty drops, a
// null, a field T does not declare, a preserved unknown subtree) stays as
// the client sent it.

package typed

import (
	"bytes"
	"encoding/json"

	"github.com/annexapi/annex/internal/jsondec"
	"github.com/annexapi/annex/internal/jsonscan"
)

// applyChanges applies to obj the difference between before and after,
// two encodings of the same Go type (so equal values are equal bytes):
//
//   - a member after has and before has not, or has with other bytes, is
//     set; when both it and obj's value are objects, recursively, member
//     by member;
//   - a member before has and after has not is removed;
//   - a list of the same length in before, after and obj is compared
//     element by element (an element changed as a member is); a list whose
//     length changed is replaced whole;
//   - everything else in obj is left alone.
func applyChanges(obj map[string]any, before, after []byte) error {
	if bytes.Equal(before, after) {
		return nil
	}
	return applyObject(obj, before, after)
}

func applyObject(obj map[string]any, before, after []byte) error {
	bm, ok := members(before)
	if !ok {
		return errNotObject
	}
	am, ok := members(after)
	if !ok {
		return errNotObject
	}
	for _, m := range am {
		bv, inBefore := bm.get(m.key)
		if inBefore && bytes.Equal(bv, m.val) {
			continue
		}
		cur, inObj := obj[m.key]
		switch {
		case !inObj:
		case isKind(m.val, '{'):
			cm, isMap := cur.(map[string]any)
			if !isMap {
				break
			}
			if !inBefore || !isKind(bv, '{') {
				bv = []byte("{}") // nothing of it was visible to T
			}
			if err := applyObject(cm, bv, m.val); err != nil {
				return err
			}
			continue
		case isKind(m.val, '[') && inBefore && isKind(bv, '['):
			if cl, isList := cur.([]any); isList {
				done, err := applyList(cl, bv, m.val)
				if err != nil {
					return err
				}
				if done {
					continue
				}
			}
		}
		v, err := decodeValue(m.val)
		if err != nil {
			return err
		}
		obj[m.key] = v
	}
	for _, m := range bm {
		if _, inAfter := am.get(m.key); !inAfter {
			delete(obj, m.key)
		}
	}
	return nil
}

// applyList applies the changes of a list element by element when before,
// after and obj have the same length; it reports false, having changed
// nothing, when they have not.
func applyList(obj []any, before, after []byte) (bool, error) {
	be, ok := elements(before)
	if !ok {
		return false, errNotObject
	}
	ae, ok := elements(after)
	if !ok {
		return false, errNotObject
	}
	if len(be) != len(ae) || len(obj) != len(ae) {
		return false, nil
	}
	for i := range ae {
		if bytes.Equal(be[i], ae[i]) {
			continue
		}
		switch {
		case isKind(ae[i], '{') && isKind(be[i], '{'):
			if cm, isMap := obj[i].(map[string]any); isMap {
				if err := applyObject(cm, be[i], ae[i]); err != nil {
					return false, err
				}
				continue
			}
		case isKind(ae[i], '[') && isKind(be[i], '['):
			if cl, isList := obj[i].([]any); isList {
				done, err := applyList(cl, be[i], ae[i])
				if err != nil {
					return false, err
				}
				if done {
					continue
				}
			}
		}
		v, err := decodeValue(ae[i])
		if err != nil {
			return false, err
		}
		obj[i] = v
	}
	return true, nil
}

type errString string

func (e errString) Error() string { return string(e) }

// errNotObject is a bug's: encoding/json wrote something that does not scan.
const errNotObject = errString("typed: the encoding of the object does not scan as JSON")

func isKind(v []byte, c byte) bool { return len(v) > 0 && v[0] == c }

// member is one member of an encoded object: its key and its value's bytes.
type member struct {
	key string
	val []byte
}

type memberList []member

// get finds a member by key; objects are small, a scan beats a map.
func (l memberList) get(k string) ([]byte, bool) {
	for _, m := range l {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

// members splits compact JSON (encoding/json's output) of an object into
// its members.
func members(b []byte) (memberList, bool) {
	if !isKind(b, '{') {
		return nil, false
	}
	var out memberList
	i := 1
	for i < len(b) && b[i] != '}' {
		end := jsonscan.SkipString(b, i)
		if end < 0 {
			return nil, false
		}
		key := string(b[i+1 : end-1])
		if bytes.IndexByte(b[i:end], '\\') >= 0 {
			if json.Unmarshal(b[i:end], &key) != nil {
				return nil, false
			}
		}
		if end >= len(b) || b[end] != ':' {
			return nil, false
		}
		vEnd := jsonscan.SkipValue(b, end+1)
		if vEnd < 0 {
			return nil, false
		}
		out = append(out, member{key, b[end+1 : vEnd]})
		i = vEnd
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	return out, i < len(b)
}

// elements splits compact JSON of an array into its elements.
func elements(b []byte) ([][]byte, bool) {
	if !isKind(b, '[') {
		return nil, false
	}
	var out [][]byte
	i := 1
	for i < len(b) && b[i] != ']' {
		end := jsonscan.SkipValue(b, i)
		if end < 0 {
			return nil, false
		}
		out = append(out, b[i:end])
		i = end
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	return out, i < len(b)
}

// decodeValue decodes one encoded value as the write path holds values
// (numbers as json.Number).
func decodeValue(b []byte) (any, error) {
	if v, ok := jsondec.Value(b); ok {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
