// This file decides, for a GET without a name, what Kubernetes' ListOptions
// decoding would: whether it is a watch, whether the options parse at all,
// and which exact metadata.name the field selector requires. Only those
// answers are needed, so the selectors are validated, not built: the rules
// are those of apimachinery's fields.ParseSelector and labels.Parse.

package filters

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

type listOptions struct {
	watch   bool
	name    string // the exact metadata.name the field selector requires
	hasName bool
}

// parseListOptions mirrors the url.Values → ListOptions conversion: ok is
// false when any option fails to decode (bad integers, bad selectors).
func parseListOptions(q url.Values) (opts listOptions, ok bool) {
	for _, k := range []string{"timeoutSeconds", "limit"} {
		if v := q[k]; len(v) > 0 {
			if _, err := strconv.ParseInt(v[0], 10, 64); err != nil {
				return opts, false
			}
		}
	}
	if v := q["labelSelector"]; len(v) > 0 && !validLabelSelector(v[0]) {
		return opts, false
	}
	if v := q["fieldSelector"]; len(v) > 0 {
		name, found, valid := fieldSelectorExactName(v[0], "metadata.name")
		if !valid {
			return opts, false
		}
		opts.name, opts.hasName = name, found
	}
	opts.watch = listBool(q["watch"])
	return opts, true
}

// listBool is apimachinery's []string → bool conversion: absent, "0" and
// "false" (any case) are false; anything else, even "", is true.
func listBool(v []string) bool {
	return len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// queryBool is the fallback Kubernetes uses for watch when the options do not
// decode; it lower-cases rather than case-folds.
func queryBool(v []string) bool {
	if len(v) == 0 {
		return false
	}
	switch strings.ToLower(v[0]) {
	case "false", "0":
		return false
	}
	return true
}

// fieldSelectorExactName parses sel as fields.ParseSelector does and returns
// the value the first (in sorted term order) "field=value" or
// "field==value" term requires. valid is false when sel does not parse.
func fieldSelectorExactName(sel, field string) (value string, found, valid bool) {
	terms := splitFieldTerms(sel)
	slices.Sort(terms)
	for _, term := range terms {
		if term == "" {
			continue
		}
		lhs, op, rhs, ok := splitFieldTerm(term)
		if !ok {
			return "", false, false
		}
		v, ok := unescapeFieldValue(rhs)
		if !ok {
			return "", false, false
		}
		if !found && op != "!=" && lhs == field {
			value, found = v, true
		}
	}
	return value, found, true
}

// splitFieldTerms splits on commas not escaped by a backslash.
func splitFieldTerms(sel string) []string {
	if sel == "" {
		return nil
	}
	var terms []string
	start, inSlash := 0, false
	for i, c := range sel {
		switch {
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

// splitFieldTerm splits at the first operator; "!=" and "==" are tried before
// "=" at each position.
func splitFieldTerm(term string) (lhs, op, rhs string, ok bool) {
	for i := range term {
		rest := term[i:]
		for _, op := range []string{"!=", "==", "="} {
			if strings.HasPrefix(rest, op) {
				return term[:i], op, term[i+len(op):], true
			}
		}
	}
	return "", "", "", false
}

// unescapeFieldValue undoes \\, \, and \=; any other escape, a trailing
// backslash, or an unescaped , or = is an error.
func unescapeFieldValue(s string) (string, bool) {
	if !strings.ContainsAny(s, `\,=`) {
		return s, true
	}
	var b strings.Builder
	inSlash := false
	for _, c := range s {
		if inSlash {
			switch c {
			case '\\', ',', '=':
				b.WriteRune(c)
			default:
				return "", false
			}
			inSlash = false
			continue
		}
		switch c {
		case '\\':
			inSlash = true
		case ',', '=':
			return "", false
		default:
			b.WriteRune(c)
		}
	}
	if inSlash {
		return "", false
	}
	return b.String(), true
}

// Label selectors: a validating port of apimachinery's labels lexer and
// parser (labels.Parse), which is what decides whether ListOptions decode.

type labelToken int

const (
	ltError labelToken = iota
	ltEnd
	ltClosePar
	ltComma
	ltNot // "!"
	ltDoubleEquals
	ltEquals
	ltGreater
	ltIdent
	ltIn
	ltLess
	ltNotEquals
	ltNotIn
	ltOpenPar
)

func labelKeyword(s string) (labelToken, bool) {
	switch s {
	case ")":
		return ltClosePar, true
	case ",":
		return ltComma, true
	case "!":
		return ltNot, true
	case "==":
		return ltDoubleEquals, true
	case "=":
		return ltEquals, true
	case ">":
		return ltGreater, true
	case "in":
		return ltIn, true
	case "<":
		return ltLess, true
	case "!=":
		return ltNotEquals, true
	case "notin":
		return ltNotIn, true
	case "(":
		return ltOpenPar, true
	}
	return ltError, false
}

func isLabelSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isLabelSymbol(c byte) bool {
	switch c {
	case '=', '!', '(', ')', ',', '>', '<':
		return true
	}
	return false
}

type labelItem struct {
	tok labelToken
	lit string
}

// lexLabelSelector returns the tokens of s, ending with ltEnd.
func lexLabelSelector(s string) []labelItem {
	var items []labelItem
	pos := 0
	for {
		for pos < len(s) && isLabelSpace(s[pos]) {
			pos++
		}
		// A NUL byte ends the input for the Kubernetes lexer.
		if pos >= len(s) || s[pos] == 0 {
			return append(items, labelItem{tok: ltEnd})
		}
		if isLabelSymbol(s[pos]) {
			// The longest run of symbols that is a keyword, extended one
			// symbol at a time.
			start, last, lastEnd := pos, ltError, pos
			for pos < len(s) && isLabelSymbol(s[pos]) {
				pos++
				if tok, ok := labelKeyword(s[start:pos]); ok {
					last, lastEnd = tok, pos
				} else if last != ltError {
					break
				}
			}
			if last == ltError {
				items = append(items, labelItem{tok: ltError, lit: s[start:pos]})
				continue
			}
			pos = lastEnd
			// The Kubernetes lexer consumes a NUL that ends a token, so the
			// next token starts after it.
			if pos < len(s) && s[pos] == 0 {
				pos++
			}
			items = append(items, labelItem{tok: last, lit: s[start:lastEnd]})
			continue
		}
		start := pos
		for pos < len(s) && s[pos] != 0 && !isLabelSymbol(s[pos]) && !isLabelSpace(s[pos]) {
			pos++
		}
		lit := s[start:pos]
		if pos < len(s) && s[pos] == 0 {
			pos++
		}
		if tok, ok := labelKeyword(lit); ok {
			items = append(items, labelItem{tok: tok, lit: lit})
		} else {
			items = append(items, labelItem{tok: ltIdent, lit: lit})
		}
	}
}

// validLabelSelector reports whether labels.Parse accepts s.
func validLabelSelector(s string) bool {
	items := lexLabelSelector(s)
	p := 0
	// In value position "in" and "notin" are plain identifiers.
	look := func(values bool) labelToken {
		t := items[p].tok
		if values && (t == ltIn || t == ltNotIn) {
			t = ltIdent
		}
		return t
	}
	next := func(values bool) labelItem {
		it := items[p]
		if values && (it.tok == ltIn || it.tok == ltNotIn) {
			it.tok = ltIdent
		}
		p++
		return it
	}
	for {
		switch look(true) {
		case ltEnd:
			return true
		case ltIdent, ltNot:
		default:
			return false
		}
		// Requirement: [!]key [op values].
		it := next(true)
		notExists := it.tok == ltNot
		if notExists {
			it = next(true)
		}
		if it.tok != ltIdent || !validLabelKey(it.lit) {
			return false
		}
		if t := look(true); t == ltEnd || t == ltComma {
			// Exists or DoesNotExist.
		} else if notExists {
			// "!key" followed by an operator: the operator is parsed, then
			// NewRequirement rejects values for DoesNotExist.
			return false
		} else {
			op := next(false).tok
			var values []string
			switch op {
			case ltIn, ltNotIn:
				if next(true).tok != ltOpenPar {
					return false
				}
				switch look(true) {
				case ltClosePar:
					next(true)
					values = []string{""}
				case ltIdent, ltComma:
					for {
						v := next(true)
						if v.tok == ltIdent {
							values = append(values, v.lit)
							if t := look(true); t == ltComma {
								continue
							} else if t != ltClosePar {
								return false
							}
							break
						}
						if v.tok != ltComma {
							return false
						}
						values = append(values, "")
						if look(true) == ltClosePar {
							break
						}
					}
					if next(true).tok != ltClosePar {
						return false
					}
				default:
					return false
				}
			case ltEquals, ltDoubleEquals, ltNotEquals, ltGreater, ltLess:
				if t := look(true); t == ltEnd || t == ltComma {
					values = []string{""}
				} else if v := next(true); v.tok == ltIdent {
					values = []string{v.lit}
				} else {
					return false
				}
				if op == ltGreater || op == ltLess {
					if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
						return false
					}
				}
			default:
				return false
			}
			for _, v := range values {
				if !validLabelValue(v) {
					return false
				}
			}
		}
		switch next(true).tok {
		case ltEnd:
			return true
		case ltComma:
			if t := look(true); t != ltIdent && t != ltNot {
				return false
			}
		default:
			return false
		}
	}
}

// validLabelKey is apimachinery's IsQualifiedName: [dns-subdomain/]name.
func validLabelKey(k string) bool {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name = k
	} else {
		if strings.Contains(name, "/") || prefix == "" || !validDNSSubdomain(prefix) {
			return false
		}
	}
	return name != "" && len(name) <= 63 && validLabelName(name)
}

// validLabelValue: empty, or at most 63 characters of a label name.
func validLabelValue(v string) bool {
	return v == "" || (len(v) <= 63 && validLabelName(v))
}

// validLabelName matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func validLabelName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// validDNSSubdomain is RFC 1123 subdomain: at most 253 characters of
// dot-separated lower-case labels.
func validDNSSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || !isLowerAlnum(label[0]) || !isLowerAlnum(label[len(label)-1]) {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isLowerAlnum(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
