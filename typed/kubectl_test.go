package typed_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

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
