package field_test

import (
	"errors"
	"testing"
	"time"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/meta"
)

func TestPathString(t *testing.T) {
	t.Parallel()
	spec := field.NewPath("spec")
	tests := []struct {
		p    *field.Path
		want string
	}{
		{field.NewPath("metadata"), "metadata"},
		{field.NewPath("metadata", "labels"), "metadata.labels"},
		{spec.Child("containers").Index(0).Child("ports").Index(1), "spec.containers[0].ports[1]"},
		{field.NewPath("metadata").Child("labels").Key("app.kubernetes.io/name"), "metadata.labels[app.kubernetes.io/name]"},
		{spec.Child("template", "spec"), "spec.template.spec"},
		{field.NewPath("items").Index(2), "items[2]"},
		{nil, "<nil>"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	// Child does not change the path it extends.
	a := spec.Child("a")
	_ = spec.Child("b")
	if a.String() != "spec.a" || spec.String() != "spec" {
		t.Errorf("paths share state: %s, %s", a, spec)
	}
}

// TestErrorMessages: each constructor renders as k8s.io/apimachinery's
// field package does (messages copied from kube-apiserver's answers).
func TestErrorMessages(t *testing.T) {
	t.Parallel()
	p := field.NewPath("spec", "replicas")
	n := int64(3)
	var nilPtr *int64
	ts := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	tests := []struct {
		name string
		err  *field.Error
		want string
		typ  meta.CauseType
	}{
		{"invalid_int64", field.Invalid(p, int64(-1), "must be greater than or equal to 0"), "spec.replicas: Invalid value: -1: must be greater than or equal to 0", "FieldValueInvalid"},
		{"invalid_string", field.Invalid(p, "x", "must be a number"), `spec.replicas: Invalid value: "x": must be a number`, "FieldValueInvalid"},
		{"invalid_pointer", field.Invalid(p, &n, "odd"), "spec.replicas: Invalid value: 3: odd", "FieldValueInvalid"},
		{"invalid_nil_pointer", field.Invalid(p, nilPtr, "required"), `spec.replicas: Invalid value: "null": required`, "FieldValueInvalid"},
		{"invalid_nil", field.Invalid(p, nil, "required"), `spec.replicas: Invalid value: "null": required`, "FieldValueInvalid"},
		{"invalid_uint64_as_go_syntax", field.Invalid(p, uint64(0), "must be specified"), "spec.replicas: Invalid value: 0x0: must be specified", "FieldValueInvalid"},
		{"invalid_stringer", field.Invalid(p, ts, "field is immutable"), "spec.replicas: Invalid value: 2001-02-03 04:05:06 +0000 UTC: field is immutable", "FieldValueInvalid"},
		{"invalid_slice", field.Invalid(p, []string{"a"}, "bad"), `spec.replicas: Invalid value: []string{"a"}: bad`, "FieldValueInvalid"},
		{"required", field.Required(p, ""), "spec.replicas: Required value", "FieldValueRequired"},
		{"required_detail", field.Required(p, "must be set for prod"), "spec.replicas: Required value: must be set for prod", "FieldValueRequired"},
		{"not_supported", field.NotSupported(p, "qa", []string{"dev", "staging", "prod"}), `spec.replicas: Unsupported value: "qa": supported values: "dev", "staging", "prod"`, "FieldValueNotSupported"},
		{"not_supported_no_list", field.NotSupported[string](p, "qa", nil), `spec.replicas: Unsupported value: "qa"`, "FieldValueNotSupported"},
		{"forbidden", field.Forbidden(p, "may not be set"), "spec.replicas: Forbidden: may not be set", "FieldValueForbidden"},
		{"too_long", field.TooLong(p, "xxxx", 3), "spec.replicas: Too long: may not be more than 3 bytes", "FieldValueTooLong"},
		{"too_long_unknown", field.TooLong(p, "xxxx", -1), "spec.replicas: Too long: value is too long", "FieldValueTooLong"},
		{"too_many", field.TooMany(p, 5, 3), "spec.replicas: Too many: 5: must have at most 3 items", "FieldValueTooMany"},
		{"too_many_unknown_count", field.TooMany(p, -1, 3), "spec.replicas: Too many: must have at most 3 items", "FieldValueTooMany"},
		{"duplicate", field.Duplicate(p, "a"), `spec.replicas: Duplicate value: "a"`, "FieldValueDuplicate"},
		{"not_found", field.NotFound(p, "cm"), `spec.replicas: Not found: "cm"`, "FieldValueNotFound"},
		{"type_invalid", field.TypeInvalid(p, "x", "must be an integer"), `spec.replicas: Invalid value: "x": must be an integer`, "FieldValueTypeInvalid"},
		{"internal", field.InternalError(p, errors.New("boom")), "spec.replicas: Internal error: boom", "InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q\nwant      %q", got, tt.want)
			}
			c := field.ErrorList{tt.err}.Causes()
			if len(c) != 1 || c[0].Type != tt.typ || c[0].Field != "spec.replicas" || "spec.replicas: "+c[0].Message != tt.want {
				t.Errorf("cause %+v", c)
			}
		})
	}
}

func TestErrorListStatus(t *testing.T) {
	t.Parallel()
	if s := (field.ErrorList{}).Status(meta.GroupKind{Group: "shop.example.com", Kind: "Widget"}, "w1"); s != nil {
		t.Errorf("empty list: %+v, want nil", s)
	}
	errs := field.ErrorList{
		field.Invalid(field.NewPath("spec", "replicas"), int64(-1), "must be greater than or equal to 0"),
		field.Required(field.NewPath("spec", "owner"), ""),
	}
	s := errs.Status(meta.GroupKind{Group: "shop.example.com", Kind: "Widget"}, "w1")
	want := `Widget.shop.example.com "w1" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.owner: Required value]`
	if s.Code != 422 || s.Reason != "Invalid" || s.Message != want || len(s.Details.Causes) != 2 {
		t.Errorf("Status = %d %s %q %+v\nwant message %q", s.Code, s.Reason, s.Message, s.Details, want)
	}
	if errs.Error() != "[spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.owner: Required value]" {
		t.Errorf("Error() = %q", errs.Error())
	}
}
