// This file holds field selectors: the fieldSelector query parameter, parsed
// as k8s.io/apimachinery's fields.ParseSelector does (pkg/fields/selector.go),
// including its backslash escaping and its error messages.

package meta

import (
	"fmt"
	"slices"
	"strings"
)

// FieldRequirement is one term of a field selector. Operator is OpEquals
// (for both "=" and "==") or OpNotEquals; Value is unescaped.
type FieldRequirement struct {
	Field    string
	Operator Operator
	Value    string
}

// Matches reports whether fields satisfy the requirement; a missing field has
// the value "".
func (r FieldRequirement) Matches(fields map[string]string) bool {
	if r.Operator == OpNotEquals {
		return fields[r.Field] != r.Value
	}
	return fields[r.Field] == r.Value
}

// String is the requirement in selector syntax with the value escaped.
func (r FieldRequirement) String() string {
	op := "="
	if r.Operator == OpNotEquals {
		op = "!="
	}
	return r.Field + op + EscapeFieldValue(r.Value)
}

// FieldSelector is a parsed fieldSelector: the AND of its requirements. The
// zero value has no requirements and matches everything. A FieldSelector is
// immutable and safe for concurrent use.
type FieldSelector struct {
	reqs []FieldRequirement
}

// Matches reports whether fields satisfy every requirement.
func (s FieldSelector) Matches(fields map[string]string) bool {
	for _, r := range s.reqs {
		if !r.Matches(fields) {
			return false
		}
	}
	return true
}

// Empty reports whether the selector has no requirements.
func (s FieldSelector) Empty() bool { return len(s.reqs) == 0 }

// String is the selector in syntax k8s prints: terms joined by commas,
// values escaped, "==" written as "=".
func (s FieldSelector) String() string {
	parts := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Requirements returns a copy of the requirements.
func (s FieldSelector) Requirements() []FieldRequirement { return slices.Clone(s.reqs) }

// RequiresExactMatch returns the value of the first "=" requirement on field.
// kubectl's `get NAME -w` and the request-info resolver rely on it for
// metadata.name.
func (s FieldSelector) RequiresExactMatch(field string) (value string, ok bool) {
	for _, r := range s.reqs {
		if r.Field == field && r.Operator == OpEquals {
			return r.Value, true
		}
	}
	return "", false
}

// FieldSelectorFromSet returns the selector field=value,... for set, sorted by
// field.
func FieldSelectorFromSet(set map[string]string) FieldSelector {
	var s FieldSelector
	for _, f := range slices.Sorted(func(yield func(string) bool) {
		for k := range set {
			if !yield(k) {
				return
			}
		}
	}) {
		s.reqs = append(s.reqs, FieldRequirement{Field: f, Operator: OpEquals, Value: set[f]})
	}
	return s
}

// EscapeFieldValue escapes '\', ',' and '=' in a field selector value.
func EscapeFieldValue(v string) string {
	if !strings.ContainsAny(v, `\,=`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\', ',', '=':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeFieldValue reverses EscapeFieldValue, with k8s's messages for an
// invalid escape and for an unescaped ',' or '=' (printed as its code point,
// as k8s does).
func unescapeFieldValue(v string) (string, string) {
	if !strings.ContainsAny(v, `\,=`) {
		return v, ""
	}
	var b strings.Builder
	inSlash := false
	for _, c := range v {
		if inSlash {
			switch c {
			case '\\', ',', '=':
				b.WriteRune(c)
			default:
				return "", "invalid field selector: invalid escape sequence: " + string([]rune{'\\', c})
			}
			inSlash = false
			continue
		}
		switch c {
		case '\\':
			inSlash = true
		case ',', '=':
			return "", fmt.Sprintf("invalid field selector: unescaped character in value: %v", c)
		default:
			b.WriteRune(c)
		}
	}
	if inSlash {
		return "", "invalid field selector: invalid escape sequence: \\"
	}
	return b.String(), ""
}

// ParseFieldSelector parses the fieldSelector syntax: terms field=value,
// field==value or field!=value joined by commas, with '\', ',' and '=' in
// values escaped by a backslash. Fields are not checked here: which fields a
// resource supports is the caller's business. Terms with neither a field nor
// a value ("=") are dropped. Errors are *ParseError (ErrInvalidFieldSelector)
// with k8s's messages, such as "invalid selector: 'x'; can't understand 'x'".
func ParseFieldSelector(sel string) (FieldSelector, error) {
	terms := splitFieldTerms(sel)
	slices.Sort(terms)
	var s FieldSelector
	for _, term := range terms {
		if term == "" {
			continue
		}
		lhs, op, rhs, ok := splitFieldTerm(term)
		if !ok {
			return FieldSelector{}, &ParseError{Err: ErrInvalidFieldSelector,
				Msg: fmt.Sprintf("invalid selector: '%s'; can't understand '%s'", sel, term)}
		}
		val, msg := unescapeFieldValue(rhs)
		if msg != "" {
			return FieldSelector{}, &ParseError{Err: ErrInvalidFieldSelector, Msg: msg}
		}
		if lhs == "" && val == "" {
			continue
		}
		s.reqs = append(s.reqs, FieldRequirement{Field: lhs, Operator: op, Value: val})
	}
	return s, nil
}

// splitFieldTerms splits on commas not preceded by a backslash escape.
func splitFieldTerms(sel string) []string {
	if sel == "" {
		return nil
	}
	var terms []string
	start := 0
	inSlash := false
	for i := 0; i < len(sel); i++ {
		switch c := sel[i]; {
		case inSlash:
			inSlash = false
		case c == '\\':
			inSlash = true
		case c == ',':
			terms = append(terms, sel[start:i])
			start = i + 1
		}
	}
	return append(terms, sel[start:])
}

// splitFieldTerm splits at the first "!=", "==" or "=".
func splitFieldTerm(term string) (lhs string, op Operator, rhs string, ok bool) {
	for i := 0; i < len(term); i++ {
		switch {
		case strings.HasPrefix(term[i:], "!="):
			return term[:i], OpNotEquals, term[i+2:], true
		case strings.HasPrefix(term[i:], "=="):
			return term[:i], OpEquals, term[i+2:], true
		case term[i] == '=':
			return term[:i], OpEquals, term[i+1:], true
		}
	}
	return "", "", "", false
}
