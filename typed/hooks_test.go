package typed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/annexapi/annex/field"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/typed"
)

type hookPolicy struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            hookSpec   `json:"spec"`
	Status          hookStatus `json:"status,omitempty"`
}

type hookSpec struct {
	RetentionDays int32             `json:"retentionDays,omitempty"`
	Schedule      string            `json:"schedule,omitempty"`
	Paused        bool              `json:"paused"`
	Targets       []hookTarget      `json:"targets,omitempty"`
	Small         int8              `json:"small,omitempty"`
	Count         uint32            `json:"count,omitempty"`
	Ratio         float32           `json:"ratio,omitempty"`
	Data          []byte            `json:"data,omitempty"`
	Port          typed.IntOrString `json:"port,omitempty"`
	Free          json.RawMessage   `json:"free,omitempty"`
}

type hookTarget struct {
	Name string `json:"name"`
}

type hookStatus struct {
	Phase       string     `json:"phase,omitempty"`
	LastRunTime *meta.Time `json:"lastRunTime,omitempty"`
}

func generic(t *testing.T, s string) rest.Object {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var obj rest.Object
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return obj
}

// TestPrepareChangesOnlyWhatItChanged runs typed Prepare hooks on objects
// holding what T cannot (a zero value omitempty drops, a null, fields T
// does not declare, preserved unknown subtrees, raw managedFields): the
// object after the hook is the object before with the hook's change, and
// nothing else.
func TestPrepareChangesOnlyWhatItChanged(t *testing.T) {
	t.Parallel()
	const base = `"apiVersion":"backup.example.com/v1","kind":"BackupPolicy","metadata":{"name":"p","namespace":"ns","labels":{"a":"1"}}`
	for _, c := range []struct {
		name     string
		hook     func(p *hookPolicy)
		in, want string
	}{{
		name: "untouched_zero_null_and_unknown_survive",
		hook: func(p *hookPolicy) { p.Status.Phase = "Pending" },
		in:   `{` + base + `,"spec":{"retentionDays":0,"schedule":null,"paused":false,"unknown":{"x":[1,2]},"free":{"any":"thing"}}}`,
		want: `{` + base + `,"spec":{"retentionDays":0,"schedule":null,"paused":false,"unknown":{"x":[1,2]},"free":{"any":"thing"}},"status":{"phase":"Pending"}}`,
	}, {
		name: "nothing_changed_changes_nothing",
		hook: func(*hookPolicy) {},
		in:   `{` + base + `,"spec":{"retentionDays":0,"paused":null,"port":"http","unknown":1}}`,
		want: `{` + base + `,"spec":{"retentionDays":0,"paused":null,"port":"http","unknown":1}}`,
	}, {
		name: "a_change_beside_unknown_fields",
		hook: func(p *hookPolicy) { p.Spec.RetentionDays = 7 },
		in:   `{` + base + `,"spec":{"retentionDays":0,"unknown":"kept"},"extra":{"top":true}}`,
		want: `{` + base + `,"spec":{"retentionDays":7,"unknown":"kept"},"extra":{"top":true}}`,
	}, {
		name: "set_to_zero_removes_an_omitempty_field",
		hook: func(p *hookPolicy) { p.Spec.Schedule = "" },
		in:   `{` + base + `,"spec":{"schedule":"0 * * * *","retentionDays":0}}`,
		want: `{` + base + `,"spec":{"retentionDays":0}}`,
	}, {
		name: "list_element_changed_in_place",
		hook: func(p *hookPolicy) { p.Spec.Targets[1].Name = "c" },
		in:   `{` + base + `,"spec":{"targets":[{"name":"a","note":1},{"name":"b","note":2}]}}`,
		want: `{` + base + `,"spec":{"targets":[{"name":"a","note":1},{"name":"c","note":2}]}}`,
	}, {
		name: "list_of_another_length_replaced",
		hook: func(p *hookPolicy) { p.Spec.Targets = append(p.Spec.Targets, hookTarget{Name: "z"}) },
		in:   `{` + base + `,"spec":{"targets":[{"name":"a","note":1}]}}`,
		want: `{` + base + `,"spec":{"targets":[{"name":"a"},{"name":"z"}]}}`,
	}, {
		name: "metadata_label_added",
		hook: func(p *hookPolicy) { p.Labels["b"] = "2" },
		in:   `{` + base + `,"spec":{"retentionDays":0}}`,
		want: `{"apiVersion":"backup.example.com/v1","kind":"BackupPolicy","metadata":{"name":"p","namespace":"ns","labels":{"a":"1","b":"2"}},"spec":{"retentionDays":0}}`,
	}, {
		name: "null_pointer_set",
		hook: func(p *hookPolicy) {
			tm := meta.NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
			p.Status.LastRunTime = &tm
		},
		in:   `{` + base + `,"spec":{},"status":{"lastRunTime":null,"phase":""}}`,
		want: `{` + base + `,"spec":{},"status":{"lastRunTime":"2024-05-01T12:00:00Z","phase":""}}`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := typed.Stored[hookPolicy]{Group: "backup.example.com", Version: "v1", Plural: "backuppolicies", Kind: "BackupPolicy", Namespaced: true,
				PrepareForCreate: func(_ context.Context, p *hookPolicy) { c.hook(p) },
				PrepareForUpdate: func(_ context.Context, p, _ *hookPolicy) { c.hook(p) },
			}.Resource()
			if err != nil {
				t.Fatal(err)
			}
			obj := generic(t, c.in)
			res.Strategy.PrepareForCreate(context.Background(), obj)
			if want := generic(t, c.want); !reflect.DeepEqual(obj, want) {
				got, _ := json.Marshal(obj)
				t.Errorf("PrepareForCreate\n got %s\nwant %s", got, c.want)
			}
			obj = generic(t, c.in)
			res.Strategy.PrepareForUpdate(context.Background(), obj, generic(t, c.in))
			if want := generic(t, c.want); !reflect.DeepEqual(obj, want) {
				got, _ := json.Marshal(obj)
				t.Errorf("PrepareForUpdate\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestPrepareKeepsRawManagedFields: the write path may hold managedFields
// as raw bytes; a hook that does not touch them leaves them so.
func TestPrepareKeepsRawManagedFields(t *testing.T) {
	t.Parallel()
	res, err := typed.Stored[hookPolicy]{Group: "backup.example.com", Version: "v1", Plural: "backuppolicies", Kind: "BackupPolicy",
		PrepareForCreate: func(_ context.Context, p *hookPolicy) { p.Spec.RetentionDays = 3 }}.Resource()
	if err != nil {
		t.Fatal(err)
	}
	obj := generic(t, `{"metadata":{"name":"p"},"spec":{}}`)
	raw := json.RawMessage(`[{"manager":"kubectl","operation":"Update"}]`)
	obj["metadata"].(map[string]any)["managedFields"] = raw
	res.Strategy.PrepareForCreate(context.Background(), obj)
	if got, ok := obj["metadata"].(map[string]any)["managedFields"].(json.RawMessage); !ok || !bytes.Equal(got, raw) {
		t.Errorf("managedFields: %#v", obj["metadata"].(map[string]any)["managedFields"])
	}
	if got := obj["spec"].(map[string]any)["retentionDays"]; got != json.Number("3") {
		t.Errorf("retentionDays: %#v", got)
	}
}

// TestUndecodableObjectIsRefused: with a typed hook set, an object T cannot
// hold fails validation with the schema's words, and the Prepare hook does
// not run on it.
func TestUndecodableObjectIsRefused(t *testing.T) {
	t.Parallel()
	ran := false
	res, err := typed.Stored[hookPolicy]{Group: "backup.example.com", Version: "v1", Plural: "backuppolicies", Kind: "BackupPolicy",
		PrepareForCreate: func(context.Context, *hookPolicy) { ran = true },
	}.Resource()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, spec string
		want       []meta.StatusCause
	}{
		{"bool_given_a_string", `{"paused":"yes"}`, []meta.StatusCause{{Type: "FieldValueTypeInvalid", Field: "spec.paused",
			Message: `Invalid value: "string": spec.paused in body must be of type boolean: "string"`}}},
		{"every_problem_listed", `{"paused":1,"schedule":true,"targets":[{"name":2}]}`, []meta.StatusCause{
			{Type: "FieldValueTypeInvalid", Field: "spec.paused", Message: `Invalid value: "integer": spec.paused in body must be of type boolean: "integer"`},
			{Type: "FieldValueTypeInvalid", Field: "spec.schedule", Message: `Invalid value: "boolean": spec.schedule in body must be of type string: "boolean"`},
			{Type: "FieldValueTypeInvalid", Field: "spec.targets[0].name", Message: `Invalid value: "integer": spec.targets[0].name in body must be of type string: "integer"`}}},
		{"int8_out_of_range", `{"small":300}`, []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.small",
			Message: `Invalid value: 300: spec.small in body should be less than or equal to 127`}}},
		{"uint_negative", `{"count":-1}`, []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.count",
			Message: `Invalid value: -1: spec.count in body should be greater than or equal to 0`}}},
		{"int_given_a_fraction", `{"retentionDays":1.5}`, []meta.StatusCause{{Type: "FieldValueTypeInvalid", Field: "spec.retentionDays",
			Message: `Invalid value: "number": spec.retentionDays in body must be of type integer: "number"`}}},
		{"float32_out_of_range", `{"ratio":1e39}`, []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.ratio",
			Message: `Invalid value: 1e39: spec.ratio in body should be less than or equal to 340282346638528860000000000000000000000`}}},
		{"bytes_not_base64", `{"data":"%%"}`, []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.data",
			Message: `Invalid value: "%%": spec.data in body must be of type byte: "%%"`}}},
		{"int_or_string_given_a_bool", `{"port":true}`, []meta.StatusCause{{Type: "FieldValueTypeInvalid", Field: "spec.port",
			Message: `Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`}}},
		{"int_or_string_beyond_int32", `{"port":3000000000}`, []meta.StatusCause{{Type: "FieldValueInvalid", Field: "spec.port",
			Message: `Invalid value: 3000000000: spec.port in body should be less than or equal to 2147483647`}}},
		{"time_not_rfc3339", `{}`, nil}, // the spec is fine; the status below is not
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := generic(t, `{"metadata":{"name":"p"},"spec":`+c.spec+`}`)
			if c.name == "time_not_rfc3339" {
				obj["status"] = map[string]any{"lastRunTime": "yesterday"}
				c.want = []meta.StatusCause{{Type: "FieldValueInvalid", Field: "status.lastRunTime",
					Message: `Invalid value: "yesterday": status.lastRunTime in body must be of type date-time: "yesterday"`}}
			}
			ran = false
			res.Strategy.PrepareForCreate(context.Background(), obj)
			if ran {
				t.Error("the Prepare hook ran on an object that does not decode")
			}
			if got := res.Strategy.ValidateCreate(context.Background(), obj).Causes(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("ValidateCreate\n got %+v\nwant %+v", got, c.want)
			}
			if got := res.Strategy.ValidateUpdate(context.Background(), obj, obj).Causes(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("ValidateUpdate\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestValidateHooksSeeT: the typed Validate hooks get the decoded objects.
func TestValidateHooksSeeT(t *testing.T) {
	t.Parallel()
	res, err := typed.Stored[hookPolicy]{Group: "backup.example.com", Version: "v1", Plural: "backuppolicies", Kind: "BackupPolicy",
		ValidateUpdate: func(_ context.Context, p, old *hookPolicy) field.ErrorList {
			if p.Spec.RetentionDays < old.Spec.RetentionDays {
				return field.ErrorList{field.Forbidden(field.NewPath("spec", "retentionDays"), "may not shrink")}
			}
			return nil
		}}.Resource()
	if err != nil {
		t.Fatal(err)
	}
	errs := res.Strategy.ValidateUpdate(context.Background(), generic(t, `{"spec":{"retentionDays":1}}`), generic(t, `{"spec":{"retentionDays":2}}`))
	if len(errs) != 1 || errs[0].Error() != "spec.retentionDays: Forbidden: may not shrink" {
		t.Errorf("got %v", errs)
	}
	if res.Strategy.ValidateStatusUpdate == nil || res.Strategy.ValidateCreate == nil {
		t.Error("with a typed hook set, every validation checks that objects decode")
	}
}

// TestStoredObjectThatDoesNotDecode: an update whose stored object T cannot
// hold skips the PrepareForUpdate hook and fails, never silently.
func TestStoredObjectThatDoesNotDecode(t *testing.T) {
	t.Parallel()
	ran := false
	res, err := typed.Stored[hookPolicy]{Group: "backup.example.com", Version: "v1", Plural: "backuppolicies", Kind: "BackupPolicy",
		PrepareForUpdate: func(context.Context, *hookPolicy, *hookPolicy) { ran = true }}.Resource()
	if err != nil {
		t.Fatal(err)
	}
	obj, old := generic(t, `{"spec":{"count":1}}`), generic(t, `{"spec":{"count":-1}}`)
	res.Strategy.PrepareForUpdate(context.Background(), obj, old)
	errs := res.Strategy.ValidateUpdate(context.Background(), obj, old)
	if ran || len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Errorf("hook ran: %v; errors: %v", ran, errs)
	}
}
