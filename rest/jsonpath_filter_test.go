package rest

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONPathFilters(t *testing.T) {
	t.Parallel()
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(`{"status":{"conditions":[{"type":"Ready","status":"True","n":3},{"type":"Denied","status":"False","n":5,"ok":true}]}}`))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		`.status.conditions[?(@.type == "Ready")].status`: `["True"]`,
		`.status.conditions[?(@.type=='Denied')].status`:  `["False"]`,
		`.status.conditions[?(@.type != "Ready")].type`:   `["Denied"]`,
		`.status.conditions[?(@.n > 4)].type`:             `["Denied"]`,
		`.status.conditions[?(@.n <= 3)].type`:            `["Ready"]`,
		`.status.conditions[?(@.ok)].type`:                `["Denied"]`,
		`.status.conditions[?(@.ok == true)].type`:        `["Denied"]`,
		`{.status.conditions[?(@.type == "a]b")].status}`: `null`,
	} {
		steps, err := parseJSONPath(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		got, _ := json.Marshal(evalPath(obj, steps))
		if string(got) != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	for _, bad := range []string{`.a[?(@.x ~ 1)]`, `.a[?(x == 1)]`, `.a[?(@.x == nope)]`} {
		if _, err := parseJSONPath(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}
