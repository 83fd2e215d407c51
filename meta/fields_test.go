package meta

import (
	"errors"
	"slices"
	"testing"
)

func TestParseFieldSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		reqs           []FieldRequirement
	}{
		{name: "empty", in: "", want: ""},
		{name: "equals", in: "metadata.name=foo", want: "metadata.name=foo",
			reqs: []FieldRequirement{{"metadata.name", OpEquals, "foo"}}},
		{name: "double_equals_prints_single", in: "metadata.name==foo", want: "metadata.name=foo",
			reqs: []FieldRequirement{{"metadata.name", OpEquals, "foo"}}},
		{name: "not_equals", in: "status.phase!=Running", want: "status.phase!=Running",
			reqs: []FieldRequirement{{"status.phase", OpNotEquals, "Running"}}},
		{name: "empty_value", in: "a=", want: "a=", reqs: []FieldRequirement{{"a", OpEquals, ""}}},
		{name: "sorted_terms", in: "b=2,a=1", want: "a=1,b=2"},
		{name: "empty_terms_skipped", in: ",a=1,,", want: "a=1"},
		{name: "bare_equals_dropped", in: "=,a=1", want: "a=1"},
		{name: "escaped_comma", in: `a=x\,y`, want: `a=x\,y`, reqs: []FieldRequirement{{"a", OpEquals, "x,y"}}},
		{name: "escaped_equals_and_backslash", in: `a=x\=y\\`, want: `a=x\=y\\`, reqs: []FieldRequirement{{"a", OpEquals, `x=y\`}}},
		{name: "first_operator_wins", in: "a!=b=c", want: "", reqs: nil},
		{name: "spaces_are_kept", in: "a = b", want: "a = b", reqs: []FieldRequirement{{"a ", OpEquals, " b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseFieldSelector(tt.in)
			if tt.name == "first_operator_wins" {
				// "a!=b=c": the value "b=c" has an unescaped '='.
				if err == nil || err.Error() != "invalid field selector: unescaped character in value: 61" {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFieldSelector(%q): %v", tt.in, err)
			}
			if got := s.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if tt.reqs != nil && !slices.Equal(s.Requirements(), tt.reqs) {
				t.Errorf("Requirements() = %#v, want %#v", s.Requirements(), tt.reqs)
			}
		})
	}
}

func TestParseFieldSelectorErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"no_operator", "a", "invalid selector: 'a'; can't understand 'a'"},
		{"second_term_no_operator", "a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"},
		{"bad_escape", `a=\x`, `invalid field selector: invalid escape sequence: \x`},
		{"trailing_backslash", `a=b\`, `invalid field selector: invalid escape sequence: \`},
		{"unescaped_equals", "a==b=c", "invalid field selector: unescaped character in value: 61"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseFieldSelector(tt.in)
			if err == nil {
				t.Fatalf("ParseFieldSelector(%q) succeeded", tt.in)
			}
			if !errors.Is(err, ErrInvalidFieldSelector) {
				t.Errorf("%v is not ErrInvalidFieldSelector", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestFieldSelectorMatches(t *testing.T) {
	t.Parallel()
	fields := map[string]string{"metadata.name": "foo", "metadata.namespace": "ns"}
	tests := []struct {
		sel  string
		want bool
	}{
		{"", true},
		{"metadata.name=foo", true},
		{"metadata.name==foo", true},
		{"metadata.name=bar", false},
		{"metadata.name!=bar", true},
		{"metadata.name!=foo", false},
		{"spec.missing=", true},
		{"spec.missing!=", false},
		{"metadata.name=foo,metadata.namespace=ns", true},
		{"metadata.name=foo,metadata.namespace=other", false},
	}
	for _, tt := range tests {
		s, err := ParseFieldSelector(tt.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Matches(fields); got != tt.want {
			t.Errorf("%q.Matches = %v, want %v", tt.sel, got, tt.want)
		}
	}
}

func TestFieldSelectorRequiresExactMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sel, field, want string
		ok               bool
	}{
		{"metadata.name=foo", "metadata.name", "foo", true},
		{"metadata.name==foo", "metadata.name", "foo", true},
		{"metadata.name!=foo", "metadata.name", "", false},
		{"metadata.namespace=x", "metadata.name", "", false},
		{"", "metadata.name", "", false},
	}
	for _, tt := range tests {
		s, err := ParseFieldSelector(tt.sel)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.RequiresExactMatch(tt.field)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q.RequiresExactMatch(%q) = %q, %v", tt.sel, tt.field, got, ok)
		}
	}
}

func TestFieldSelectorFromSet(t *testing.T) {
	t.Parallel()
	s := FieldSelectorFromSet(map[string]string{"metadata.namespace": "ns", "metadata.name": "a,b"})
	if got := s.String(); got != `metadata.name=a\,b,metadata.namespace=ns` {
		t.Errorf("String() = %q", got)
	}
	s2, err := ParseFieldSelector(s.String())
	if err != nil || !slices.Equal(s2.Requirements(), s.Requirements()) {
		t.Errorf("re-parse: %v %#v", err, s2.Requirements())
	}
}

// sortedFieldReqs orders requirements so that selectors equal as sets compare
// equal: parsing sorts raw terms, and "==" printing as "=" can change that order.
func sortedFieldReqs(r []FieldRequirement) []FieldRequirement {
	r = slices.Clone(r)
	slices.SortFunc(r, func(a, b FieldRequirement) int {
		if c := compareStr(a.Field, b.Field); c != 0 {
			return c
		}
		if c := compareStr(string(a.Operator), string(b.Operator)); c != 0 {
			return c
		}
		return compareStr(a.Value, b.Value)
	})
	return r
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func FuzzParseFieldSelector(f *testing.F) {
	for _, s := range []string{"", "metadata.name=foo", "a==b,c!=d", `a=x\,y`, `a=\\`, `a=\x`, "a", "=", ",,", "a!=b=c",
		"a==z,a=b", "a\\,b=c", "é=ü", "a=\xff\\,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseFieldSelector(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidFieldSelector) || err.Error() == "" {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		s2, err := ParseFieldSelector(s.String())
		if err != nil {
			t.Fatalf("String() %q of %q does not re-parse: %v", s.String(), in, err)
		}
		if !slices.Equal(sortedFieldReqs(s.Requirements()), sortedFieldReqs(s2.Requirements())) {
			t.Fatalf("re-parse of %q differs: %#v vs %#v", s.String(), s.Requirements(), s2.Requirements())
		}
	})
}
