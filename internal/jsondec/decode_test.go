package jsondec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// reference decodes data as rest's decoder does: one value with UseNumber
// into a map[string]any, nothing after it but whitespace.
func reference(data []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // more after the object
	}
	rest := data[dec.InputOffset():]
	return m, len(bytes.Trim(rest, " \t\r\n")) == 0
}

// check fails unless Object and the reference agree on data: the same
// value, or both refusing (Object may also leave input it does not decode
// to the reference, but only nesting deeper than maxDepth).
func check(t *testing.T, data []byte) {
	t.Helper()
	got, ok := Object(data)
	want, wantOK := reference(data)
	same(t, data, got, ok, want, wantOK)
}

func same(t *testing.T, data []byte, got any, ok bool, want any, wantOK bool) {
	t.Helper()
	switch {
	case ok && !wantOK:
		t.Fatalf("%.200q: decoded, encoding/json refuses it", data)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("%.200q:\n got %.500v\nwant %.500v", data, got, want)
	case !ok && wantOK && depth(want) <= maxDepth:
		t.Fatalf("%.200q: refused, encoding/json decodes it", data)
	}
}

// depth is the nesting depth of a decoded value (an object or array is 1
// deeper than its deepest member).
func depth(v any) int {
	d := 0
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			d = max(d, depth(e))
		}
	case []any:
		for _, e := range t {
			d = max(d, depth(e))
		}
	default:
		return 0
	}
	return d + 1
}

func TestObject_matches_encoding_json(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{}`, ` { } `, "\t{\"a\":1}\r\n", `{"a":1,"a":2}`, `{"a":-0.5e+10,"b":0,"c":1E3,"d":-0}`,
		`{"s":"\u00e9\ud83d\ude00\ud800\udc00x\ud800\u0041\udc00\ud800","t":"\"\\\/\b\f\n\r\t"}`,
		"{\"raw\":\"\xff\xe2\x80\xed\xa0\x80é世\"}", `{"n":null,"t":true,"f":false,"l":[],"m":{},"x":[[1,[2]],{"y":[]}]}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}",
		`{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":[1,]}`, `{"a":tru}`, `{"a":nul}`, `{"a":1}}`, `{"a":1} {}`, `{"a":1}x`,
		`[]`, `null`, `"s"`, `1`, ``, ` `, `{`, `{"a":"`, `{"a":[`, strings.Repeat(`{"a":`, 2000) + `1` + strings.Repeat(`}`, 2000),
		strings.Repeat(`{"a":`, 1000) + `1` + strings.Repeat(`}`, 1000), `{"a":` + strings.Repeat(`[`, 999) + strings.Repeat(`]`, 999) + `}`,
	} {
		check(t, []byte(s))
	}
}

// checkValue is check for Value: any one JSON value.
func checkValue(t *testing.T, data []byte) {
	t.Helper()
	got, ok := Value(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var want any
	err := dec.Decode(&want)
	same(t, data, got, ok, want, err == nil && len(bytes.Trim(data[dec.InputOffset():], " \t\r\n")) == 0)
}

func TestValue_matches_encoding_json(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`"a"`, ` 1 `, `-0.5e3`, `true`, `false`, `null`, `[]`, `[1,{"a":[null]}]`, `{"a":1}`,
		`"\u00e9"`, `01`, `"`, ``, `1 2`, `[1]]`, `nul`, `"\x"`} {
		checkValue(t, []byte(s))
	}
}

func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x\u2028<"],"c":{"d":-0.5e3}}`, `{"s":"\ud800\udc00\\"}`, `{"":{"":[{}]}}`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		checkValue(t, data)
	})
}

// BenchmarkObject decodes an object of the environments example, against
// json.Decoder with UseNumber.
func BenchmarkObject(b *testing.B) {
	data := []byte(`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"obj-1234","namespace":"default","uid":"7d3c2a8e-1f2b-4c5d-9e8f-0a1b2c3d4e5f","resourceVersion":"12345","generation":1,"creationTimestamp":"2026-11-26T05:20:35Z","labels":{"app":"load","team":"payments","managed-by":"annex"}},"spec":{"owners":["payments-team"],"tier":"dev","replicas":2,"region":"eu-west-1"},"status":{"phase":"Pending"}}`)
	b.Run("jsondec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := Object(data); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := reference(data); !ok {
				b.Fatal("refused")
			}
		}
	})
}
