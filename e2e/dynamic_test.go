package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

func newEnvironment(ns, name, owner string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/" + version, "kind": "Environment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"owner": owner},
	}}
}

func TestDynamicClient(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	dc, err := dynamic.NewForConfig(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	envs := dc.Resource(gvr).Namespace("team-a")

	created, err := envs.Create(ctx, newEnvironment("team-a", "e0", "alice"), metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatal(err)
	}
	if tier, _, _ := unstructured.NestedString(created.Object, "spec", "tier"); tier != "dev" {
		t.Errorf("defaulted tier = %q, want dev", tier)
	}
	if created.GetGeneration() != 1 || created.GetResourceVersion() == "" {
		t.Errorf("generation %d, resourceVersion %q", created.GetGeneration(), created.GetResourceVersion())
	}

	t.Run("strict_unknown_field", func(t *testing.T) {
		bad := newEnvironment("team-a", "bad", "x")
		_ = unstructured.SetNestedField(bad.Object, "v", "spec", "colour")
		_, err := envs.Create(ctx, bad, metav1.CreateOptions{FieldValidation: "Strict"})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `strict decoding error: unknown field "spec.colour"`) {
			t.Fatalf("err = %v, want 400 strict decoding error", err)
		}
	})
	t.Run("dry_run_stores_nothing", func(t *testing.T) {
		obj, err := envs.Create(ctx, newEnvironment("team-a", "dry", "x"), metav1.CreateOptions{DryRun: []string{"All"}})
		if err != nil || obj.GetUID() == "" {
			t.Fatalf("dry run create = %v, %v", obj, err)
		}
		if _, err := envs.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("dry-run object stored: %v", err)
		}
	})
	t.Run("get", func(t *testing.T) {
		got, err := envs.Get(ctx, "e0", metav1.GetOptions{})
		if err != nil || got.GetUID() != created.GetUID() {
			t.Fatalf("get = %v, %v", got, err)
		}
	})
	t.Run("list_paged", func(t *testing.T) {
		for i := 1; i < 5; i++ {
			if _, err := envs.Create(ctx, newEnvironment("team-a", fmt.Sprintf("e%d", i), "bob"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		opts := metav1.ListOptions{Limit: 2}
		pages := 0
		for {
			l, err := envs.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range l.Items {
				names = append(names, it.GetName())
			}
			if l.GetContinue() == "" {
				break
			}
			opts.Continue = l.GetContinue()
		}
		if pages != 3 || strings.Join(names, ",") != "e0,e1,e2,e3,e4" {
			t.Fatalf("pages %d, names %v", pages, names)
		}
	})
	t.Run("update_bumps_generation_and_ignores_status", func(t *testing.T) {
		cur, err := envs.Get(ctx, "e0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(cur.Object, "prod", "spec", "tier")
		_ = unstructured.SetNestedField(cur.Object, "Hacked", "status", "phase")
		up, err := envs.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if up.GetGeneration() != 2 {
			t.Errorf("generation = %d, want 2", up.GetGeneration())
		}
		if _, found, _ := unstructured.NestedString(up.Object, "status", "phase"); found {
			t.Errorf("main resource update changed status: %v", up.Object["status"])
		}
		// A stale resourceVersion conflicts.
		_ = unstructured.SetNestedField(cur.Object, "dev", "spec", "tier")
		if _, err := envs.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("stale update err = %v, want Conflict", err)
		}
	})
	t.Run("status_subresource", func(t *testing.T) {
		cur, err := envs.Get(ctx, "e0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(cur.Object, "Ready", "status", "phase")
		_ = unstructured.SetNestedField(cur.Object, "staging", "spec", "tier")
		up, err := envs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		phase, _, _ := unstructured.NestedString(up.Object, "status", "phase")
		tier, _, _ := unstructured.NestedString(up.Object, "spec", "tier")
		if phase != "Ready" || tier != "prod" || up.GetGeneration() != 2 {
			t.Fatalf("status update: phase %q tier %q generation %d; want Ready, prod, 2", phase, tier, up.GetGeneration())
		}
		p, err := envs.Patch(ctx, "e0", types.MergePatchType, []byte(`{"status":{"phase":"Degraded"},"spec":{"owner":"mallory"}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		owner, _, _ := unstructured.NestedString(p.Object, "spec", "owner")
		phase, _, _ = unstructured.NestedString(p.Object, "status", "phase")
		if owner != "alice" || phase != "Degraded" {
			t.Fatalf("status patch: owner %q phase %q", owner, phase)
		}
	})
	t.Run("patch_merge_and_json", func(t *testing.T) {
		p, err := envs.Patch(ctx, "e1", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{FieldManager: "e2e"})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(p.Object, "spec", "replicas"); n != 3 {
			t.Errorf("merge patch replicas = %d", n)
		}
		p, err = envs.Patch(ctx, "e1", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/owner","value":"carol"}]`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if o, _, _ := unstructured.NestedString(p.Object, "spec", "owner"); o != "carol" {
			t.Errorf("json patch owner = %q", o)
		}
		// A resourceVersion in the patch is a precondition.
		_, err = envs.Patch(ctx, "e1", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"},"spec":{"replicas":4}}`), metav1.PatchOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("stale patch err = %v, want Conflict", err)
		}
		_, err = envs.Patch(ctx, "e1", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
		if !apierrors.IsUnsupportedMediaType(err) {
			t.Fatalf("strategic merge patch err = %v, want 415", err)
		}
	})
	t.Run("server_side_apply", func(t *testing.T) {
		cfg := newEnvironment("team-a", "applied", "alice")
		_ = unstructured.SetNestedField(cfg.Object, int64(2), "spec", "replicas")
		obj, err := envs.Apply(ctx, "applied", cfg, metav1.ApplyOptions{FieldManager: "ctrl-a"})
		if err != nil {
			t.Fatal(err)
		}
		mf := obj.GetManagedFields()
		if len(mf) != 1 || mf[0].Manager != "ctrl-a" || mf[0].Operation != metav1.ManagedFieldsOperationApply || mf[0].FieldsV1 == nil ||
			string(mf[0].FieldsV1.Raw) != `{"f:spec":{"f:owner":{},"f:replicas":{}}}` {
			t.Fatalf("managedFields after apply = %+v", mf)
		}
		other := newEnvironment("team-a", "applied", "alice")
		_ = unstructured.SetNestedField(other.Object, int64(5), "spec", "replicas")
		_, err = envs.Apply(ctx, "applied", other, metav1.ApplyOptions{FieldManager: "ctrl-b"})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `Apply failed with 1 conflict: conflict with "ctrl-a": .spec.replicas`) {
			t.Fatalf("second manager's apply: %v, want the conflict", err)
		}
		obj, err = envs.Apply(ctx, "applied", other, metav1.ApplyOptions{FieldManager: "ctrl-b", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); n != 5 {
			t.Fatalf("forced apply: replicas %d", n)
		}
		st := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/" + version, "kind": "Environment",
			"metadata": map[string]any{"name": "applied", "namespace": "team-a"}, "status": map[string]any{"phase": "Ready"}}}
		obj, err = envs.ApplyStatus(ctx, "applied", st, metav1.ApplyOptions{FieldManager: "ctrl-status"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range obj.GetManagedFields() {
			found = found || (e.Manager == "ctrl-status" && e.Subresource == "status")
		}
		if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "Ready" || !found {
			t.Fatalf("status apply: phase %q, managedFields %+v", phase, obj.GetManagedFields())
		}
	})
	t.Run("delete_and_deletecollection", func(t *testing.T) {
		if err := envs.Delete(ctx, "e4", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := envs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name!=e0"}); err != nil {
			t.Fatal(err)
		}
		l, err := envs.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 || l.Items[0].GetName() != "e0" {
			t.Fatalf("after deletes: %d items", len(l.Items))
		}
	})
}
