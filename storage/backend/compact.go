// This file holds the check that lets editMeta skip json.Compact: the bytes
// a backend is given are nearly always already compact JSON (annex's own
// encoder wrote them), and encoding/json's scanner, which Compact runs, costs
// several nanoseconds a byte.

package backend

// maxCompactDepth bounds isCompactJSON's nesting; deeper values go through
// json.Compact (whose own limit is 10,000).
const maxCompactDepth = 512

// isCompactJSON reports whether b is one JSON value, valid as encoding/json
// reads it, with no whitespace outside its strings: then json.Compact would
// return b unchanged. It may report false for such a value (nesting deeper
// than maxCompactDepth): false only means "let json.Compact decide".
func isCompactJSON(b []byte) bool {
	end, ok := compactValue(b, 0, 0)
	return ok && end == len(b)
}

// compactValue checks the value at b[i:] and returns the index after it.
func compactValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		if depth >= maxCompactDepth {
			return i, false
		}
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			var ok bool
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = compactString(b, i); !ok || i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = compactValue(b, i+1, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth >= maxCompactDepth {
			return i, false
		}
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = compactValue(b, i, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return compactString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return compactNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// compactString checks the string at b[i] == '"' as encoding/json's scanner
// does (no control characters, only its escapes; other bytes, UTF-8 or not,
// as they are).
func compactString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// compactNumber checks JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func compactNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	var ok bool
	if i < len(b) && b[i] == '0' {
		i++
	} else if i, ok = skipDigits(b, i); !ok {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if i, ok = skipDigits(b, i+1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = skipDigits(b, i); !ok {
			return i, false
		}
	}
	return i, true
}

// skipDigits returns the index after the digits at b[i:], and whether there
// was at least one.
func skipDigits(b []byte, i int) (int, bool) {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i, i > start
}
