package meta

import (
	"errors"
	"slices"
	"testing"
)

func TestParseLabelSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string // String() of the result
		reqs []Requirement
	}{
		{name: "empty", in: "", want: ""},
		{name: "whitespace_only", in: " \t\n", want: ""},
		{name: "equals", in: "a=b", want: "a=b", reqs: []Requirement{{"a", OpEquals, []string{"b"}}}},
		{name: "double_equals", in: "a==b", want: "a==b", reqs: []Requirement{{"a", OpDoubleEquals, []string{"b"}}}},
		{name: "not_equals", in: "a!=b", want: "a!=b", reqs: []Requirement{{"a", OpNotEquals, []string{"b"}}}},
		{name: "empty_value", in: "a=", want: "a=", reqs: []Requirement{{"a", OpEquals, []string{""}}}},
		{name: "exists", in: "a", want: "a", reqs: []Requirement{{Key: "a", Operator: OpExists}}},
		{name: "does_not_exist", in: "!a", want: "!a", reqs: []Requirement{{Key: "a", Operator: OpDoesNotExist}}},
		{name: "in_sorted_dedup", in: "env in (prod, dev,prod)", want: "env in (dev,prod)",
			reqs: []Requirement{{"env", OpIn, []string{"dev", "prod"}}}},
		{name: "notin", in: "env notin (a)", want: "env notin (a)", reqs: []Requirement{{"env", OpNotIn, []string{"a"}}}},
		{name: "in_empty_parens", in: "x in ()", want: "x in ()", reqs: []Requirement{{"x", OpIn, []string{""}}}},
		{name: "in_empty_entries", in: "x in (foo,,baz)", want: "x in (,baz,foo)", reqs: []Requirement{{"x", OpIn, []string{"", "baz", "foo"}}}},
		{name: "in_leading_comma", in: "x in (,a)", want: "x in (,a)"},
		{name: "in_trailing_comma", in: "x in (a,)", want: "x in (,a)"},
		{name: "in_double_comma_before_paren", in: "x in (a,,)", want: "x in (,a)"},
		{name: "keyword_as_value", in: "x in (in,notin)", want: "x in (in,notin)"},
		{name: "keyword_as_key", in: "in=notin", want: "in=notin"},
		{name: "gt", in: "n>5", want: "n>5", reqs: []Requirement{{"n", OpGreaterThan, []string{"5"}}}},
		{name: "lt", in: "n<10", want: "n<10", reqs: []Requirement{{"n", OpLessThan, []string{"10"}}}},
		{name: "sorted_by_key", in: "z=1,a=2,m", want: "a=2,m,z=1"},
		{name: "prefixed_key", in: "app.kubernetes.io/name=web", want: "app.kubernetes.io/name=web"},
		{name: "k8s_doc_example", in: "x in (foo,,baz),y,z notin ()", want: "x in (,baz,foo),y,z notin ()"},
		{name: "spaces_everywhere", in: "  a = b ,  ! c ", want: "a=b,!c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseLabelSelector(tt.in)
			if err != nil {
				t.Fatalf("ParseLabelSelector(%q): %v", tt.in, err)
			}
			if got := s.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if tt.reqs != nil && !equalReqs(s.Requirements(), tt.reqs) {
				t.Errorf("Requirements() = %#v, want %#v", s.Requirements(), tt.reqs)
			}
			if s.Empty() != (tt.want == "") {
				t.Errorf("Empty() = %v for %q", s.Empty(), tt.want)
			}
		})
	}
}

func equalReqs(a, b []Requirement) bool {
	return slices.EqualFunc(a, b, func(x, y Requirement) bool {
		return x.Key == y.Key && x.Operator == y.Operator && slices.Equal(x.Values, y.Values)
	})
}

// The messages are those labels.Parse (k8s.io/apimachinery release-1.32) gives.
func TestParseLabelSelectorErrors(t *testing.T) {
	t.Parallel()
	const keyRegex = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	const valueRegex = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
	tests := []struct {
		name, in, want string
	}{
		{"no_operator", "a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"},
		{"invalid_key_chars", "-a=b", `unable to parse requirement: <nil>: Invalid value: "-a": ` + keyRegex},
		{"invalid_value", "a=-b", `unable to parse requirement: values[0][a]: Invalid value: "-b": ` + valueRegex},
		{"value_too_long", "a=" + string(make64('v')), `unable to parse requirement: values[0][a]: Invalid value: "` + string(make64('v')) + `": must be no more than 63 characters`},
		{"key_empty_prefix", "/a", `unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty`},
		{"key_two_slashes", "a/b/c", `unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
		{"gt_not_integer", "a>b", `unable to parse requirement: values[0]: Invalid value: "b": for 'Gt', 'Lt' operators, the value must be an integer`},
		{"gt_empty", "a>", `unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value must be an integer`},
		{"gt_negative", "a>-1", `unable to parse requirement: values[0][a]: Invalid value: "-1": ` + valueRegex},
		{"trailing_comma", "a=b,", "found '', expected: identifier after ','"},
		{"leading_comma", ",a", "found ',', expected: !, identifier, or 'end of string'"},
		{"double_bang", "!!a", "unable to parse requirement: found '!', expected: identifier"},
		{"in_without_paren", "a in b", "unable to parse requirement: found 'b' expected: '('"},
		{"in_unclosed", "a in (b", "unable to parse requirement: found '', expected: ',' or ')'"},
		{"in_operator_inside", "a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"},
		{"in_bad_after_comma", "a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"},
		{"exact_value_paren", "a=(", "unable to parse requirement: found '(', expected: identifier"},
		{"two_values", "a=b c", "found 'c', expected: ',' or 'end of string'"},
		{"not_with_operator", "!a=b", "found '=', expected: ',' or 'end of string'"},
		{"only_operator", "=", "found '=', expected: !, identifier, or 'end of string'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseLabelSelector(tt.in)
			if err == nil {
				t.Fatalf("ParseLabelSelector(%q) succeeded", tt.in)
			}
			if !errors.Is(err, ErrInvalidLabelSelector) {
				t.Errorf("error %v is not ErrInvalidLabelSelector", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err.Error(), tt.want)
			}
		})
	}
}

func make64(c byte) []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return b
}

func TestLabelSelectorMatches(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"env": "prod", "tier": "web", "n": "7", "empty": ""}
	tests := []struct {
		sel  string
		want bool
	}{
		{"", true},
		{"env=prod", true},
		{"env==prod", true},
		{"env=dev", false},
		{"env!=dev", true},
		{"env!=prod", false},
		{"missing!=x", true},
		{"missing=x", false},
		{"env in (dev,prod)", true},
		{"env in (dev)", false},
		{"missing in (a)", false},
		{"env notin (dev)", true},
		{"env notin (prod)", false},
		{"missing notin (a)", true},
		{"env", true},
		{"missing", false},
		{"!missing", true},
		{"!env", false},
		{"n>5", true},
		{"n>7", false},
		{"n<8", true},
		{"n<7", false},
		{"env>1", false}, // value not an integer
		{"missing>1", false},
		{"empty=", true},
		{"empty in ()", true},
		{"env=prod,tier=web", true},
		{"env=prod,tier=db", false},
	}
	for _, tt := range tests {
		s, err := ParseLabelSelector(tt.sel)
		if err != nil {
			t.Fatalf("ParseLabelSelector(%q): %v", tt.sel, err)
		}
		if got := s.Matches(labels); got != tt.want {
			t.Errorf("%q.Matches = %v, want %v", tt.sel, got, tt.want)
		}
	}
	var zero LabelSelector
	if !zero.Matches(nil) || !zero.Empty() || zero.String() != "" {
		t.Error("the zero LabelSelector must be empty and match everything")
	}
}

func TestLabelSelectorRequiresExactMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sel, key, want string
		ok             bool
	}{
		{"a=b", "a", "b", true},
		{"a==b", "a", "b", true},
		{"a in (b)", "a", "b", true},
		{"a in (b,c)", "a", "", false},
		{"a!=b", "a", "", false},
		{"x=y", "a", "", false},
	}
	for _, tt := range tests {
		s, err := ParseLabelSelector(tt.sel)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.RequiresExactMatch(tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q.RequiresExactMatch(%q) = %q, %v; want %q, %v", tt.sel, tt.key, got, ok, tt.want, tt.ok)
		}
	}
}

func TestLabelSelectorFromSet(t *testing.T) {
	t.Parallel()
	s := LabelSelectorFromSet(map[string]string{"b": "2", "a": "1"})
	if got := s.String(); got != "a=1,b=2" {
		t.Errorf("String() = %q", got)
	}
	if !s.Matches(map[string]string{"a": "1", "b": "2", "c": "3"}) || s.Matches(map[string]string{"a": "1"}) {
		t.Error("wrong match")
	}
}

func TestLabelSelectorNUL(t *testing.T) {
	t.Parallel()
	// k8s's lexer stops at a NUL where a token starts and skips one that
	// ends an identifier or a symbol.
	tests := []struct{ in, want string }{
		{"\x00a=b", ""},
		{"a=b\x00", "a=b"},
		{"a=\x00b", "a=b"},
	}
	for _, tt := range tests {
		s, err := ParseLabelSelector(tt.in)
		if err != nil {
			t.Fatalf("ParseLabelSelector(%q): %v", tt.in, err)
		}
		if s.String() != tt.want {
			t.Errorf("ParseLabelSelector(%q) = %q, want %q", tt.in, s.String(), tt.want)
		}
	}
	if _, err := ParseLabelSelector("a\x00b"); err == nil {
		t.Error(`"a\x00b" should lex as two identifiers and fail`)
	}
}

func FuzzParseLabelSelector(f *testing.F) {
	for _, s := range []string{"", "a=b", "a==b,c!=d", "x in (foo,,baz),y,z notin ()", "!a", "n>5", "n<-1",
		"app.kubernetes.io/name=web", "a in (,)", "a=b,", "a in (b", "\x00", "a\x00=b", "in in (in)", "a=b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseLabelSelector(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidLabelSelector) || err.Error() == "" {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		s2, err := ParseLabelSelector(s.String())
		if err != nil {
			t.Fatalf("String() %q of %q does not re-parse: %v", s.String(), in, err)
		}
		if !equalReqs(s.Requirements(), s2.Requirements()) {
			t.Fatalf("re-parse of %q differs: %#v vs %#v", s.String(), s.Requirements(), s2.Requirements())
		}
		if s2.String() != s.String() {
			t.Fatalf("String() not stable: %q vs %q", s.String(), s2.String())
		}
	})
}

// bitsSet is a LabelSet with given LabelBits, whatever its labels.
type bitsSet struct {
	m    map[string]string
	bits uint64
}

func (b bitsSet) Lookup(k string) (string, bool) { v, ok := b.m[k]; return v, ok }
func (b bitsSet) LabelBits() uint64              { return b.bits }

// A LabelSet's LabelBits decide before any lookup: labels whose bits lack a
// requirement's are rejected though their map would match, zero bits are
// unknown, and the negative operators need no bit.
func TestLabelSelectorLabelBits(t *testing.T) {
	m := map[string]string{"app": "demo"}
	right := LabelKeyBit("app") | LabelPairBit("app", "demo")
	for _, c := range []struct {
		sel  string
		bits uint64
		want bool
	}{
		{"app=demo", right, true},
		{"app=demo", 0, true},                       // unknown: looked up
		{"app=demo", LabelKeyBit("app"), false},     // the pair's bit is missing
		{"app", LabelPairBit("app", "demo"), false}, // the key's bit is missing
		{"app in (demo,x)", right, true},
		{"app!=x", 1 << 63 >> (LabelKeyBit("app") & 1), true}, // no bit needed
		{"!missing", LabelKeyBit("other"), true},
	} {
		sel, err := ParseLabelSelector(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.MatchesSet(bitsSet{m, c.bits}); got != c.want {
			t.Errorf("%q with bits %#x: %v, want %v", c.sel, c.bits, got, c.want)
		}
	}
}

// A selector from a set needs the bits of its pairs, as the same selector
// parsed does.
func TestLabelSelectorFromSetNeeds(t *testing.T) {
	set := map[string]string{"app": "demo", "tier": "web"}
	parsed, err := ParseLabelSelector("app=demo,tier=web")
	if err != nil {
		t.Fatal(err)
	}
	if got := LabelSelectorFromSet(set); got.need != parsed.need || got.need == 0 {
		t.Errorf("need %#x, parsed %#x", got.need, parsed.need)
	}
}
