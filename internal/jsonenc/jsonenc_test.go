package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestAppendString_every_byte_at_every_offset: each byte value (and the
// runes written escaped or replaced) at each offset of strings around the
// encoder's eight-byte steps is written as encoding/json writes it.
func TestAppendString_every_byte_at_every_offset(t *testing.T) {
	t.Parallel()
	specials := []string{"\u2028", "\u2029", "é", "世", "\xe2\x80", "\xf0\x9f\x98\x80"}
	for b := range 256 {
		specials = append(specials, string([]byte{byte(b)}))
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 24} {
		for pos := 0; pos <= n; pos++ {
			for _, sp := range specials {
				s := strings.Repeat("a", pos) + sp + strings.Repeat("z", n-pos)
				want, _ := json.Marshal(s)
				if got := AppendString(nil, s); !bytes.Equal(got, want) {
					t.Fatalf("%q: got %s, want %s", s, got, want)
				}
			}
		}
	}
}

// checkSame fails unless AppendValue writes v as json.Marshal does, and
// fails exactly when it fails.
func checkSame(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := AppendValue([]byte("prefix"), v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%#v: error %v, Marshal's %v", v, err, wantErr)
	}
	if err == nil && string(got) != "prefix"+string(want) {
		t.Fatalf("%#v:\n got %s\nwant prefix%s", v, got, want)
	}
}

func TestAppendValue_matches_Marshal(t *testing.T) {
	t.Parallel()
	many := map[string]any{}
	for i := range 50 {
		many[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('0'+i/26))] = json.Number("1")
	}
	for _, v := range []any{
		nil, true, false, "", "a<b>&c\u2028\xff", json.Number("0"), json.Number("-1.5e+10"), json.Number(""),
		json.Number("01"), json.Number("1."), json.Number("abc"), json.Number("-"), json.Number("1e"), json.Number("2E-3"),
		int64(-9223372036854775808), int64(42), 3.0, 1e21, 1e-7, 0.1, math.NaN(), math.Inf(1), 7, uint8(3),
		map[string]any(nil), map[string]any{}, []any(nil), []any{}, many,
		map[string]any{"b": 1.5, "a": []any{nil, "x", map[string]any{"z": true, "": json.Number("3")}}, "é": int64(2), "A": []string{"s"}},
		map[string]any{"labels": map[string]string{"app": "x"}, "raw": json.RawMessage(` {"a" : 1} `), "bad": json.Number("x")},
		[]any{map[string]any{"f": math.Inf(-1)}},
	} {
		checkSame(t, v)
	}
}

// FuzzAppendValue: any JSON document, decoded as the REST layer decodes it
// (numbers as json.Number) and as encoding/json does by default (float64),
// encodes as json.Marshal encodes it.
func FuzzAppendValue(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x\u2028<"],"c":{"d":-0.5e3}}`, `[]`, `"\ud800"`, `{"":{"":[{}]}}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			checkSame(t, v)
		}
		var w any
		if json.Unmarshal(data, &w) == nil {
			checkSame(t, w)
		}
	})
}

// BenchmarkAppendValue encodes a decoded object of the environments
// example, against json.Marshal.
func BenchmarkAppendValue(b *testing.B) {
	dec := json.NewDecoder(strings.NewReader(`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"obj-1234","namespace":"default","uid":"7d3c2a8e-1f2b-4c5d-9e8f-0a1b2c3d4e5f","resourceVersion":"12345","generation":1,"creationTimestamp":"2026-11-26T05:20:35Z","labels":{"app":"load","team":"payments","managed-by":"annex"}},"spec":{"owners":["payments-team"],"tier":"dev","replicas":2,"region":"eu-west-1"},"status":{"phase":"Pending"}}`))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		b.Fatal(err)
	}
	b.Run("jsonenc", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = AppendValue(buf[:0], obj)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(obj)
		}
	})
}
