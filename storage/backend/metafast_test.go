package backend

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/annexapi/annex/storage"
)

// metaCases are metadata objects the fast path takes, and ones it must
// leave to encoding/json.
var metaCases = []string{
	`{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"b":"2","a":"1"}}`,
	`{"name":"a","name":"b","labels":{"k":"1","k":"2"},"managedFields":[{"manager":"x"}],"annotations":{"x":"y"}}`,
	`{"name":null,"labels":null,"deletionTimestamp":"2026-01-02T03:04:05Z"}`,
	`{"labels":{}}`,
	`{"Name":"folded"}`,
	`{"NAMESPACE":"folded","name":"a"}`,
	`{"name":"esc\u0061ped"}`,
	`{"labels":{"k":"v\"q"}}`,
	`{"name":5}`,
	`{"labels":{"k":1}}`,
	`{"labels":[1]}`,
	"{\"name\":\"bad \xff utf8\"}",
	`{"na\u006de":"escaped key"}`,
	`{}`,
}

// FuzzDecodeMetaFast checks the fast metadata decoder against
// encoding/json's (storage.DecodeMetadata): whenever it decodes, it decodes
// the same.
func FuzzDecodeMetaFast(f *testing.F) {
	for _, c := range metaCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, md []byte) {
		checkMetaFast(t, md)
	})
}

func TestDecodeMetaFast(t *testing.T) {
	taken := 0
	for _, c := range metaCases {
		if checkMetaFast(t, []byte(c)) {
			taken++
		}
	}
	if taken < 4 {
		t.Errorf("the fast path took %d of the cases, want the first four at least", taken)
	}
	for _, c := range metaCases[:4] {
		if _, ok := decodeMetaFast([]byte(c), false); !ok {
			t.Errorf("fast path refused %s", c)
		}
	}
	for _, c := range metaCases[4:13] {
		if _, ok := decodeMetaFast([]byte(c), false); ok {
			t.Errorf("fast path took %s", c)
		}
	}
}

// checkMetaFast compares the two decoders on md (valid JSON only, as
// DecodeMeta's contract says) and reports whether the fast one decoded it.
func checkMetaFast(t *testing.T, md []byte) bool {
	t.Helper()
	if !validJSON(md) {
		return false
	}
	fast, ok := decodeMetaFast(md, false)
	if !ok {
		return false
	}
	if aliased, ok := decodeMetaFast(md, true); !ok || aliased != fast {
		t.Fatalf("%s: fast path %+v, aliasing %+v (%v)", md, fast, aliased, ok)
	}
	slow, err := storage.DecodeMetadata(md)
	if err != nil {
		t.Fatalf("%s: fast path decoded %+v, encoding/json failed: %v", md, fast, err)
	}
	if fast != slow {
		t.Fatalf("%s: fast path %+v, encoding/json %+v", md, fast, slow)
	}
	return true
}

func validJSON(b []byte) bool { return json.Valid(b) }

// TestDecodeMetaOfAliases checks that DecodeMetaOf's strings are views into
// the bytes (no copy per cached object) and DecodeMeta's are not.
func TestDecodeMetaOfAliases(t *testing.T) {
	data := []byte(`{"kind":"K","metadata":{"name":"a","namespace":"ns","uid":"u-1","resourceVersion":"7","creationTimestamp":"2026-01-02T03:04:05Z"}}`)
	inside := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		start := uintptr(unsafe.Pointer(&data[0]))
		return p >= start && p < start+uintptr(len(data))
	}
	of, err := DecodeMetaOf(data)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := DecodeMeta(data)
	if err != nil {
		t.Fatal(err)
	}
	if of != copied {
		t.Fatalf("DecodeMetaOf %+v, DecodeMeta %+v", of, copied)
	}
	for _, s := range []string{of.Name, of.Namespace, of.UID, of.ResourceVersion, of.CreationTimestamp} {
		if !inside(s) {
			t.Errorf("DecodeMetaOf: %q is a copy, not a view into the data", s)
		}
	}
	for _, s := range []string{copied.Name, copied.Namespace, copied.UID, copied.ResourceVersion, copied.CreationTimestamp} {
		if inside(s) {
			t.Errorf("DecodeMeta: %q aliases the data", s)
		}
	}
}
