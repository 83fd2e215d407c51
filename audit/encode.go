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

	"github.com/annexapi/annex/internal/jsonenc"
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

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(dst []byte, s string) []byte { return jsonenc.AppendString(dst, s) }
