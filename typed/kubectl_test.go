package typed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/internal/kubectltest"
)

// TestTypedServerWithKubectl drives the typed example server with kubectl:
// columns, explain from the doc tags, schema defaults and enum messages as
// kube's, a status patch, the status-aware hook refusing a spec change, and
// the computed resource.
func TestTypedServerWithKubectl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := widgetServer(dir, ln)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	k := kubectltest.New(t, srv.KubeconfigPath())
	deadline := time.Now().Add(10 * time.Second)
	for {
		if out, ok := k.Run("get", "--raw", "/readyz"); ok && strings.TrimSpace(out) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}

	k.MustRun("apply", "-f", k.WriteFile("w.yaml", "apiVersion: shop.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: default\nspec:\n  color: red\n"))
	kubectltest.WantContains(t, "get", k.MustRun("get", "widgets"), "NAME", "COLOR", "MADE", "w1", "red")
	kubectltest.WantContains(t, "default", k.MustRun("get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"), "1")
	kubectltest.WantContains(t, "explain", k.MustRun("explain", "widget.spec.color"), "Color of the widget.")

	out, ok := k.Run("apply", "-f", k.WriteFile("bad.yaml", "apiVersion: shop.example.com/v1\nkind: Widget\nmetadata:\n  name: w2\n  namespace: default\nspec:\n  color: purple\n  replicas: 11\n"))
	if ok {
		t.Fatalf("invalid widget accepted:\n%s", out)
	}
	kubectltest.WantContains(t, "invalid", out, `The Widget "w2" is invalid:`,
		`spec.color: Unsupported value: "purple": supported values: "red", "green", "blue"`,
		`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`)

	// A quantity takes a string or a number, and must look like one.
	k.MustRun("patch", "widget", "w1", "--type=merge", "-p", `{"spec":{"memory":"1Gi"}}`)
	k.MustRun("patch", "widget", "w1", "--type=merge", "-p", `{"spec":{"memory":512}}`)
	out, ok = k.Run("patch", "widget", "w1", "--type=merge", "-p", `{"spec":{"memory":"lots"}}`)
	if ok {
		t.Fatalf("a malformed quantity was accepted:\n%s", out)
	}
	kubectltest.WantContains(t, "quantity", out, `spec.memory: Invalid value: "lots": spec.memory in body should match`)
	k.MustRun("patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"made":3}}`)
	kubectltest.WantContains(t, "status", k.MustRun("get", "widgets"), "w1", "red", "3")
	out, ok = k.Run("patch", "widget", "w1", "--type=merge", "-p", `{"spec":{"color":"blue"}}`)
	if ok {
		t.Fatalf("spec change after widgets were made accepted:\n%s", out)
	}
	kubectltest.WantContains(t, "hook", out, `The Widget "w1" is invalid: spec.color: Forbidden: may not change once widgets are made`)
	k.MustRun("label", "widget", "w1", "team=shop") // metadata-only edits still pass the hook

	// The Prepare hook (a color label) changes what it changes, nothing
	// else: replicas: 0 (omitempty drops it in Go), finish: null and an
	// option the Go type does not declare stay as sent.
	k.MustRun("create", "-f", k.WriteFile("w3.yaml", "apiVersion: shop.example.com/v1\nkind: Widget\nmetadata:\n  name: w3\n  namespace: default\n"+
		"spec:\n  color: green\n  replicas: 0\n  finish: null\n  options:\n    glaze: matte\n    vendorKnob: 1\n"))
	kubectltest.WantContains(t, "round trip", k.MustRun("get", "widgets", "-l", "color=green", "-o", "json"),
		`"replicas": 0`, `"finish": null`, `"vendorKnob": 1`, `"glaze": "matte"`, `"name": "w3"`)

	if out := k.MustRun("auth", "can-i", "create", "widgets.shop.example.com"); strings.TrimSpace(out) != "yes" {
		t.Errorf("auth can-i: %q", out)
	}
	kubectltest.WantContains(t, "whoami", k.MustRun("auth", "whoami"), "admin", "system:masters")
	if v := k.MustRun("version"); !strings.Contains(v, "Server Version: v1.33.0+") || strings.Contains(v, "WARNING") {
		t.Errorf("kubectl version:\n%s", v)
	}

	kubectltest.WantContains(t, "inventory", k.MustRun("get", "inventory", "main", "-o", "jsonpath={.kind} {.apiVersion} {.widgets}"), "Inventory shop.example.com/v1 42")
	if out, ok := k.Run("get", "inventory", "other"); ok || !strings.Contains(out, `inventories.shop.example.com "other" not found`) {
		t.Errorf("missing inventory: %s", out)
	}
}

// TestVersionsWithKubectl drives the BackupPolicy server
// (example_versions_test.go), two typed versions, with kubectl: create at
// v1 and read at v2 and back, columns, explain (a meta.Time is a string),
// a status patch with an RFC 3339 time, the schema's own errors for a
// zero retention, a duplicate target, a rule on a type and a mistyped
// field (listed once), and a Prepare hook that leaves a zero value, a
// null and a preserved unknown field as they were sent.
func TestVersionsWithKubectl(t *testing.T) {
	t.Parallel()
	resources, err := backupResources()
	if err != nil {
		t.Fatal(err)
	}
	srv := annextest.Start(t, annex.Builder{Name: "backup", Resources: resources})
	k := kubectltest.New(t, srv.Kubeconfig)
	policy := func(version, name, spec string) string {
		return "apiVersion: backup.example.com/" + version + "\nkind: BackupPolicy\nmetadata:\n  name: " + name + "\n  namespace: default\nspec:\n" + spec
	}
	refused := func(what, manifest string, wants ...string) {
		t.Helper()
		out, ok := k.Run("create", "-f", k.WriteFile(what+".yaml", manifest))
		if ok {
			t.Errorf("%s: accepted:\n%s", what, out)
			return
		}
		kubectltest.WantContains(t, what, out, wants...)
	}

	// Created at v1, read at v2 (the storage version) and at v1.
	k.MustRun("apply", "-f", k.WriteFile("p1.yaml", policy("v1", "p1", "  targets: [db, files]\n  schedule: 0 3 * * 1,4\n  paused: true\n")))
	kubectltest.WantContains(t, "v2", k.MustRun("get", "backuppolicies.v2.backup.example.com", "p1", "-o",
		"jsonpath={.apiVersion} {.spec.retention.days} {.spec.suspend} {.spec.targets} {.status.phase}"),
		`backup.example.com/v2 7 true ["db","files"] Pending`)
	kubectltest.WantContains(t, "v1", k.MustRun("get", "backuppolicies.v1.backup.example.com", "p1", "-o",
		"jsonpath={.apiVersion} {.spec.retentionDays} {.spec.paused}"), "backup.example.com/v1 7 true")
	kubectltest.WantContains(t, "columns", k.MustRun("get", "bp"), "NAME", "SCHEDULE", "RETENTION", "PHASE", "LAST RUN", "p1", "0 3 * * 1,4", "7", "Pending")

	// meta.Time is a string, in explain and on the wire.
	kubectltest.WantContains(t, "explain status", k.MustRun("explain", "backuppolicies.status.lastRunTime"), "lastRunTime", "<string>", "When the last backup ran.")
	kubectltest.WantContains(t, "explain spec", k.MustRun("explain", "backuppolicies.spec"), "retention\t<Object>", "schedule\t<string> -required-", "How long backups are kept.")
	kubectltest.WantContains(t, "explain v1", k.MustRun("explain", "backuppolicies.spec.retentionDays", "--api-version=backup.example.com/v1"), "<integer>", "Days to keep each backup.")
	k.MustRun("patch", "bp", "p1", "--subresource=status", "--type=merge", "-p", `{"status":{"lastRunTime":"2024-05-01T12:00:00Z","phase":"Done"}}`)
	kubectltest.WantContains(t, "status patch", k.MustRun("get", "bp", "p1", "-o", "jsonpath={.status.lastRunTime} {.status.phase}"), "2024-05-01T12:00:00Z Done")
	out, ok := k.Run("patch", "bp", "p1", "--subresource=status", "--type=merge", "-p", `{"status":{"lastRunTime":"yesterday"}}`)
	if ok {
		t.Errorf("a malformed time was accepted:\n%s", out)
	}
	kubectltest.WantContains(t, "bad time", out, `status.lastRunTime: Invalid value: "yesterday": status.lastRunTime in body must be of type date-time: "yesterday"`)

	// The schema's errors, not dropped values.
	refused("zero_retention", policy("v1", "p0", "  retentionDays: 0\n  targets: [db]\n  schedule: 0 3 * * *\n"),
		`spec.retentionDays: Invalid value: 0: spec.retentionDays in body should be greater than or equal to 1`)
	refused("zero_retention_v2", policy("v2", "p0", "  retention: {days: 0}\n  targets: [db]\n  schedule: 0 3 * * *\n"),
		`spec.retention.days: Invalid value: 0: spec.retention.days in body should be greater than or equal to 1`)
	refused("duplicate_target", policy("v2", "p0", "  targets: [db, db]\n  schedule: 0 3 * * *\n"),
		`spec.targets: Invalid value: "array": targets must be unique`)
	refused("long_retention", policy("v2", "p0", "  retention: {days: 4000}\n  targets: [db]\n  schedule: 0 3 * * *\n"),
		`spec.retention: Invalid value: "object": backups are kept ten years at most`)
	refused("bad_schedule", policy("v1", "p0", "  targets: [db]\n  schedule: weekly\n"),
		`spec.schedule: Invalid value: "weekly": spec.schedule in body should match '^[0-9*/,-]+( [0-9*/,-]+){4}$'`)
	out, ok = k.Run("create", "-f", k.WriteFile("mistyped.yaml", policy("v2", "p0", "  suspend: \"yes\"\n  targets: [db]\n  schedule: 0 3 * * *\n")))
	const typeErr = `spec.suspend: Invalid value: "string": spec.suspend in body must be of type boolean: "string"`
	if ok || strings.Count(out, typeErr) != 1 {
		t.Errorf("mistyped field: want the schema's error once, got:\n%s", out)
	}

	// A Prepare hook (status.phase) changes what it changes, nothing else:
	// suspend: false (omitempty drops it in Go), comment: null and an
	// option the Go type does not declare stay as sent.
	k.MustRun("create", "-f", k.WriteFile("p2.yaml", policy("v2", "p2",
		"  suspend: false\n  comment: null\n  targets: [db]\n  schedule: 0 3 * * *\n  options:\n    compression: gzip\n    vendorKnob: {level: 3}\n")))
	var got struct {
		Spec   map[string]json.RawMessage `json:"spec"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	raw := k.MustRun("get", "bp", "p2", "-o", "json")
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(raw)); err != nil {
		t.Fatalf("%v:\n%s", err, raw)
	}
	if err := json.Unmarshal(compact.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, raw)
	}
	if string(got.Spec["suspend"]) != "false" || string(got.Spec["comment"]) != "null" ||
		string(got.Spec["options"]) != `{"compression":"gzip","vendorKnob":{"level":3}}` || got.Status.Phase != "Pending" {
		t.Errorf("after the Prepare hook, want suspend: false, comment: null, options.vendorKnob and phase Pending:\n%s", raw)
	}
	// The unknown option crosses to v1 too (its options keep unknown fields).
	kubectltest.WantContains(t, "v1 options", k.MustRun("get", "backuppolicies.v1.backup.example.com", "p2", "-o", "jsonpath={.spec.options.vendorKnob.level}"), "3")
}
