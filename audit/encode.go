// This file holds the event encoder: an append-style writer of an Event's
// JSON that produces, byte for byte, what encoding/json's Marshal produces
// for it (same field order, omitempty, sorted map keys, HTML-safe string
// escaping, compacted raw objects), without reflection and with one
// allocation for the output. Every request writes up to four events, so
// this is on the hot path; encode_test.go checks it against encoding/json.

package audit

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/annexapi/annex/meta"
)

// appendEvent appends ev's JSON to dst. It fails only when a raw object is
// not valid JSON or a Status's details do not encode, as json.Marshal would.
func appendEvent(dst []byte, ev *Event) ([]byte, error) {
	out, _, _, err := appendEventHead(dst, ev, nil)
	return out, err
}

// appendEventHead is appendEvent that writes head, when not nil, for the
// fields from requestURI to userAgent (the request's own, the same at every
// stage but for impersonatedUser) instead of encoding them, and returns
// where in out those fields' encoding is, for the next stage's head.
func appendEventHead(dst []byte, ev *Event, head []byte) (out []byte, headStart, headEnd int, err error) {
	dst = append(dst, `{"kind":`...)
	dst = appendString(dst, ev.Kind)
	dst = append(dst, `,"apiVersion":`...)
	dst = appendString(dst, ev.APIVersion)
	dst = append(dst, `,"level":`...)
	dst = appendString(dst, string(ev.Level))
	dst = append(dst, `,"auditID":`...)
	dst = appendString(dst, ev.AuditID)
	dst = append(dst, `,"stage":`...)
	dst = appendString(dst, string(ev.Stage))
	headStart = len(dst)
	if head != nil {
		dst = append(dst, head...)
	} else {
		dst = appendHead(dst, ev)
	}
	headEnd = len(dst)
	if o := ev.ObjectRef; o != nil {
		dst = append(dst, `,"objectRef":{`...)
		n := len(dst)
		dst = appendOptional(dst, n, "resource", o.Resource)
		dst = appendOptional(dst, n, "namespace", o.Namespace)
		dst = appendOptional(dst, n, "name", o.Name)
		dst = appendOptional(dst, n, "uid", o.UID)
		dst = appendOptional(dst, n, "apiGroup", o.APIGroup)
		dst = appendOptional(dst, n, "apiVersion", o.APIVersion)
		dst = appendOptional(dst, n, "resourceVersion", o.ResourceVersion)
		dst = appendOptional(dst, n, "subresource", o.Subresource)
		dst = append(dst, '}')
	}
	if s := ev.ResponseStatus; s != nil {
		dst = append(dst, `,"responseStatus":`...)
		if dst, err = appendResponseStatus(dst, s); err != nil {
			return dst, 0, 0, err
		}
	}
	if len(ev.RequestObject) > 0 {
		dst = append(dst, `,"requestObject":`...)
		if dst, err = appendRaw(dst, ev.RequestObject); err != nil {
			return dst, 0, 0, err
		}
	}
	if len(ev.ResponseObject) > 0 {
		dst = append(dst, `,"responseObject":`...)
		if dst, err = appendRaw(dst, ev.ResponseObject); err != nil {
			return dst, 0, 0, err
		}
	}
	dst = append(dst, `,"requestReceivedTimestamp":`...)
	dst = appendMicroTime(dst, ev.RequestReceivedTimestamp)
	dst = append(dst, `,"stageTimestamp":`...)
	dst = appendMicroTime(dst, ev.StageTimestamp)
	if len(ev.Annotations) > 0 {
		dst = appendAnnotations(dst, ev.Annotations)
		dst = append(dst, '}')
	}
	return append(dst, '}'), headStart, headEnd, nil
}

// appendHead appends the fields from requestURI to userAgent.
func appendHead(dst []byte, ev *Event) []byte {
	dst = append(dst, `,"requestURI":`...)
	dst = appendString(dst, ev.RequestURI)
	dst = append(dst, `,"verb":`...)
	dst = appendString(dst, ev.Verb)
	dst = append(dst, `,"user":`...)
	dst = appendUserInfo(dst, &ev.User)
	if ev.ImpersonatedUser != nil {
		dst = append(dst, `,"impersonatedUser":`...)
		dst = appendUserInfo(dst, ev.ImpersonatedUser)
	}
	if len(ev.SourceIPs) > 0 {
		dst = append(dst, `,"sourceIPs":`...)
		dst = appendStrings(dst, ev.SourceIPs)
	}
	if ev.UserAgent != "" {
		dst = append(dst, `,"userAgent":`...)
		dst = appendString(dst, ev.UserAgent)
	}
	return dst
}

// appendAnnotations appends `,"annotations":{` and the annotations sorted
// by key, without the closing brace; the keys are sorted in an array on its
// stack, not a new slice.
func appendAnnotations(dst []byte, m map[string]string) []byte {
	var keyBuf [16]string
	dst = append(dst, `,"annotations":{`...)
	for i, k := range sortedKeys(m, keyBuf[:0]) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendString(dst, m[k])
	}
	return dst
}

// appendOptional appends the omitempty string field key, with a comma unless
// it is the first field of the object that starts at start.
func appendOptional(dst []byte, start int, key, v string) []byte {
	if v == "" {
		return dst
	}
	if len(dst) > start {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	return appendString(dst, v)
}

func appendUserInfo(dst []byte, u *UserInfo) []byte {
	dst = append(dst, '{')
	n := len(dst)
	dst = appendOptional(dst, n, "username", u.Username)
	dst = appendOptional(dst, n, "uid", u.UID)
	if len(u.Groups) > 0 {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, `"groups":`...)
		dst = appendStrings(dst, u.Groups)
	}
	if len(u.Extra) > 0 {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, `"extra":{`...)
		var keyBuf [8]string
		for i, k := range sortedKeys(u.Extra, keyBuf[:0]) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendStrings(dst, u.Extra[k])
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendStrings appends a []string as encoding/json does: null for nil.
func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

func appendResponseStatus(dst []byte, s *ResponseStatus) ([]byte, error) {
	dst = append(dst, `{"metadata":{`...)
	n := len(dst)
	dst = appendOptional(dst, n, "resourceVersion", s.Metadata.ResourceVersion)
	dst = appendOptional(dst, n, "continue", s.Metadata.Continue)
	if c := s.Metadata.RemainingItemCount; c != nil {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, `"remainingItemCount":`...)
		dst = strconv.AppendInt(dst, *c, 10)
	}
	dst = append(dst, '}')
	dst = appendOptional(dst, 0, "status", s.Status)
	dst = appendOptional(dst, 0, "message", s.Message)
	dst = appendOptional(dst, 0, "reason", string(s.Reason))
	if s.Details != nil {
		b, err := marshalDetails(s.Details)
		if err != nil {
			return dst, err
		}
		dst = append(dst, `,"details":`...)
		dst = append(dst, b...)
	}
	if s.Code != 0 {
		dst = append(dst, `,"code":`...)
		dst = strconv.AppendInt(dst, int64(s.Code), 10)
	}
	return append(dst, '}'), nil
}

// marshalDetails encodes a Status's details (error responses only, so off
// the hot path) with encoding/json.
func marshalDetails(d *meta.StatusDetails) ([]byte, error) { return json.Marshal(d) }

func appendMicroTime(dst []byte, t MicroTime) []byte {
	if t.IsZero() {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = appendRFC3339Micro(dst, t.UTC())
	return append(dst, '"')
}

// appendRFC3339Micro is t.AppendFormat(dst, RFC3339Micro) for a UTC time,
// without parsing the layout on every call (four timestamps per request).
func appendRFC3339Micro(dst []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, RFC3339Micro)
	}
	hour, minute, sec := t.Clock()
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, minute, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, t.Nanosecond()/1000, 6)
	return append(dst, 'Z')
}

// appendDigits appends v (non-negative) in exactly width decimal digits.
func appendDigits(dst []byte, v, width int) []byte {
	n := len(dst) + width
	dst = append(dst, "000000"[:width]...)
	for i := n - 1; i >= n-width; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
	return dst
}

// appendRaw appends a raw JSON value as encoding/json writes a
// json.RawMessage: validated, compacted, with <, >, &, U+2028 and U+2029
// escaped.
func appendRaw(dst []byte, raw []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	start := len(dst)
	if err := json.Compact(buf, raw); err != nil {
		return dst, err
	}
	out := buf.Bytes()
	if !needsHTMLEscape(out[start:]) {
		return out, nil
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, out[start:])
	return append(out[:start], esc.Bytes()...), nil
}

func needsHTMLEscape(b []byte) bool {
	if bytes.ContainsAny(b, "<>&") {
		return true
	}
	return bytes.Contains(b, []byte("\u2028")) || bytes.Contains(b, []byte("\u2029"))
}

// sortedKeys appends m's keys to keys, sorted.
func sortedKeys[V any](m map[string]V, keys []string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

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

// appendString appends s as a JSON string the way encoding/json's Marshal
// does: ", \ and control characters escaped (\b \f \n \r \t by name, the
// rest as \u00XX), <, > and & as \u003c \u003e \u0026, U+2028 and U+2029
// as \u2028 and \u2029, and each byte of invalid UTF-8 as \ufffd. Runs of
// eight bytes that need none of that are passed over a word at a time.
func appendString(dst []byte, s string) []byte {
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
// appendString takes: all are ASCII (no UTF-8 to check), none is a control
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
