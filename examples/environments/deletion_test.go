package main

import (
	"bufio"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/internal/kubectltest"
)

// TestKubectlFinalizers walks an object with a finalizer through its
// deletion as kubectl and a controller see it: the delete leaves it with a
// deletionTimestamp, a new finalizer is refused with kube's message, other
// edits are allowed, the patch that removes the last finalizer deletes it,
// and a watch shows MODIFIED then DELETED; --cascade=orphan and foreground
// add the garbage collector's finalizers.
func TestKubectlFinalizers(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	env := func(name string, finalizers ...string) string {
		y := "apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata:\n  name: " + name + "\n  namespace: default\n"
		if len(finalizers) > 0 {
			y += "  finalizers: [" + strings.Join(finalizers, ", ") + "]\n"
		}
		return y + "spec:\n  owner: payments-team\n"
	}
	k.MustRun("create", "-f", k.WriteFile("fin.yaml", env("fin", "example.com/cleanup")))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch := k.Command(ctx, "get", "environments", "--watch-only", "--output-watch-events", "--no-headers", "-o", "custom-columns=EVENT:.type,NAME:.object.metadata.name")
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = watch.Wait() }()
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			events <- strings.Join(strings.Fields(sc.Text()), " ") // "MODIFIED fin"
		}
		close(events)
	}()
	// The watch is open once it sees a change: label the object until it does.
	next := func(what string) string {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("watch ended waiting for %s", what)
			}
			return e
		case <-ctx.Done():
			t.Fatalf("no watch event for %s", what)
		}
		return ""
	}
	for i := 0; ; i++ {
		k.MustRun("label", "environment", "fin", "--overwrite", "seen="+strings.Repeat("x", i+1))
		select {
		case e := <-events:
			if e != "MODIFIED fin" {
				t.Fatalf("first watch event %q", e)
			}
		case <-time.After(500 * time.Millisecond):
			continue
		}
		break
	}

	kubectltest.WantContains(t, "delete", k.MustRun("delete", "environment", "fin", "--wait=false"), `environment.platform.example.com "fin" deleted`)
	if got := k.MustRun("get", "environment", "fin", "-o", "jsonpath={.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds} {.metadata.finalizers}"); !strings.HasSuffix(got, ` 0 ["example.com/cleanup"]`) || len(got) < 20 {
		t.Errorf("after delete: %q, want a deletionTimestamp, grace period 0 and the finalizer", got)
	}
	if e := next("the deletion"); e != "MODIFIED fin" {
		t.Errorf("delete: watch event %q, want MODIFIED", e)
	}

	out2, ok := k.Run("patch", "environment", "fin", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/cleanup","example.com/late"]}}`)
	if ok {
		t.Fatalf("a finalizer was added while deleting:\n%s", out2)
	}
	kubectltest.WantContains(t, "new finalizer", out2, `The Environment "fin" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/late"}`)
	k.MustRun("label", "environment", "fin", "still=editable")
	if e := next("the label"); e != "MODIFIED fin" {
		t.Errorf("label while deleting: watch event %q, want MODIFIED", e)
	}

	k.MustRun("patch", "environment", "fin", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	if e := next("the last finalizer's removal"); e != "DELETED fin" {
		t.Errorf("finalizer removed: watch event %q, want DELETED", e)
	}
	if out, ok := k.Run("get", "environment", "fin"); ok || !strings.Contains(out, `environments.platform.example.com "fin" not found`) {
		t.Errorf("after the last finalizer: %s", out)
	}

	for cascade, want := range map[string]string{"orphan": `["orphan"]`, "foreground": `["foregroundDeletion"]`} {
		name := "cascade-" + cascade
		k.MustRun("create", "-f", k.WriteFile(name+".yaml", env(name)))
		k.MustRun("delete", "environment", name, "--cascade="+cascade, "--wait=false")
		if got := k.MustRun("get", "environment", name, "-o", "jsonpath={.metadata.finalizers}"); got != want {
			t.Errorf("--cascade=%s: finalizers %s, want %s", cascade, got, want)
		}
	}
	// Without finalizers, --cascade=background deletes at once.
	k.MustRun("create", "-f", k.WriteFile("plain.yaml", env("plain")))
	k.MustRun("delete", "environment", "plain", "--cascade=background", "--wait=false")
	if out, ok := k.Run("get", "environment", "plain"); ok {
		t.Errorf("a plain object survived its deletion:\n%s", out)
	}
}
