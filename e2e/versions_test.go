package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// TestInformersAtEachVersion runs a client-go dynamic informer at each
// version of the environments example (v1alpha1: spec.owner; v1beta1, the
// storage version: spec.owners) and writes at the other one: both stores
// follow every create, update and delete, each at its own version.
func TestInformersAtEachVersion(t *testing.T) {
	_, kubeconfig, logs := runExample(t, buildEnvironments(t), "environments")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	alpha := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: plural}
	beta := schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: plural}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer := func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		inf := dynamicinformer.NewFilteredDynamicInformer(dc, gvr, "team-a", 0, cache.Indexers{}, nil).Informer()
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("%s informer did not sync", gvr.Version)
		}
		return inf
	}
	alphaInf, betaInf := informer(alpha), informer(beta)
	// state renders a store: name=owner-fields, sorted.
	state := func(inf cache.SharedIndexInformer, field string) string {
		var out []string
		for _, o := range inf.GetStore().List() {
			u := o.(*unstructured.Unstructured)
			v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", field)
			out = append(out, fmt.Sprintf("%s@%s=%v", u.GetName(), u.GetAPIVersion(), v))
		}
		sortStrings(out)
		return strings.Join(out, ",")
	}
	want := func(what, a, b string) {
		t.Helper()
		waitUntil(t, 10*time.Second, what, logs, func() bool {
			return state(alphaInf, "owner") == a && state(betaInf, "owners") == b
		})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1beta1", "kind": "Environment",
		"metadata": map[string]any{"name": "shared", "namespace": "team-a"},
		"spec":     map[string]any{"owners": []any{"payments", "search"}, "tier": "dev"},
	}}
	if _, err := dc.Resource(beta).Namespace("team-a").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("a create at v1beta1",
		"shared@platform.example.com/v1alpha1=payments", "shared@platform.example.com/v1beta1=[payments search]")

	// An update at v1alpha1 of what the v1alpha1 informer holds.
	cur, err := dc.Resource(alpha).Namespace("team-a").Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, "platform", "spec", "owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Resource(alpha).Namespace("team-a").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("an update at v1alpha1",
		"shared@platform.example.com/v1alpha1=platform", "shared@platform.example.com/v1beta1=[platform]")

	if err := dc.Resource(beta).Namespace("team-a").Delete(ctx, "shared", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want("a delete at v1beta1", "", "")
}
