package jsondec

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the deepest nesting decoded here; deeper input (up to
// encoding/json's limit of 10000) is left to encoding/json.
const maxDepth = 1000

// Object decodes data, which must be one JSON object with only whitespace
// around it, as json.Decoder (UseNumber) decodes it into a map[string]any:
// the last of duplicate keys wins, invalid UTF-8 and unpaired surrogates
// become U+FFFD. ok is false for any other input.
func Object(data []byte) (_ map[string]any, ok bool) {
	m, _, ok := ObjectDup(data)
	return m, ok
}

// ObjectDup is Object that also reports whether some object in data has a
// key twice (DuplicateFields names them), at no cost when none has.
func ObjectDup(data []byte) (_ map[string]any, dup, ok bool) {
	d := decoder{data: data}
	v, ok := d.whole()
	m, isObject := v.(map[string]any)
	return m, d.dup, ok && isObject
}

// Value decodes data, one JSON value of any kind with only whitespace
// around it, as json.Decoder (UseNumber) decodes it into an any; ok is
// false for any other input.
func Value(data []byte) (_ any, ok bool) {
	d := decoder{data: data}
	return d.whole()
}

func (d *decoder) whole() (any, bool) {
	d.space()
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.data)
}

type decoder struct {
	data []byte
	i    int
	dup  bool // an object had a key twice
}

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the value at d.i (not whitespace).
func (d *decoder) value(depth int) (any, bool) {
	if d.i >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.string()
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *decoder) literal(lit string) bool {
	if len(d.data)-d.i < len(lit) || string(d.data[d.i:d.i+len(lit)]) != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// open steps over an object's or array's opening byte and reports whether
// close follows at once (it is then stepped over too).
func (d *decoder) open(close byte) (empty bool) {
	d.i++
	d.space()
	if d.i < len(d.data) && d.data[d.i] == close {
		d.i++
		return true
	}
	return false
}

// next steps over what follows a member or an item: a comma (more follow)
// or the closing byte (the end); ok is false for anything else.
func (d *decoder) next(close byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.data) {
		return false, false
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		d.space()
		return true, true
	case close:
		d.i++
		return false, true
	}
	return false, false
}

func (d *decoder) object(depth int) (map[string]any, bool) {
	if depth++; depth > maxDepth {
		return nil, false
	}
	m := make(map[string]any)
	if d.open('}') {
		return m, true
	}
	for {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, false
		}
		k, ok := d.key()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		n := len(m)
		m[k] = v
		if len(m) == n {
			d.dup = true
		}
		more, ok := d.next('}')
		if !more {
			return m, ok
		}
	}
}

func (d *decoder) array(depth int) ([]any, bool) {
	if depth++; depth > maxDepth {
		return nil, false
	}
	a := make([]any, 0)
	if d.open(']') {
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		more, ok := d.next(']')
		if !more {
			return a, ok
		}
	}
}

func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// number decodes a JSON number literal as json.Number.
func (d *decoder) number() (any, bool) {
	start, i := d.i, d.i
	if d.data[i] == '-' {
		i++
	}
	switch {
	case i >= len(d.data):
		return nil, false
	case d.data[i] == '0':
		i++
	case '1' <= d.data[i] && d.data[i] <= '9':
		i = digits(d.data, i)
	default:
		return nil, false
	}
	if i < len(d.data) && d.data[i] == '.' {
		if j := digits(d.data, i+1); j > i+1 {
			i = j
		} else {
			return nil, false
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		j := digits(d.data, i)
		if j == i {
			return nil, false
		}
		i = j
	}
	d.i = i
	return json.Number(d.data[start:i]), true
}

// string decodes the JSON string at d.i (its opening quote).
func (d *decoder) string() (string, bool) { return d.str(false) }

// key decodes an object key: a string, with the keys every Kubernetes
// object has taken from constants instead of allocated.
func (d *decoder) key() (string, bool) { return d.str(true) }

func (d *decoder) str(key bool) (string, bool) {
	start := d.i + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			if key {
				return commonKey(d.data[start:i]), true
			}
			return string(d.data[start:i]), true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.unquote(start)
		}
	}
	return "", false
}

// commonKey is string(s), taken from a constant (not allocated) for the
// keys every Kubernetes object has.
func commonKey(s []byte) string {
	switch string(s) {
	case "apiVersion":
		return "apiVersion"
	case "kind":
		return "kind"
	case "metadata":
		return "metadata"
	case "name":
		return "name"
	case "namespace":
		return "namespace"
	case "uid":
		return "uid"
	case "resourceVersion":
		return "resourceVersion"
	case "generation":
		return "generation"
	case "creationTimestamp":
		return "creationTimestamp"
	case "labels":
		return "labels"
	case "annotations":
		return "annotations"
	case "spec":
		return "spec"
	case "status":
		return "status"
	}
	return string(s)
}

// unquote decodes a string with escapes or non-ASCII bytes, from start
// (after the opening quote), as encoding/json's unquote does.
func (d *decoder) unquote(start int) (string, bool) {
	b := make([]byte, 0, 32)
	i := start
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.i = i + 1
			return string(b), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if i+1 >= len(d.data) {
				return "", false
			}
			switch e := d.data[i+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				b = append(b, "\"\\/\b\f\n\r\t"[strings.IndexByte(`"\/bfnrt`, e)])
				i += 2
			case 'u':
				r, ok := hex4(d.data, i+2)
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(d.data, i+2); ok && i+1 < len(d.data) && d.data[i] == '\\' && d.data[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, d.data[i:i+size]...)
			}
			i += size
		}
	}
	return "", false
}

// hex4 reads the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
