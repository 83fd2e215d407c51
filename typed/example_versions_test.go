package typed_test

import (
	"context"
	"fmt"
	"log"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/typed"
)

// A BackupPolicy at two versions, all in Go: v1 has spec.retentionDays and
// spec.paused, v2 (the hub, and the storage version) spec.retention.days
// and spec.suspend. Markers with commas are quoted, a field rule is a cel
// tag, a type rule a ValidationRules method, and the versions convert with
// two typed functions. typed/kubectl_test.go drives this server with
// kubectl.

// BackupPolicyV1 is backup.example.com/v1.
type BackupPolicyV1 struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            BackupPolicySpecV1 `json:"spec"`
	Status          BackupPolicyStatus `json:"status,omitempty"`
}

// BackupPolicySpecV1 is v1's spec.
type BackupPolicySpecV1 struct {
	RetentionDays int32         `json:"retentionDays,omitempty" annex:"minimum=1,default=7" doc:"Days to keep each backup."`
	Targets       []string      `json:"targets" annex:"minItems=1" cel:"rule='self.all(t, self.exists_one(u, u == t))',message='targets must be unique'" doc:"What to back up."`
	Paused        bool          `json:"paused,omitempty" doc:"No backups while true."`
	Schedule      string        `json:"schedule" annex:"pattern='^[0-9*/,-]+( [0-9*/,-]+){4}$'" doc:"When, in cron syntax: 0 3 * * 1,4."`
	Comment       *string       `json:"comment,omitempty" annex:"nullable" doc:"A note for people; null for none."`
	Options       BackupOptions `json:"options,omitempty" annex:"preserveUnknownFields" doc:"Options; the backup tool's own are kept as given."`
}

// BackupPolicy is backup.example.com/v2, the hub.
type BackupPolicy struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            BackupPolicySpec   `json:"spec"`
	Status          BackupPolicyStatus `json:"status,omitempty"`
}

// BackupPolicySpec is v2's spec: retentionDays became retention.days, and
// paused suspend.
type BackupPolicySpec struct {
	Retention Retention     `json:"retention,omitempty" annex:"default='{\"days\":7}'"`
	Targets   []string      `json:"targets" annex:"minItems=1" cel:"rule='self.all(t, self.exists_one(u, u == t))',message='targets must be unique'" doc:"What to back up."`
	Suspend   bool          `json:"suspend,omitempty" doc:"No backups while true."`
	Schedule  string        `json:"schedule" annex:"pattern='^[0-9*/,-]+( [0-9*/,-]+){4}$'" doc:"When, in cron syntax: 0 3 * * 1,4."`
	Comment   *string       `json:"comment,omitempty" annex:"nullable" doc:"A note for people; null for none."`
	Options   BackupOptions `json:"options,omitempty" annex:"preserveUnknownFields" doc:"Options; the backup tool's own are kept as given."`
}

// Retention says how long backups are kept.
type Retention struct {
	Days int32 `json:"days,omitempty" annex:"minimum=1,default=7" doc:"Days to keep each backup."`
}

// ValidationRules are Retention's CEL rules.
func (Retention) ValidationRules() []schema.ValidationRule {
	return []schema.ValidationRule{{Rule: "!has(self.days) || self.days <= 3650", Message: "backups are kept ten years at most"}}
}

// SchemaDescription is Retention's description.
func (Retention) SchemaDescription() string { return "How long backups are kept." }

// BackupOptions are the options annex knows; others are kept as given.
type BackupOptions struct {
	Compression string `json:"compression,omitempty" annex:"enum=none|gzip|zstd"`
}

// BackupPolicyStatus is the status of both versions.
type BackupPolicyStatus struct {
	Phase       string     `json:"phase,omitempty" annex:"enum=Pending|Running|Done"`
	LastRunTime *meta.Time `json:"lastRunTime,omitempty" doc:"When the last backup ran."`
}

// toV2 and toV1 are the conversions.
func toV2(in *BackupPolicyV1) (*BackupPolicy, error) {
	return &BackupPolicy{ObjectMeta: in.ObjectMeta, Status: in.Status, Spec: BackupPolicySpec{
		Retention: Retention{Days: in.Spec.RetentionDays}, Targets: in.Spec.Targets, Suspend: in.Spec.Paused,
		Schedule: in.Spec.Schedule, Comment: in.Spec.Comment, Options: in.Spec.Options,
	}}, nil
}

func toV1(in *BackupPolicy) (*BackupPolicyV1, error) {
	return &BackupPolicyV1{ObjectMeta: in.ObjectMeta, Status: in.Status, Spec: BackupPolicySpecV1{
		RetentionDays: in.Spec.Retention.Days, Targets: in.Spec.Targets, Paused: in.Spec.Suspend,
		Schedule: in.Spec.Schedule, Comment: in.Spec.Comment, Options: in.Spec.Options,
	}}, nil
}

// pending is the create hook of both versions: a new policy is Pending.
func pending(s *BackupPolicyStatus) { s.Phase = "Pending" }

func backupResources() ([]rest.Resource, error) {
	columns := func(retention string) []rest.PrinterColumn {
		return []rest.PrinterColumn{
			{Name: "Schedule", Type: "string", JSONPath: ".spec.schedule"},
			{Name: "Retention", Type: "integer", JSONPath: retention},
			{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
			{Name: "Last Run", Type: "date", JSONPath: ".status.lastRunTime"},
		}
	}
	return typed.Versions[BackupPolicy]{
		Group: "backup.example.com", Plural: "backuppolicies", Kind: "BackupPolicy", Namespaced: true, ShortNames: []string{"bp"},
		Hub: typed.Stored[BackupPolicy]{Version: "v2", StatusSubresource: true, PrinterColumns: columns(".spec.retention.days"),
			PrepareForCreate: func(_ context.Context, p *BackupPolicy) { pending(&p.Status) }},
		Spokes: []typed.Spoke[BackupPolicy]{typed.SpokeOf(typed.Stored[BackupPolicyV1]{Version: "v1", StatusSubresource: true,
			PrinterColumns:   columns(".spec.retentionDays"),
			PrepareForCreate: func(_ context.Context, p *BackupPolicyV1) { pending(&p.Status) }}, toV2, toV1)},
		StorageVersion: "v2",
	}.Resources()
}

func ExampleVersions() {
	resources, err := backupResources()
	if err != nil {
		log.Fatal(err)
	}
	srv, err := annextest.NewServer(annex.Builder{Name: "backup", Resources: resources})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	for _, r := range resources {
		fmt.Println(r.Group+"/"+r.Version, r.Kind, "storage:", r.StorageVersion)
	}
	// Output:
	// backup.example.com/v2 BackupPolicy storage: true
	// backup.example.com/v1 BackupPolicy storage: false
}
