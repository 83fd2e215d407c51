package audit

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestTopLevelField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, key, want string
	}{
		{"first", `{"metadata":{"name":"a"},"spec":{}}`, "metadata", `{"name":"a"}`},
		{"after_nested_metadata", `{"spec":{"template":{"metadata":{"name":"inner"}}}, "metadata" : {"name":"outer"} }`, "metadata", `{"name":"outer"}`},
		{"string_with_braces", `{"a":"}{\"metadata\":1","metadata":{"n":"x"}}`, "metadata", `{"n":"x"}`},
		{"scalar", `{"a":1,"b":true,"c":null}`, "c", `null`},
		{"missing", `{"a":1}`, "metadata", ``},
		{"array", `[{"metadata":{}}]`, "metadata", ``},
		{"truncated", `{"a":{"b":1`, "metadata", ``},
	}
	for _, c := range cases {
		if got := string(topLevelField([]byte(c.in), c.key)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// FuzzTopLevelField checks the scanner against encoding/json on valid
// objects.
func FuzzTopLevelField(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"x":[1,"]",{"y":"\""}]}}`))
	f.Add([]byte(`{"spec":{"metadata":{}},"metadata":{"uid":"u"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := topLevelField(b, "metadata")
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return
		}
		want, ok := m["metadata"]
		if !ok {
			if got != nil && bytes.Count(b, []byte(`"metadata"`)) < 2 {
				t.Fatalf("found %q where json finds nothing", got)
			}
			return
		}
		if bytes.Count(b, []byte(`"metadata"`)) > 1 {
			return // duplicate keys: json keeps the last, the scanner the first
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
