package authz

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// ssarProto encodes a SelfSubjectAccessReview as Kubernetes protobuf, as
// kubectl's typed client sends it (after the magic).
func ssarProto(fields map[protowire.Number]string) []byte {
	var attrs []byte
	for n := protowire.Number(1); n <= 7; n++ {
		if v, ok := fields[n]; ok {
			attrs = protowire.AppendTag(attrs, n, protowire.BytesType)
			attrs = protowire.AppendString(attrs, v)
		}
	}
	var spec []byte
	spec = protowire.AppendTag(spec, 1, protowire.BytesType)
	spec = protowire.AppendBytes(spec, attrs)
	var review []byte
	review = protowire.AppendTag(review, 2, protowire.BytesType)
	review = protowire.AppendBytes(review, spec)
	var unknown []byte
	unknown = protowire.AppendTag(unknown, 1, protowire.BytesType) // typeMeta, skipped
	unknown = protowire.AppendString(unknown, "")
	unknown = protowire.AppendTag(unknown, 2, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, review)
	unknown = protowire.AppendTag(unknown, 5, protowire.VarintType) // unknown field, skipped
	unknown = protowire.AppendVarint(unknown, 7)
	return unknown
}

func TestDecodeAccessReviewProto(t *testing.T) {
	t.Parallel()
	var r selfSubjectAccessReview
	err := decodeAccessReviewProto(ssarProto(map[protowire.Number]string{1: "default", 2: "list", 3: "platform.example.com", 5: "environments", 7: "x"}), &r)
	ra := r.Spec.ResourceAttributes
	if err != nil || ra == nil || *ra != (ResourceAttributes{Namespace: "default", Verb: "list", Group: "platform.example.com", Resource: "environments", Name: "x"}) {
		t.Fatalf("decoded %+v, %v", ra, err)
	}
	for name, body := range map[string][]byte{"not_a_review": []byte("\x12\x05{}"), "truncated": ssarProto(map[protowire.Number]string{2: "get"})[:5]} {
		if err := decodeAccessReviewProto(body, &selfSubjectAccessReview{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzDecodeAccessReviewProto(f *testing.F) {
	f.Add(ssarProto(map[protowire.Number]string{2: "get", 5: "widgets"}))
	f.Add([]byte("\x12\x02\x12\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = decodeAccessReviewProto(body, &selfSubjectAccessReview{})
	})
}
