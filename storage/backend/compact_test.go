package backend

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// checkCompact fails when isCompactJSON accepts bytes that json.Compact
// would reject or change: the one direction that matters (a false is only
// a fallback to json.Compact).
func checkCompact(t *testing.T, b []byte) bool {
	t.Helper()
	got := isCompactJSON(b)
	var c bytes.Buffer
	err := json.Compact(&c, b)
	if got && (err != nil || !bytes.Equal(c.Bytes(), b)) {
		t.Fatalf("isCompactJSON(%q) = true, json.Compact: %q, %v", b, c.Bytes(), err)
	}
	return got
}

func TestIsCompactJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want bool
	}{
		{"object", `{"apiVersion":"v1","kind":"A","metadata":{"name":"x","labels":{"a":"b"}},"spec":{"n":[1,-2.5e+3,0,true,false,null,{}],"s":"\"\\\/\b\f\n\r\t\u00e9é"}}`, true},
		{"empty_object", `{}`, true},
		{"empty_array", `[]`, true},
		{"scalars", `"x"`, true},
		{"number", `-0.1E-9`, true},
		{"space_between", `{"a": 1}`, false},
		{"leading_space", ` {}`, false},
		{"trailing_newline", "{}\n", false},
		{"space_in_string", `{"a b":"c d"}`, true},
		{"control_in_string", "{\"a\":\"\x01\"}", false},
		{"bad_escape", `{"a":"\x"}`, false},
		{"short_unicode", `{"a":"\u12"}`, false},
		{"leading_zero", `01`, false},
		{"bare_minus", `-`, false},
		{"dot_without_digits", `1.`, false},
		{"exponent_without_digits", `1e`, false},
		{"trailing_comma", `{"a":1,}`, false},
		{"missing_colon", `{"a"1}`, false},
		{"unquoted_key", `{a:1}`, false},
		{"two_values", `{}{}`, false},
		{"unterminated", `{"a":"b`, false},
		{"bad_literal", `tru`, false},
		{"too_deep", strings.Repeat("[", maxCompactDepth+1) + strings.Repeat("]", maxCompactDepth+1), false},
		{"deep_enough", strings.Repeat("[", maxCompactDepth) + strings.Repeat("]", maxCompactDepth), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkCompact(t, []byte(tc.in)); got != tc.want {
				t.Errorf("isCompactJSON(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzIsCompactJSON checks that isCompactJSON accepts only what json.Compact
// returns unchanged, and accepts what it compacted.
func FuzzIsCompactJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5e3,"x\u0041"]}`, `{"a": 1}`, `[-0,true,null]`, "\"\xff\"", `{"a":"\/"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCompact(t, b)
		var c bytes.Buffer
		// Shorter than 2×maxCompactDepth, it cannot nest deeper than that.
		if json.Compact(&c, b) == nil && c.Len() < 2*maxCompactDepth && !isCompactJSON(c.Bytes()) {
			t.Fatalf("isCompactJSON(%q) = false for json.Compact's output", c.Bytes())
		}
	})
}

func BenchmarkEditMetaCompact(b *testing.B) {
	data := []byte(`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"obj-1","namespace":"default","generation":1,"labels":{"app":"load","managed-by":"annex","team":"payments"},"managedFields":[{"manager":"annexload","operation":"Update","apiVersion":"platform.example.com/v1beta1","time":"2026-11-28T21:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:managed-by":{},"f:team":{}}},"f:spec":{".":{},"f:owners":{},"f:replicas":{},"f:tier":{}}}}]},"spec":{"owners":["payments-team"],"tier":"dev","replicas":2},"status":{"phase":"Pending"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := PrepareCreate(data, 42, "uid-x", "2026-11-28T21:00:00Z"); err != nil {
			b.Fatal(err)
		}
	}
}
