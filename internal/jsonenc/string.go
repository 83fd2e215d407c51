package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// safeLow and safeHigh are the ASCII bytes written as they are in a JSON
// string, encoding/json's HTML-safe set, as bit sets: bytes 0–63 and 64–127.
const (
	safeLow  uint64 = 0xFFFFFFFF00000000 &^ (1<<'"' | 1<<'&' | 1<<'<' | 1<<'>')
	safeHigh uint64 = ^uint64(1 << ('\\' - 64))
)

// jsonSafe reports whether the ASCII byte c needs no escape.
func jsonSafe(c byte) bool {
	if c < 64 {
		return safeLow>>c&1 != 0
	}
	return safeHigh>>(c-64)&1 != 0
}

// AppendString appends s as a JSON string the way encoding/json's Marshal
// does: ", \ and control characters escaped (\b \f \n \r \t by name, the
// rest as \u00XX), <, > and & as \u003c \u003e \u0026, U+2028 and U+2029
// as \u2028 and \u2029, and each byte of invalid UTF-8 as \ufffd. Runs of
// eight bytes that need none of that are passed over a word at a time.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && wordSafe(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe(c) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, `\b`...)
			case '\f':
				dst = append(dst, `\f`...)
			case '\n':
				dst = append(dst, `\n`...)
			case '\r':
				dst = append(dst, `\r`...)
			case '\t':
				dst = append(dst, `\t`...)
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Bytes of a word, for wordSafe.
const (
	lowBits  uint64 = 0x0101010101010101
	highBits uint64 = 0x8080808080808080
)

// wordSafe reports whether none of the eight bytes of x needs the care
// AppendString takes: all are ASCII (no UTF-8 to check), none is a control
// character, and none is ", \, <, > or &. Each test is the classic
// "has a byte below n" / "has a zero byte" bit trick: (v-n·0x01…)&^v has the
// high bit of some byte set when a byte of v is below n, and only then when
// no byte of v has its high bit set (x's high bits are tested too).
func wordSafe(x uint64) bool {
	q, b := x^('"'*lowBits), x^('\\'*lowBits)
	lt, gt, amp := x^('<'*lowBits), x^('>'*lowBits), x^('&'*lowBits)
	return (x|
		(x-0x20*lowBits)&^x| // a byte below 0x20
		(q-lowBits)&^q|(b-lowBits)&^b| // a zero byte: one equal to the character
		(lt-lowBits)&^lt|(gt-lowBits)&^gt|(amp-lowBits)&^amp)&highBits == 0
}
