package jsondec

import (
	"encoding/json"
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
	d := decoder{data: data}
	d.space()
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		return nil, false
	}
	m, ok := d.object(0)
	if !ok {
		return nil, false
	}
	d.space()
	return m, d.i == len(d.data)
}

// Value decodes data, one JSON value of any kind with only whitespace
// around it, as json.Decoder (UseNumber) decodes it into an any; ok is
// false for any other input.
func Value(data []byte) (_ any, ok bool) {
	d := decoder{data: data}
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

func (d *decoder) object(depth int) (map[string]any, bool) {
	if depth++; depth > maxDepth {
		return nil, false
	}
	d.i++ // {
	m := make(map[string]any)
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
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
		m[k] = v
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *decoder) array(depth int) ([]any, bool) {
	if depth++; depth > maxDepth {
		return nil, false
	}
	d.i++ // [
	a := make([]any, 0)
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.data) {
			return nil, false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
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
func (d *decoder) string() (string, bool) {
	start := d.i + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			return string(d.data[start:i]), true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.unquote(start)
		}
	}
	return "", false
}

// key decodes the object key at d.i: string, with the keys every
// Kubernetes object has taken from constants instead of allocated.
func (d *decoder) key() (string, bool) {
	start := d.i + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			switch k := d.data[start:i]; string(k) {
			case "apiVersion":
				return "apiVersion", true
			case "kind":
				return "kind", true
			case "metadata":
				return "metadata", true
			case "name":
				return "name", true
			case "namespace":
				return "namespace", true
			case "uid":
				return "uid", true
			case "resourceVersion":
				return "resourceVersion", true
			case "generation":
				return "generation", true
			case "creationTimestamp":
				return "creationTimestamp", true
			case "labels":
				return "labels", true
			case "annotations":
				return "annotations", true
			case "spec":
				return "spec", true
			case "status":
				return "status", true
			default:
				return string(k), true
			}
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.unquote(start)
		}
	}
	return "", false
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
			case '"', '\\', '/':
				b = append(b, e)
				i += 2
			case 'b':
				b = append(b, '\b')
				i += 2
			case 'f':
				b = append(b, '\f')
				i += 2
			case 'n':
				b = append(b, '\n')
				i += 2
			case 'r':
				b = append(b, '\r')
				i += 2
			case 't':
				b = append(b, '\t')
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
