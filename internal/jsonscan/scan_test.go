package jsonscan

import "testing"

func TestSkipValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		at   int
		want int
	}{
		{name: "string", in: `"a\"b",`, want: 6},
		{name: "object_with_strings_holding_brackets", in: `{"a":"}]","b":[1,{"c":2}]} `, want: 26},
		{name: "array", in: `[1, [2], "]"]`, want: 13},
		{name: "number_before_comma", in: `12.5e3,`, want: 6},
		{name: "literal_at_end", in: `true`, want: 4},
		{name: "literal_before_space", in: `null }`, want: 4},
		{name: "unterminated_string", in: `"abc`, want: -1},
		{name: "unterminated_object", in: `{"a":[1,2}`, want: -1},
		{name: "string_in_object_unterminated", in: `{"a":"b`, want: -1},
		{name: "nothing", in: ``, want: -1},
		{name: "empty_literal", in: `,`, want: -1},
		{name: "offset", in: `{"k": [1]}`, at: 6, want: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SkipValue([]byte(tt.in), tt.at); got != tt.want {
				t.Errorf("SkipValue(%q, %d) = %d, want %d", tt.in, tt.at, got, tt.want)
			}
		})
	}
}

func TestSkipSpace(t *testing.T) {
	t.Parallel()
	if got := SkipSpace([]byte(" \t\r\n x"), 0); got != 5 {
		t.Errorf("got %d, want 5", got)
	}
	if got := SkipSpace([]byte("  "), 0); got != 2 {
		t.Errorf("all space: got %d, want 2", got)
	}
}

func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,"]"]}`, `"x\"`, `[[[`, `123,`, `{"a":"\\"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		for i := range len(b) + 1 {
			if end := SkipValue(b, i); end != -1 && (end <= i || end > len(b)) {
				t.Fatalf("SkipValue(%q, %d) = %d: out of range", s, i, end)
			}
		}
	})
}
