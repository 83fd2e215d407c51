// This file holds label selectors: the labelSelector query parameter, parsed
// with the grammar and error messages of k8s.io/apimachinery's labels.Parse
// (pkg/labels/selector.go), and matched against an object's labels.

package meta

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operator relates a key to values in a selector requirement. The values are
// those of k8s.io/apimachinery/pkg/selection.
type Operator string

// The operators of label and field selectors.
const (
	OpEquals       Operator = "="
	OpDoubleEquals Operator = "=="
	OpNotEquals    Operator = "!="
	OpIn           Operator = "in"
	OpNotIn        Operator = "notin"
	OpExists       Operator = "exists"
	OpDoesNotExist Operator = "!"
	OpGreaterThan  Operator = "gt"
	OpLessThan     Operator = "lt"
)

// binaryOperators lists the operators in the order k8s names them in the
// "expected:" part of an error.
const binaryOperators = "in, notin, =, ==, !=, gt, lt"

// Requirement is one term of a label selector: Key, Operator and Values
// (sorted and without duplicates; one value for =, ==, !=, gt and lt; none for
// exists and !).
type Requirement struct {
	Key      string
	Operator Operator
	Values   []string
}

// LabelSet is what a selector reads labels from, when they are not a map
// (the storage layer's compact labels).
type LabelSet interface {
	Lookup(key string) (value string, ok bool)
}

// LabelBits is a fingerprint of a set of labels for selectors: the OR of
// LabelKeyBit of each key and LabelPairBit of each key and value. A
// LabelSet that also has a method LabelBits() uint64 returning it lets a
// selector reject labels that cannot match without looking a key up (a
// LIST with a selector reads the labels of every object it walks, and a
// lookup reads memory the object's other fields do not share). Zero means
// unknown: nothing is rejected.
//
// LabelKeyBit is the bits of a key.
func LabelKeyBit(key string) uint64 { return twoBits(fnv1a(fnvOffset, key)) }

// LabelPairBit is the bits of a key and its value.
func LabelPairBit(key, value string) uint64 {
	return twoBits(fnv1a(fnv1a(fnvOffset, key)^'=', value))
}

// twoBits sets two bits of a hash (they may coincide), as a Bloom filter
// with two hash functions does: with a few labels about one in thirty
// requirements that the labels do not satisfy passes the bits, against
// one in ten with one bit.
func twoBits(h uint64) uint64 { return 1<<(h&63) | 1<<(h>>6&63) }

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// labelBits is a LabelSet that knows its LabelBits.
type labelBits interface{ LabelBits() uint64 }

// need is the LabelBits any labels that satisfy r have: the pair's bits for
// an equality (or in with one value), the key's for exists, in, gt and lt;
// none for the negative operators.
func (r Requirement) need() uint64 {
	switch r.Operator {
	case OpEquals, OpDoubleEquals, OpIn:
		if len(r.Values) == 1 {
			return LabelPairBit(r.Key, r.Values[0])
		}
		if r.Operator == OpIn && len(r.Values) > 1 {
			return LabelKeyBit(r.Key)
		}
	case OpExists, OpGreaterThan, OpLessThan:
		return LabelKeyBit(r.Key)
	}
	return 0
}

// labelMap is a map as a LabelSet.
type labelMap map[string]string

func (m labelMap) Lookup(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// Matches reports whether labels satisfy the requirement. A missing label
// satisfies only !=, notin and !.
func (r Requirement) Matches(labels map[string]string) bool { return r.MatchesSet(labelMap(labels)) }

// MatchesSet is Matches for labels read through a LabelSet.
func (r Requirement) MatchesSet(labels LabelSet) bool {
	v, ok := labels.Lookup(r.Key)
	switch r.Operator {
	case OpIn, OpEquals, OpDoubleEquals:
		return ok && slices.Contains(r.Values, v)
	case OpNotIn, OpNotEquals:
		return !ok || !slices.Contains(r.Values, v)
	case OpExists:
		return ok
	case OpDoesNotExist:
		return !ok
	case OpGreaterThan, OpLessThan:
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		want, err := strconv.ParseInt(r.Values[0], 10, 64)
		if err != nil {
			return false
		}
		if r.Operator == OpGreaterThan {
			return have > want
		}
		return have < want
	}
	return false
}

// String is the requirement in selector syntax, as k8s prints it.
func (r Requirement) String() string {
	var b strings.Builder
	if r.Operator == OpDoesNotExist {
		b.WriteByte('!')
	}
	b.WriteString(r.Key)
	switch r.Operator {
	case OpExists, OpDoesNotExist:
		return b.String()
	case OpEquals:
		b.WriteString("=")
	case OpDoubleEquals:
		b.WriteString("==")
	case OpNotEquals:
		b.WriteString("!=")
	case OpIn:
		b.WriteString(" in (")
	case OpNotIn:
		b.WriteString(" notin (")
	case OpGreaterThan:
		b.WriteString(">")
	case OpLessThan:
		b.WriteString("<")
	}
	vals := r.Values
	if !slices.IsSorted(vals) {
		vals = slices.Sorted(slices.Values(vals))
	}
	b.WriteString(strings.Join(vals, ","))
	if r.Operator == OpIn || r.Operator == OpNotIn {
		b.WriteString(")")
	}
	return b.String()
}

// LabelSelector is a parsed labelSelector: the AND of its requirements,
// sorted by key. The zero value has no requirements and matches everything.
// A LabelSelector is immutable and safe for concurrent use.
type LabelSelector struct {
	reqs []Requirement
	need uint64 // the LabelBits matching labels have (Requirement.need)
}

// Matches reports whether labels satisfy every requirement.
func (s LabelSelector) Matches(labels map[string]string) bool { return s.MatchesSet(labelMap(labels)) }

// MatchesSet is Matches for labels read through a LabelSet.
func (s LabelSelector) MatchesSet(labels LabelSet) bool {
	if s.need != 0 {
		if lb, ok := labels.(labelBits); ok {
			if b := lb.LabelBits(); b != 0 && b&s.need != s.need {
				return false
			}
		}
	}
	for _, r := range s.reqs {
		if !r.MatchesSet(labels) {
			return false
		}
	}
	return true
}

// Need is the LabelBits every set of labels the selector matches has: each
// requirement's pair bits (=, ==, in with one value) or key bits (in, exists,
// gt, lt); none for the negative operators, so zero for a selector of those
// only. Labels whose known (non-zero) bits lack some of them do not match.
func (s LabelSelector) Need() uint64 { return s.need }

// Empty reports whether the selector has no requirements (matches everything).
func (s LabelSelector) Empty() bool { return len(s.reqs) == 0 }

// String is the selector in canonical syntax: requirements sorted by key,
// joined by commas. It parses back to an equal selector.
func (s LabelSelector) String() string {
	parts := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Requirements returns a copy of the requirements, sorted by key.
func (s LabelSelector) Requirements() []Requirement {
	out := make([]Requirement, len(s.reqs))
	for i, r := range s.reqs {
		r.Values = slices.Clone(r.Values)
		out[i] = r
	}
	return out
}

// RequiresExactMatch returns the value the selector requires for key, when
// its first requirement on key is =, == or an in with one value.
func (s LabelSelector) RequiresExactMatch(key string) (value string, ok bool) {
	for _, r := range s.reqs {
		if r.Key != key {
			continue
		}
		switch r.Operator {
		case OpEquals, OpDoubleEquals, OpIn:
			if len(r.Values) == 1 {
				return r.Values[0], true
			}
		}
		return "", false
	}
	return "", false
}

// LabelSelectorFromSet returns the selector that requires each label of set
// to have its value (k=v,...). It does not validate keys or values.
func LabelSelectorFromSet(set map[string]string) LabelSelector {
	var s LabelSelector
	for k, v := range set {
		s.reqs = append(s.reqs, Requirement{Key: k, Operator: OpEquals, Values: []string{v}})
		s.need |= LabelPairBit(k, v)
	}
	slices.SortFunc(s.reqs, func(a, b Requirement) int { return strings.Compare(a.Key, b.Key) })
	return s
}

// ParseLabelSelector parses the labelSelector syntax of Kubernetes:
//
//	selector    ::= requirement { "," requirement }
//	requirement ::= [ "!" ] KEY [ ( "=" | "==" | "!=" | ">" | "<" ) VALUE
//	              | ( "in" | "notin" ) "(" [ VALUE { "," VALUE } ] ")" ]
//
// A bare KEY requires the label to exist, !KEY that it does not; > and < take
// an integer. Keys are qualified names and values label values. Whitespace
// around tokens is ignored; the empty string is the empty selector. Errors
// are *ParseError (ErrInvalidLabelSelector) with the message labels.Parse
// gives, such as "unable to parse requirement: ...".
func ParseLabelSelector(s string) (LabelSelector, error) {
	p := labelParser{toks: lexLabels(s)}
	reqs, msg := p.parse()
	if msg != "" {
		return LabelSelector{}, &ParseError{Err: ErrInvalidLabelSelector, Msg: msg}
	}
	slices.SortStableFunc(reqs, func(a, b Requirement) int { return strings.Compare(a.Key, b.Key) })
	sel := LabelSelector{reqs: reqs}
	for _, r := range reqs {
		sel.need |= r.need()
	}
	return sel, nil
}

type labelTokKind int

const (
	tokEnd labelTokKind = iota
	tokClosePar
	tokComma
	tokNot
	tokDoubleEquals
	tokEquals
	tokGreater
	tokIdent
	tokIn
	tokLess
	tokNotEquals
	tokNotIn
	tokOpenPar
)

type labelTok struct {
	kind labelTokKind
	lit  string
}

func isSelectorSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isSelectorSymbol(c byte) bool {
	switch c {
	case '=', '!', '(', ')', ',', '>', '<':
		return true
	}
	return false
}

// lexLabels splits a selector into tokens, ending with tokEnd. Like k8s's
// lexer it treats a NUL byte as the end of input where a token would start,
// and skips a NUL that ends an identifier or a symbol.
func lexLabels(s string) []labelTok {
	var toks []labelTok
	pos := 0
	for {
		for pos < len(s) && isSelectorSpace(s[pos]) {
			pos++
		}
		if pos >= len(s) || s[pos] == 0 {
			return append(toks, labelTok{kind: tokEnd})
		}
		c := s[pos]
		if isSelectorSymbol(c) {
			next := byte(0)
			if pos+1 < len(s) {
				next = s[pos+1]
			}
			switch {
			case c == '!' && next == '=':
				toks = append(toks, labelTok{tokNotEquals, "!="})
				pos += 2
			case c == '=' && next == '=':
				toks = append(toks, labelTok{tokDoubleEquals, "=="})
				pos += 2
			default:
				toks = append(toks, labelTok{symbolKind(c), string(c)})
				pos++
			}
			if pos < len(s) && s[pos] == 0 {
				pos++ // k8s's lexer consumes a NUL that ends a symbol
			}
			continue
		}
		start := pos
		for pos < len(s) && s[pos] != 0 && !isSelectorSymbol(s[pos]) && !isSelectorSpace(s[pos]) {
			pos++
		}
		lit := s[start:pos]
		if pos < len(s) && s[pos] == 0 {
			pos++ // k8s's lexer consumes the NUL that ends an identifier
		}
		switch lit {
		case "in":
			toks = append(toks, labelTok{tokIn, lit})
		case "notin":
			toks = append(toks, labelTok{tokNotIn, lit})
		default:
			toks = append(toks, labelTok{tokIdent, lit})
		}
	}
}

func symbolKind(c byte) labelTokKind {
	switch c {
	case '=':
		return tokEquals
	case '!':
		return tokNot
	case '(':
		return tokOpenPar
	case ')':
		return tokClosePar
	case ',':
		return tokComma
	case '>':
		return tokGreater
	default:
		return tokLess
	}
}

type labelParser struct {
	toks []labelTok
	pos  int
}

// peek and next read a token; in value position (values true) the keywords
// in and notin are plain identifiers.
func (p *labelParser) peek(values bool) labelTok {
	t := p.toks[p.pos]
	if values && (t.kind == tokIn || t.kind == tokNotIn) {
		t.kind = tokIdent
	}
	return t
}

func (p *labelParser) next(values bool) labelTok {
	t := p.peek(values)
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}

// parse returns the requirements, or the error message.
func (p *labelParser) parse() ([]Requirement, string) {
	var reqs []Requirement
	for {
		t := p.peek(true)
		switch t.kind {
		case tokIdent, tokNot:
			r, msg := p.requirement()
			if msg != "" {
				return nil, "unable to parse requirement: " + msg
			}
			reqs = append(reqs, r)
			t := p.next(true)
			switch t.kind {
			case tokEnd:
				return reqs, ""
			case tokComma:
				if t2 := p.peek(true); t2.kind != tokIdent && t2.kind != tokNot {
					return nil, fmt.Sprintf("found '%s', expected: identifier after ','", t2.lit)
				}
			default:
				return nil, fmt.Sprintf("found '%s', expected: ',' or 'end of string'", t.lit)
			}
		case tokEnd:
			return reqs, ""
		default:
			return nil, fmt.Sprintf("found '%s', expected: !, identifier, or 'end of string'", t.lit)
		}
	}
}

func (p *labelParser) requirement() (Requirement, string) {
	var op Operator
	t := p.next(true)
	if t.kind == tokNot {
		op = OpDoesNotExist
		t = p.next(true)
	}
	if t.kind != tokIdent {
		return Requirement{}, fmt.Sprintf("found '%s', expected: identifier", t.lit)
	}
	key := t.lit
	if errs := IsQualifiedName(key); len(errs) > 0 {
		// k8s builds this error on a nil field path, which prints as "<nil>".
		return Requirement{}, invalidErr("<nil>", key, strings.Join(errs, "; ")).Error()
	}
	if k := p.peek(true).kind; k == tokEnd || k == tokComma {
		if op != OpDoesNotExist {
			op = OpExists
		}
	}
	if op == OpExists || op == OpDoesNotExist {
		return Requirement{Key: key, Operator: op}, ""
	}
	switch t := p.next(false); t.kind {
	case tokIn:
		op = OpIn
	case tokEquals:
		op = OpEquals
	case tokDoubleEquals:
		op = OpDoubleEquals
	case tokGreater:
		op = OpGreaterThan
	case tokLess:
		op = OpLessThan
	case tokNotIn:
		op = OpNotIn
	case tokNotEquals:
		op = OpNotEquals
	default:
		return Requirement{}, fmt.Sprintf("found '%s', expected: %s", t.lit, binaryOperators)
	}
	var vals []string
	var msg string
	if op == OpIn || op == OpNotIn {
		vals, msg = p.valueSet()
	} else {
		vals, msg = p.exactValue()
	}
	if msg != "" {
		return Requirement{}, msg
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	if errs := validateRequirementValues(key, op, vals); len(errs) > 0 {
		return Requirement{}, aggregate(errs)
	}
	return Requirement{Key: key, Operator: op, Values: vals}, ""
}

// validateRequirementValues is the value half of k8s's NewRequirement; its
// field paths are rooted at "values" because the parser passes no path.
func validateRequirementValues(key string, op Operator, vals []string) []fieldError {
	var errs []fieldError
	switch op {
	case OpIn, OpNotIn:
		if len(vals) == 0 {
			errs = append(errs, invalidErr("values", vals, "for 'in', 'notin' operators, values set can't be empty"))
		}
	case OpEquals, OpDoubleEquals, OpNotEquals:
		if len(vals) != 1 {
			errs = append(errs, invalidErr("values", vals, "exact-match compatibility requires one single value"))
		}
	case OpGreaterThan, OpLessThan:
		if len(vals) != 1 {
			errs = append(errs, invalidErr("values", vals, "for 'Gt', 'Lt' operators, exactly one value is required"))
		}
		for i, v := range vals {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				errs = append(errs, invalidErr(fmt.Sprintf("values[%d]", i), v, "for 'Gt', 'Lt' operators, the value must be an integer"))
			}
		}
	}
	for i, v := range vals {
		if msgs := IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, invalidErr(fmt.Sprintf("values[%d][%s]", i, key), v, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// valueSet parses "(a,b,...)"; empty entries are the empty value.
func (p *labelParser) valueSet() ([]string, string) {
	if t := p.next(true); t.kind != tokOpenPar {
		return nil, fmt.Sprintf("found '%s' expected: '('", t.lit)
	}
	t := p.peek(true)
	switch t.kind {
	case tokIdent, tokComma:
		vals, msg := p.identifierList()
		if msg != "" {
			return nil, msg
		}
		if p.next(true).kind != tokClosePar {
			return nil, fmt.Sprintf("found '%s', expected: ')'", t.lit)
		}
		return vals, ""
	case tokClosePar:
		p.next(true)
		return []string{""}, ""
	default:
		return nil, fmt.Sprintf("found '%s', expected: ',', ')' or identifier", t.lit)
	}
}

func (p *labelParser) identifierList() ([]string, string) {
	var vals []string
	for {
		t := p.next(true)
		switch t.kind {
		case tokIdent:
			vals = append(vals, t.lit)
			switch t2 := p.peek(true); t2.kind {
			case tokComma:
				continue
			case tokClosePar:
				return vals, ""
			default:
				return nil, fmt.Sprintf("found '%s', expected: ',' or ')'", t2.lit)
			}
		case tokComma:
			if len(vals) == 0 {
				vals = append(vals, "") // "(,"
			}
			switch p.peek(true).kind {
			case tokClosePar:
				return append(vals, ""), "" // ",)"
			case tokComma:
				vals = append(vals, "") // ",,"
			}
		default:
			return nil, fmt.Sprintf("found '%s', expected: ',', or identifier", t.lit)
		}
	}
}

func (p *labelParser) exactValue() ([]string, string) {
	if k := p.peek(true).kind; k == tokEnd || k == tokComma {
		return []string{""}, ""
	}
	if t := p.next(true); t.kind == tokIdent {
		return []string{t.lit}, ""
	} else {
		return nil, fmt.Sprintf("found '%s', expected: identifier", t.lit)
	}
}
