package managedfields

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/annexapi/annex/meta"
)

// marshalIdentifier is identifier as it was written first, through
// json.Marshal: the reference the hand-written one must equal.
func marshalIdentifier(e meta.ManagedFieldsEntry) string {
	e.FieldsType, e.FieldsV1, e.Time = "", nil, nil
	if e.Operation == meta.ManagedFieldsOperationApply {
		e.APIVersion = ""
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestIdentifierMatchesMarshal(t *testing.T) {
	now := meta.NewTime(time.Unix(1700000000, 0))
	for _, tc := range []struct {
		name string
		e    meta.ManagedFieldsEntry
	}{
		{"update", meta.ManagedFieldsEntry{Manager: "kubectl-client-side-apply", Operation: meta.ManagedFieldsOperationUpdate, APIVersion: "platform.example.com/v1beta1"}},
		{"update_status", meta.ManagedFieldsEntry{Manager: "controller", Operation: meta.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "status"}},
		{"apply_drops_api_version", meta.ManagedFieldsEntry{Manager: "kubectl", Operation: meta.ManagedFieldsOperationApply, APIVersion: "v1", Subresource: "scale"}},
		{"fields_and_time_left_out", meta.ManagedFieldsEntry{Manager: "m", Operation: meta.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: meta.FieldsTypeV1, FieldsV1: json.RawMessage(`{"f:spec":{}}`)}},
		{"empty", meta.ManagedFieldsEntry{}},
		{"manager_only", meta.ManagedFieldsEntry{Manager: "m"}},
		{"subresource_only", meta.ManagedFieldsEntry{Subresource: "status"}},
		{"escapes", meta.ManagedFieldsEntry{Manager: "a\"b\\c<d>&e\n\u2028\x01", Operation: "Update", APIVersion: "v1"}},
		{"unicode_and_invalid_utf8", meta.ManagedFieldsEntry{Manager: "gestionnaire-é-日本\xff", Operation: "Update"}},
		{"long", meta.ManagedFieldsEntry{Manager: string(make([]byte, 300)), Operation: "Update", APIVersion: "group.example.com/v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := identifier(tc.e), marshalIdentifier(tc.e); got != want {
				t.Errorf("identifier = %s, want %s", got, want)
			}
		})
	}
}

func BenchmarkIdentifier(b *testing.B) {
	e := meta.ManagedFieldsEntry{Manager: "annexload", Operation: meta.ManagedFieldsOperationUpdate, APIVersion: "platform.example.com/v1beta1"}
	b.Run("hand_written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = identifier(e)
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = marshalIdentifier(e)
		}
	})
}
