package typed_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/typed"
)

// storageOf returns the converter the versions carry (on the storage
// version).
func storageOf(t *testing.T, rs []rest.Resource) rest.Converter {
	t.Helper()
	for _, r := range rs {
		if r.StorageVersion {
			return r.Conversion
		}
	}
	t.Fatal("no storage version")
	return nil
}

// TestVersionsConvert converts with the typed functions as the server
// does: kind, apiVersion and metadata are the server's; a function that
// carries ObjectMeta may change labels and annotations; what the input
// type does not hold crosses where the result has nothing.
func TestVersionsConvert(t *testing.T) {
	t.Parallel()
	annotate := func(in *BackupPolicy) (*BackupPolicyV1, error) {
		out, err := toV1(in)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations["converted"] = "yes"
		return out, err
	}
	bare := func(in *BackupPolicyV1) (*BackupPolicy, error) { // no ObjectMeta copied
		return &BackupPolicy{Spec: BackupPolicySpec{Retention: Retention{Days: in.Spec.RetentionDays}, Targets: in.Spec.Targets, Schedule: in.Spec.Schedule}}, nil
	}
	for _, c := range []struct {
		name     string
		toHub    func(*BackupPolicyV1) (*BackupPolicy, error)
		fromHub  func(*BackupPolicy) (*BackupPolicyV1, error)
		in, want string
		to       string
	}{{
		name: "v1_to_v2", toHub: toV2, fromHub: toV1, to: "backup.example.com/v2",
		in: `{"apiVersion":"backup.example.com/v1","kind":"BackupPolicy","metadata":{"name":"p","uid":"u","labels":{"a":"1"}},` +
			`"spec":{"retentionDays":3,"paused":false,"comment":null,"targets":["db"],"schedule":"0 3 * * *","options":{"compression":"gzip","vendorKnob":1}},"status":{"phase":"Done"}}`,
		want: `{"apiVersion":"backup.example.com/v2","kind":"BackupPolicy","metadata":{"name":"p","uid":"u","labels":{"a":"1"}},` +
			`"spec":{"retention":{"days":3},"paused":false,"comment":null,"targets":["db"],"schedule":"0 3 * * *","options":{"compression":"gzip","vendorKnob":1}},"status":{"phase":"Done"}}`,
	}, {
		name: "metadata_kept_when_not_copied", toHub: bare, fromHub: toV1, to: "backup.example.com/v2",
		in:   `{"apiVersion":"backup.example.com/v1","kind":"BackupPolicy","metadata":{"name":"p","uid":"u","annotations":{"b":"2"}},"spec":{"retentionDays":3,"targets":["db"],"schedule":"s"}}`,
		want: `{"apiVersion":"backup.example.com/v2","kind":"BackupPolicy","metadata":{"name":"p","uid":"u","annotations":{"b":"2"}},"spec":{"retention":{"days":3},"targets":["db"],"schedule":"s","options":{}},"status":{}}`,
	}, {
		name: "annotation_added", toHub: toV2, fromHub: annotate, to: "backup.example.com/v1",
		in:   `{"apiVersion":"backup.example.com/v2","kind":"BackupPolicy","metadata":{"name":"p","uid":"u"},"spec":{"retention":{"days":3},"suspend":true,"targets":["db"],"schedule":"s"}}`,
		want: `{"apiVersion":"backup.example.com/v1","kind":"BackupPolicy","metadata":{"name":"p","uid":"u","annotations":{"converted":"yes"}},"spec":{"retentionDays":3,"paused":true,"targets":["db"],"schedule":"s","options":{}},"status":{}}`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rs, err := typed.Versions[BackupPolicy]{Group: "backup.example.com", Plural: "backuppolicies", Kind: "BackupPolicy",
				Hub:    typed.Stored[BackupPolicy]{Version: "v2"},
				Spokes: []typed.Spoke[BackupPolicy]{typed.SpokeOf(typed.Stored[BackupPolicyV1]{Version: "v1"}, c.toHub, c.fromHub)},
			}.Resources()
			if err != nil {
				t.Fatal(err)
			}
			objs := []rest.Object{generic(t, c.in)}
			if err := storageOf(t, rs).Convert(context.Background(), objs, c.to); err != nil {
				t.Fatal(err)
			}
			if want := generic(t, c.want); !reflect.DeepEqual(objs[0], want) {
				got, _ := json.Marshal(objs[0])
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestVersionsConversionError(t *testing.T) {
	t.Parallel()
	fail := func(*BackupPolicyV1) (*BackupPolicy, error) { return nil, errors.New("no way") }
	rs, err := typed.Versions[BackupPolicy]{Group: "backup.example.com", Plural: "backuppolicies", Kind: "BackupPolicy",
		Hub:    typed.Stored[BackupPolicy]{Version: "v2"},
		Spokes: []typed.Spoke[BackupPolicy]{typed.SpokeOf(typed.Stored[BackupPolicyV1]{Version: "v1"}, fail, toV1)},
	}.Resources()
	if err != nil {
		t.Fatal(err)
	}
	objs := []rest.Object{generic(t, `{"apiVersion":"backup.example.com/v1","kind":"BackupPolicy","metadata":{"name":"p"}}`)}
	if err := storageOf(t, rs).Convert(context.Background(), objs, "backup.example.com/v2"); err == nil || err.Error() != "no way" {
		t.Errorf("got %v", err)
	}
	objs = []rest.Object{generic(t, `{"apiVersion":"backup.example.com/v2","kind":"BackupPolicy","metadata":{"name":"p"},"spec":{"suspend":"yes"}}`)}
	if err := storageOf(t, rs).Convert(context.Background(), objs, "backup.example.com/v1"); err == nil || !strings.Contains(err.Error(), "does not decode into typed_test.BackupPolicy") {
		t.Errorf("got %v", err)
	}
}

func TestVersionsRefusals(t *testing.T) {
	t.Parallel()
	v1 := typed.SpokeOf(typed.Stored[BackupPolicyV1]{Version: "v1"}, toV2, toV1)
	base := func() typed.Versions[BackupPolicy] {
		return typed.Versions[BackupPolicy]{Group: "backup.example.com", Plural: "backuppolicies", Kind: "BackupPolicy",
			Hub: typed.Stored[BackupPolicy]{Version: "v2"}, Spokes: []typed.Spoke[BackupPolicy]{v1}}
	}
	for _, c := range []struct {
		name string
		edit func(v *typed.Versions[BackupPolicy])
		want string
	}{
		{"no_hub_version", func(v *typed.Versions[BackupPolicy]) { v.Hub.Version = "" }, "the hub's Version is required"},
		{"unknown_storage_version", func(v *typed.Versions[BackupPolicy]) { v.StorageVersion = "v3" }, "StorageVersion v3 is not one of the versions"},
		{"zero_spoke", func(v *typed.Versions[BackupPolicy]) { v.Spokes = append(v.Spokes, typed.Spoke[BackupPolicy]{}) }, "Spokes[1] was not made by SpokeOf"},
		{"twice", func(v *typed.Versions[BackupPolicy]) { v.Spokes = append(v.Spokes, v1) }, "version v1 is declared twice"},
		{"missing_function", func(v *typed.Versions[BackupPolicy]) {
			v.Spokes = []typed.Spoke[BackupPolicy]{typed.SpokeOf(typed.Stored[BackupPolicyV1]{Version: "v1"}, toV2, nil)}
		}, "version v1 needs both conversion functions"},
		{"shared_field_differs", func(v *typed.Versions[BackupPolicy]) { v.Hub.Kind = "Other" }, "version v2 sets Kind differently; set it once, in Versions"},
	} {
		v := base()
		c.edit(&v)
		if _, err := v.Resources(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want …%s…", c.name, err, c.want)
		}
	}
	rs, err := base().Resources()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Version != "v2" || !rs[0].StorageVersion || rs[1].Version != "v1" || rs[1].StorageVersion || rs[1].Kind != "BackupPolicy" {
		t.Errorf("resources: %+v", rs)
	}
}
