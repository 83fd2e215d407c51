package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/annexapi/annex/storage"
)

func TestPrepareCreate(t *testing.T) {
	const uid, now = "u-1", "2024-01-02T03:04:05Z"
	cases := []struct {
		name    string
		in      string
		want    string
		wantErr error
	}{
		{name: "no_metadata", in: `{"kind":"X"}`,
			want: `{"kind":"X","metadata":{"uid":"u-1","resourceVersion":"7","creationTimestamp":"2024-01-02T03:04:05Z"}}`},
		{name: "empty_object", in: `{}`,
			want: `{"metadata":{"uid":"u-1","resourceVersion":"7","creationTimestamp":"2024-01-02T03:04:05Z"}}`},
		{name: "empty_metadata", in: `{"metadata":{},"spec":1}`,
			want: `{"metadata":{"uid":"u-1","resourceVersion":"7","creationTimestamp":"2024-01-02T03:04:05Z"},"spec":1}`},
		{name: "null_metadata", in: `{"metadata":null}`,
			want: `{"metadata":{"uid":"u-1","resourceVersion":"7","creationTimestamp":"2024-01-02T03:04:05Z"}}`},
		{name: "keeps_order_and_compacts", in: "{ \"a\" : [1, 2],\n \"metadata\": {\"name\": \"n\", \"resourceVersion\": \"\", \"uid\": \"keep\"}, \"z\": {}}",
			want: `{"a":[1,2],"metadata":{"name":"n","resourceVersion":"7","uid":"keep","creationTimestamp":"2024-01-02T03:04:05Z"},"z":{}}`},
		{name: "null_fields_filled", in: `{"metadata":{"uid":null,"creationTimestamp":null,"resourceVersion":null}}`,
			want: `{"metadata":{"uid":"u-1","creationTimestamp":"2024-01-02T03:04:05Z","resourceVersion":"7"}}`},
		{name: "escaped_key", in: `{"metad\u0061ta":{"name":"x"}}`,
			want: `{"metad\u0061ta":{"name":"x","uid":"u-1","resourceVersion":"7","creationTimestamp":"2024-01-02T03:04:05Z"}}`},
		{name: "rv_set", in: `{"metadata":{"resourceVersion":"3"}}`, wantErr: storage.ErrResourceVersionSetOnCreate},
		{name: "array", in: `[1]`, wantErr: storage.ErrInvalidObject},
		{name: "not_json", in: `{"a":`, wantErr: storage.ErrInvalidObject},
		{name: "metadata_string", in: `{"metadata":"x"}`, wantErr: storage.ErrInvalidObject},
		{name: "labels_wrong_type", in: `{"metadata":{"labels":[1]}}`, wantErr: storage.ErrInvalidObject},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, m, err := PrepareCreate([]byte(tc.in), 7, uid, now)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got  %s\nwant %s", out, tc.want)
			}
			if m.ResourceVersion != "7" || m.UID == "" || m.CreationTimestamp != now {
				t.Fatalf("meta = %+v", m)
			}
		})
	}
}

func TestSetResourceVersion(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{name: "replace", in: `{"metadata":{"resourceVersion":"3","name":"a"}}`, want: `{"metadata":{"resourceVersion":"12","name":"a"}}`},
		{name: "add", in: `{"metadata":{"name":"a"},"x":"}"}`, want: `{"metadata":{"name":"a","resourceVersion":"12"},"x":"}"}`},
		{name: "does_not_fill_uid", in: `{}`, want: `{"metadata":{"resourceVersion":"12"}}`},
		{name: "duplicates_all_edited", in: `{"metadata":{"resourceVersion":"1","resourceVersion":"2"}}`, want: `{"metadata":{"resourceVersion":"12","resourceVersion":"12"}}`},
		{name: "nested_metadata_untouched", in: `{"spec":{"metadata":{"resourceVersion":"1"}},"metadata":{}}`, want: `{"spec":{"metadata":{"resourceVersion":"1"}},"metadata":{"resourceVersion":"12"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := SetResourceVersion([]byte(tc.in), 12)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got  %s\nwant %s", out, tc.want)
			}
		})
	}
}

func TestSpliceResourceVersion(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{name: "replace_in_place", in: `{"metadata":{"name":"a","resourceVersion":"3"}, "spec" : {}}`, want: `{"metadata":{"name":"a","resourceVersion":"12"}, "spec" : {}}`},
		{name: "add_when_missing", in: `{"metadata":{"name":"a"}}`, want: `{"metadata":{"name":"a","resourceVersion":"12"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := SpliceResourceVersion([]byte(tc.in), 12)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got  %s\nwant %s", out, tc.want)
			}
		})
	}
	if _, err := SpliceResourceVersion([]byte(`[]`), 12); !errors.Is(err, storage.ErrInvalidObject) {
		t.Fatalf("array: err = %v", err)
	}
}

func TestDecodeMeta(t *testing.T) {
	m, err := DecodeMeta([]byte(` {"spec":{"metadata":{"name":"no"}}, "metadata" : {"name":"a","namespace":"ns","labels":{"k":"v"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "a" || m.Namespace != "ns" || m.Labels.Get("k") != "v" {
		t.Fatalf("meta = %+v", m)
	}
	if _, err := DecodeMeta([]byte(`[]`)); !errors.Is(err, storage.ErrInvalidObject) {
		t.Fatalf("array: err = %v", err)
	}
}

func TestResourceVersionIndex(t *testing.T) {
	cases := []struct {
		name, in, want string
		ok             bool
	}{
		{name: "found", in: `{"spec":{"metadata":{"resourceVersion":"9"}},"metadata":{"name":"a","resourceVersion":"0"}}`, want: `"0"`, ok: true},
		{name: "absent", in: `{"metadata":{"name":"a"}}`},
		{name: "no_metadata", in: `{"a":1}`},
		{name: "duplicate", in: `{"metadata":{"resourceVersion":"1","resourceVersion":"2"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, e, ok := ResourceVersionIndex([]byte(tc.in))
			if ok != tc.ok || (ok && tc.in[s:e] != tc.want) {
				t.Fatalf("got %d:%d %v, want %q %v", s, e, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzPrepareCreate checks that PrepareCreate either fails with one of its
// documented errors or returns compact JSON equal to the input except for the
// three metadata fields it owns.
func FuzzPrepareCreate(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"metadata":{}}`, `{"metadata":null}`, `{"kind":"A","metadata":{"name":"x","labels":{"a":"b"}},"spec":[1,{"b":null}]}`,
		`{"metadata":{"resourceVersion":"1"}}`, `{"metadata":{"uid":5}}`, `[]`, `"x"`, `{"a":"\u0022}"}`,
		`{"metadata":{"resourceVersion":""},"metadata":{"name":"y"}}`, " {\"metad\\u0061ta\" : { } } ",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, m, err := PrepareCreate(data, 42, "uid-x", "2024-01-01T00:00:00Z")
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidObject) && !errors.Is(err, storage.ErrResourceVersionSetOnCreate) {
				t.Fatalf("unexpected error %v", err)
			}
			var v map[string]any
			if errors.Is(err, storage.ErrInvalidObject) && json.Unmarshal(data, &v) == nil {
				if md, ok := v["metadata"]; ok && (md == nil || isMap(md)) && metaShapeOK(data) {
					t.Fatalf("valid object rejected: %v", err)
				}
			}
			return
		}
		var c bytes.Buffer
		if err := json.Compact(&c, out); err != nil || !bytes.Equal(c.Bytes(), out) {
			t.Fatalf("output not compact JSON: %s (%v)", out, err)
		}
		if m.ResourceVersion != "42" {
			t.Fatalf("meta rv = %q", m.ResourceVersion)
		}
		var in, got map[string]any
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatalf("accepted input that is not an object: %v", err)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		gm, _ := got["metadata"].(map[string]any)
		if gm["resourceVersion"] != "42" || gm["uid"] == "" || gm["uid"] == nil || gm["creationTimestamp"] == nil {
			t.Fatalf("metadata = %v", gm)
		}
		im, _ := in["metadata"].(map[string]any)
		if im == nil {
			im = map[string]any{}
		}
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp"} {
			if v, ok := im[k]; ok && v != nil && v != "" {
				if !reflect.DeepEqual(gm[k], v) && k != "resourceVersion" {
					t.Fatalf("%s changed from %v to %v", k, v, gm[k])
				}
			}
			delete(im, k)
			delete(gm, k)
		}
		if !reflect.DeepEqual(im, gm) {
			t.Fatalf("other metadata changed: %v -> %v", im, gm)
		}
		delete(in, "metadata")
		delete(got, "metadata")
		if !reflect.DeepEqual(in, got) {
			t.Fatalf("object changed: %v -> %v", in, got)
		}
	})
}

func isMap(v any) bool { _, ok := v.(map[string]any); return ok }

// metaShapeOK reports whether the metadata decodes into Meta (the other
// reason PrepareCreate may reject a JSON object).
func metaShapeOK(data []byte) bool {
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	b, _ := json.Marshal(doc.Metadata)
	var m storage.Meta
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	// Case-insensitive member names make Meta accept what exact matching
	// would not; stay conservative.
	for k := range doc.Metadata {
		switch k {
		case "name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "labels":
		default:
			return false
		}
	}
	return true
}
