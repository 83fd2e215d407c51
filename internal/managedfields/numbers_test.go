package managedfields

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestJSONNumbersMatchesARoundTrip checks jsonNumbers against what a JSON
// encode and a decode with UseNumber make of a merged value.
func TestJSONNumbersMatchesARoundTrip(t *testing.T) {
	v := map[string]any{
		"ints":   []any{int64(0), int64(-7), int64(math.MaxInt64), int64(math.MinInt64)},
		"floats": []any{0.5, 1e21, 1e20, 0.000001, 1e-7, -2.5e-300, 123456789.125, math.SmallestNonzeroFloat64},
		"nested": map[string]any{"s": "x<y>&", "b": true, "n": nil, "l": []any{map[string]any{"k": int64(1)}}},
	}
	got, err := jsonNumbers(v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var want map[string]any
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jsonNumbers:\n got %v\nwant %v", got, want)
	}
	if _, err := jsonNumbers([]any{}); err == nil {
		t.Error("a list taken for an object")
	}
}
