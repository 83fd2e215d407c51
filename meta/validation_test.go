package meta

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	msgSubdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	msgLabel     = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	msg1035      = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
	msgQName     = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	msgValue     = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

func TestNameValidators(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name string
		fn   func(string) []string
		in   string
		want []string
	}{
		{"subdomain_ok", IsDNS1123Subdomain, "a.b-c.d1", nil},
		{"subdomain_upper", IsDNS1123Subdomain, "Foo", []string{msgSubdomain}},
		{"subdomain_empty", IsDNS1123Subdomain, "", []string{msgSubdomain}},
		{"subdomain_double_dot", IsDNS1123Subdomain, "a..b", []string{msgSubdomain}},
		{"subdomain_trailing_dash", IsDNS1123Subdomain, "a-", []string{msgSubdomain}},
		{"subdomain_253", IsDNS1123Subdomain, long(253), nil},
		{"subdomain_254", IsDNS1123Subdomain, long(254), []string{"must be no more than 253 characters"}},
		{"label_ok", IsDNS1123Label, "my-name", nil},
		{"label_dots", IsDNS1123Label, "a.b", []string{"must not contain dots"}},
		{"label_underscore", IsDNS1123Label, "a_b", []string{msgLabel}},
		{"label_64", IsDNS1123Label, long(64), []string{"must be no more than 63 characters"}},
		{"label_64_bad", IsDNS1123Label, "-" + long(63), []string{"must be no more than 63 characters", msgLabel}},
		{"dns1035_ok", IsDNS1035Label, "a1-b", nil},
		{"dns1035_digit_first", IsDNS1035Label, "1a", []string{msg1035}},
		{"dns1035_empty", IsDNS1035Label, "", []string{msg1035}},
		{"qname_ok", IsQualifiedName, "example.com/My_Name.1", nil},
		{"qname_plain", IsQualifiedName, "MyName", nil},
		{"qname_empty", IsQualifiedName, "", []string{"name part must be non-empty", msgQName}},
		{"qname_empty_prefix", IsQualifiedName, "/a", []string{"prefix part must be non-empty"}},
		{"qname_bad_prefix", IsQualifiedName, "Ex.com/a", []string{"prefix part " + msgSubdomain}},
		{"qname_empty_name", IsQualifiedName, "ex.com/", []string{"name part must be non-empty", msgQName}},
		{"qname_long_name", IsQualifiedName, long(64), []string{"name part must be no more than 63 characters"}},
		{"label_value_empty", IsValidLabelValue, "", nil},
		{"label_value_ok", IsValidLabelValue, "a_b.c-1", nil},
		{"label_value_bad", IsValidLabelValue, "a b", []string{msgValue}},
		{"label_value_long", IsValidLabelValue, long(64), []string{"must be no more than 63 characters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.fn(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestValidatePathSegmentName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		prefix bool
		want   []string
	}{
		{"ok", false, nil},
		{".", false, []string{"may not be '.'"}},
		{"..", false, []string{"may not be '..'"}},
		{"..", true, nil},
		{"a/b%c", false, []string{"may not contain '/'", "may not contain '%'"}},
		{"a/", true, []string{"may not contain '/'"}},
	}
	for _, tt := range tests {
		if got := ValidatePathSegmentName(tt.in, tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("ValidatePathSegmentName(%q, %v) = %q, want %q", tt.in, tt.prefix, got, tt.want)
		}
	}
}

func TestNameFuncsMaskTrailingDash(t *testing.T) {
	t.Parallel()
	if errs := NameIsDNSSubdomain("foo-", true); errs != nil {
		t.Errorf("generateName foo- rejected: %q", errs)
	}
	if errs := NameIsDNSSubdomain("foo-", false); errs == nil {
		t.Error("name foo- accepted")
	}
	if errs := NameIsDNSLabel("a.b-", true); !slices.Equal(errs, []string{"must not contain dots"}) {
		t.Errorf("got %q", errs)
	}
	if errs := NameIsDNS1035Label("1x-", true); errs == nil {
		t.Error("1x- accepted as DNS-1035 prefix")
	}
	// k8s replaces the last two characters with "a", so "A-" passes.
	if errs := NameIsDNSSubdomain("A-", true); errs != nil {
		t.Errorf("A- rejected: %q", errs)
	}
}

func TestGenerateName(t *testing.T) {
	t.Parallel()
	// Bytes 0..26 map straight onto the alphabet; 250 is rejected (>= 243).
	r := bytes.NewReader([]byte{0, 1, 250, 2, 26, 3, 9, 9, 9, 9})
	if got := GenerateName("foo-", r); got != "foo-bcd9f" {
		t.Errorf("GenerateName = %q, want foo-bcd9f", got)
	}
	base := strings.Repeat("x", 70)
	got := GenerateName(base, nil)
	if len(got) != 63 || !strings.HasPrefix(got, strings.Repeat("x", 58)) {
		t.Errorf("GenerateName(70 x) = %q (len %d)", got, len(got))
	}
	for _, c := range got[58:] {
		if !strings.ContainsRune(generatedAlphabet, c) {
			t.Errorf("character %q not in alphabet", c)
		}
	}
	// A reader that only yields rejected bytes must not loop forever.
	if got := GenerateName("a", bytes.NewReader(bytes.Repeat([]byte{255}, 1000))); len(got) != 6 {
		t.Errorf("got %q", got)
	}
}

func TestValidateObjectMeta(t *testing.T) {
	t.Parallel()
	bigAnnotations := map[string]string{"a": strings.Repeat("x", TotalAnnotationSizeLimitB)}
	tru := true
	tests := []struct {
		name       string
		meta       ObjectMeta
		namespaced bool
		nameFn     func(string, bool) []string
		want       []StatusCause
	}{
		{name: "valid", meta: ObjectMeta{Name: "foo", Namespace: "default", Labels: map[string]string{"a": "b"}}, namespaced: true},
		{name: "valid_generate_name", meta: ObjectMeta{Name: "foo-x1", GenerateName: "foo-", Namespace: "ns"}, namespaced: true},
		{name: "no_name", meta: ObjectMeta{Namespace: "ns"}, namespaced: true, want: []StatusCause{
			{CauseTypeFieldValueRequired, "Required value: name or generateName is required", "metadata.name"}}},
		{name: "bad_name", meta: ObjectMeta{Name: "Foo"}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "Foo": ` + msgSubdomain, "metadata.name"}}},
		{name: "bad_generate_name", meta: ObjectMeta{Name: "a", GenerateName: "Ab-"}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "Ab-": ` + msgSubdomain, "metadata.generateName"}}},
		{name: "path_segment_name_fn", meta: ObjectMeta{Name: ".."}, nameFn: ValidatePathSegmentName, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "..": may not be '..'`, "metadata.name"}}},
		{name: "namespace_required", meta: ObjectMeta{Name: "a"}, namespaced: true, want: []StatusCause{
			{CauseTypeFieldValueRequired, "Required value", "metadata.namespace"}}},
		{name: "namespace_invalid", meta: ObjectMeta{Name: "a", Namespace: "a.b"}, namespaced: true, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "a.b": must not contain dots`, "metadata.namespace"}}},
		{name: "namespace_forbidden", meta: ObjectMeta{Name: "a", Namespace: "ns"}, want: []StatusCause{
			{CauseTypeFieldValueForbidden, "Forbidden: not allowed on this type", "metadata.namespace"}}},
		{name: "negative_generation", meta: ObjectMeta{Name: "a", Generation: -1}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, "Invalid value: -1: must be greater than or equal to 0", "metadata.generation"}}},
		{name: "bad_label_key_and_value", meta: ObjectMeta{Name: "a", Labels: map[string]string{"-k": "v v"}}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "-k": ` + msgQName, "metadata.labels"},
			{CauseTypeFieldValueInvalid, `Invalid value: "v v": ` + msgValue, "metadata.labels"}}},
		{name: "annotation_key_lowercased", meta: ObjectMeta{Name: "a", Annotations: map[string]string{"Example.COM/Key": "x"}}},
		{name: "bad_annotation_key", meta: ObjectMeta{Name: "a", Annotations: map[string]string{"a/b/c": ""}}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`, "metadata.annotations"}}},
		{name: "annotations_too_long", meta: ObjectMeta{Name: "a", Annotations: bigAnnotations}, want: []StatusCause{
			{CauseTypeFieldValueTooLong, "Too long: may not be more than 262144 bytes", "metadata.annotations"}}},
		{name: "owner_reference_fields", meta: ObjectMeta{Name: "a", OwnerReferences: []OwnerReference{{APIVersion: "g/"}}}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "g/": version must not be empty`, "metadata.ownerReferences.apiVersion"},
			{CauseTypeFieldValueInvalid, `Invalid value: "": kind must not be empty`, "metadata.ownerReferences.kind"},
			{CauseTypeFieldValueInvalid, `Invalid value: "": name must not be empty`, "metadata.ownerReferences.name"},
			{CauseTypeFieldValueInvalid, `Invalid value: "": uid must not be empty`, "metadata.ownerReferences.uid"}}},
		{name: "owner_event_banned", meta: ObjectMeta{Name: "a", OwnerReferences: []OwnerReference{{APIVersion: "v1", Kind: "Event", Name: "e", UID: "u"}}}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: v1.OwnerReference{APIVersion:"v1", Kind:"Event", Name:"e", UID:"u", Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}: /v1, Kind=Event is disallowed from being an owner`, "metadata.ownerReferences"}}},
		{name: "two_controllers", meta: ObjectMeta{Name: "a", OwnerReferences: []OwnerReference{
			{APIVersion: "g/v", Kind: "K", Name: "x", UID: "1", Controller: &tru},
			{APIVersion: "g/v", Kind: "K", Name: "y", UID: "2", Controller: &tru}}}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: []v1.OwnerReference{v1.OwnerReference{APIVersion:"g/v", Kind:"K", Name:"x", UID:"1", Controller:(*bool)(true), BlockOwnerDeletion:(*bool)(nil)}, v1.OwnerReference{APIVersion:"g/v", Kind:"K", Name:"y", UID:"2", Controller:(*bool)(true), BlockOwnerDeletion:(*bool)(nil)}}: Only one reference can have Controller set to true. Found "true" in references for K/x and K/y`, "metadata.ownerReferences"}}},
		{name: "finalizers", meta: ObjectMeta{Name: "a", Finalizers: []string{"orphan", "foregroundDeletion", "bad name"}}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "bad name": ` + msgQName, "metadata.finalizers"},
			{CauseTypeFieldValueInvalid, `Invalid value: []string{"orphan", "foregroundDeletion", "bad name"}: finalizer orphan and foregroundDeletion cannot be both set`, "metadata.finalizers"}}},
		{name: "managed_fields", meta: ObjectMeta{Name: "a", ManagedFields: []ManagedFieldsEntry{
			{Manager: "ok", Operation: "Apply", FieldsType: "FieldsV1"},
			{Manager: "bad\x01", Operation: "Patch", FieldsType: "FieldsV2", Subresource: strings.Repeat("s", 257)}}}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "Patch": must be ` + "`Apply` or `Update`", "metadata.managedFields[1].operation"},
			{CauseTypeFieldValueInvalid, `Invalid value: "FieldsV2": must be ` + "`FieldsV1`", "metadata.managedFields[1].fieldsType"},
			{CauseTypeFieldValueInvalid, `Invalid value: "bad\x01": invalid character U+0001 (at position 3)`, "metadata.managedFields[1].manager"},
			{CauseTypeFieldValueTooLong, "Too long: may not be more than 256 bytes", "metadata.managedFields[1].subresource"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ValidateObjectMeta(&tt.meta, tt.namespaced, tt.nameFn)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestValidateObjectMetaInvalidStatus(t *testing.T) {
	t.Parallel()
	causes := ValidateObjectMeta(&ObjectMeta{Name: "Foo"}, false, nil)
	st := NewInvalid(GroupKind{Group: "wardle.example.com", Kind: "Flunder"}, "Foo", causes)
	want := `Flunder.wardle.example.com "Foo" is invalid: metadata.name: Invalid value: "Foo": ` + msgSubdomain
	if st.Message != want {
		t.Errorf("message\n got %s\nwant %s", st.Message, want)
	}
}

func TestValidateObjectMetaUpdate(t *testing.T) {
	t.Parallel()
	created := NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	deleted := NewTime(time.Date(2024, 5, 2, 12, 0, 0, 0, time.UTC))
	grace := int64(30)
	old := ObjectMeta{Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: "5", Generation: 2,
		CreationTimestamp: created, DeletionTimestamp: &deleted, Finalizers: []string{"x/a"}}
	tests := []struct {
		name   string
		mutate func(*ObjectMeta)
		want   []StatusCause
	}{
		{name: "unchanged", mutate: func(*ObjectMeta) {}},
		{name: "no_resource_version", mutate: func(m *ObjectMeta) { m.ResourceVersion = "" }, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "": must be specified for an update`, "metadata.resourceVersion"}}},
		{name: "generation_decremented", mutate: func(m *ObjectMeta) { m.Generation = 1 }, want: []StatusCause{
			{CauseTypeFieldValueInvalid, "Invalid value: 1: must not be decremented", "metadata.generation"}}},
		{name: "immutable", mutate: func(m *ObjectMeta) {
			m.Name, m.Namespace, m.UID = "b", "other", "u2"
			m.CreationTimestamp = NewTime(created.Add(time.Hour))
			m.DeletionTimestamp = nil
			m.DeletionGracePeriodSeconds = &grace
		}, want: []StatusCause{
			{CauseTypeFieldValueInvalid, `Invalid value: "b": field is immutable`, "metadata.name"},
			{CauseTypeFieldValueInvalid, `Invalid value: "other": field is immutable`, "metadata.namespace"},
			{CauseTypeFieldValueInvalid, `Invalid value: "u2": field is immutable`, "metadata.uid"},
			{CauseTypeFieldValueInvalid, "Invalid value: 2024-05-01 13:00:00 +0000 UTC: field is immutable", "metadata.creationTimestamp"},
			{CauseTypeFieldValueInvalid, "Invalid value: null: field is immutable", "metadata.deletionTimestamp"},
			{CauseTypeFieldValueInvalid, "Invalid value: 30: field is immutable", "metadata.deletionGracePeriodSeconds"}}},
		{name: "new_finalizer_while_deleting", mutate: func(m *ObjectMeta) { m.Finalizers = []string{"x/a", "x/c", "x/b"} }, want: []StatusCause{
			{CauseTypeFieldValueForbidden, `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"x/b", "x/c"}`, "metadata.finalizers"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := old
			m.Finalizers = slices.Clone(old.Finalizers)
			tt.mutate(&m)
			if got := ValidateObjectMetaUpdate(&m, &old); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}
