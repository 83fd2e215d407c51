package typed

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

type fuzzInner struct {
	N    int               `json:"n,omitempty"`
	S    string            `json:"s"`
	P    *bool             `json:"p,omitempty"`
	List []fuzzInner       `json:"list,omitempty"`
	Map  map[string]string `json:"map,omitempty"`
}

type fuzzObject struct {
	A     int                  `json:"a,omitempty"`
	B     string               `json:"b"`
	In    fuzzInner            `json:"in"`
	Ptr   *fuzzInner           `json:"ptr,omitempty"`
	Items []fuzzInner          `json:"items"`
	ByKey map[string]fuzzInner `json:"byKey,omitempty"`
	Any   any                  `json:"any,omitempty"`
}

func genericOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	v, err := decodeValue(b)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := v.(map[string]any)
	return m
}

// FuzzApplyChanges checks applyChanges against the model: applied to the
// generic form of T's encoding before a change, the change gives the
// generic form of T's encoding after it, and a member T does not hold,
// added beside them, stays.
func FuzzApplyChanges(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":"x","in":{"s":"y","list":[{"s":"a"}]},"items":[]}`), []byte(`{"a":0,"b":"x","in":{"s":"z","list":[{"s":"b","n":2}]},"items":[{"s":""}]}`))
	f.Add([]byte(`{"byKey":{"k":{"s":"1"}},"ptr":{"s":"p"},"any":[1,{"x":2}]}`), []byte(`{"byKey":{"k":{"s":"2"},"l":{"s":""}},"any":{"x":3}}`))
	f.Add([]byte(`{"in":{"map":{"a":"1","b":"2"},"p":true}}`), []byte(`{"in":{"map":{"b":"3"},"p":false}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var x, y fuzzObject
		if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
			return
		}
		before, err1 := json.Marshal(x)
		after, err2 := json.Marshal(y)
		if err1 != nil || err2 != nil {
			return
		}
		obj := genericOf(t, before)
		obj["unknownMember"] = "kept"
		if err := applyChanges(obj, before, after); err != nil {
			t.Fatal(err)
		}
		if obj["unknownMember"] != "kept" {
			t.Fatalf("a member T does not hold was lost: %v", obj)
		}
		delete(obj, "unknownMember")
		if want := genericOf(t, after); !reflect.DeepEqual(obj, want) {
			got, _ := json.Marshal(obj)
			t.Fatalf("applied\n got %s\nwant %s", got, after)
		}
	})
}

func TestMembersAndElements(t *testing.T) {
	t.Parallel()
	ms, ok := members([]byte(`{"a":1,"b\u0022c":{"x":[1,2]},"d":"e,f"}`))
	if !ok || len(ms) != 3 || ms[1].key != `b"c` || !bytes.Equal(ms[1].val, []byte(`{"x":[1,2]}`)) || string(ms[2].val) != `"e,f"` {
		t.Errorf("members: %q %v", ms, ok)
	}
	es, ok := elements([]byte(`[{"a":[1]},"x",null]`))
	if !ok || len(es) != 3 || string(es[0]) != `{"a":[1]}` || string(es[2]) != "null" {
		t.Errorf("elements: %q %v", es, ok)
	}
	if _, ok := members([]byte(`{"a":1`)); ok {
		t.Error("a truncated object scanned")
	}
}
