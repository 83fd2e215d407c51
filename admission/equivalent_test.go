package admission_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/annexapi/annex/admission"
)

// atTwoVersions is a widget request at v1beta1 of a resource served at v1
// and v1beta1, whose conversion moves spec.size (v1) to spec.replicas
// (v1beta1).
func atTwoVersions() *admission.Attributes {
	a := request("CREATE", "prod", "w", "", map[string]any{})
	a.Version = "v1beta1"
	a.Object["apiVersion"] = "example.annex.dev/v1beta1"
	a.Object["spec"] = map[string]any{"replicas": 3}
	a.Versions = []string{"v1", "v1beta1"}
	a.Convert = func(_ context.Context, obj map[string]any, version string) (map[string]any, error) {
		out := map[string]any{}
		for k, v := range obj {
			out[k] = v
		}
		spec, _ := obj["spec"].(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		mdc := map[string]any{}
		for k, v := range md {
			mdc[k] = v
		}
		out["metadata"] = mdc
		if version == "v1" {
			out["spec"] = map[string]any{"size": spec["replicas"]}
		} else {
			out["spec"] = map[string]any{"replicas": spec["size"]}
		}
		out["apiVersion"] = "example.annex.dev/" + version
		return out, nil
	}
	return a
}

// TestWebhookMatchPolicy: a webhook whose rules name v1 receives a v1beta1
// request converted to v1 (matchPolicy Equivalent, the default), with
// requestKind the v1beta1 one; its patch comes back converted; with
// matchPolicy Exact it is not called.
func TestWebhookMatchPolicy(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	wh := h.hook("label.example.dev", "/label") // rules: apiVersions [v1]
	hooks, err := admission.NewMutatingWebhooks([]admission.WebhookConfiguration{{Metadata: admission.ObjectMeta{Name: "cfg"},
		Webhooks: []admission.Webhook{wh}}}, admission.WebhookOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := atTwoVersions()
	if err := hooks.Mutate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	review := h.reviews[0]
	h.mu.Unlock()
	obj := review["object"].(map[string]any)
	if obj["apiVersion"] != "example.annex.dev/v1" || obj["spec"].(map[string]any)["size"] != float64(3) {
		t.Errorf("the webhook got %v, want the object at v1", obj)
	}
	if k := review["kind"].(map[string]any); k["version"] != "v1" {
		t.Errorf("kind %v, want v1", k)
	}
	if k := review["requestKind"].(map[string]any); k["version"] != "v1beta1" {
		t.Errorf("requestKind %v, want v1beta1", k)
	}
	if a.Object["apiVersion"] != "example.annex.dev/v1beta1" || fmt.Sprint(a.Object["spec"].(map[string]any)["replicas"]) != "3" ||
		a.Object["metadata"].(map[string]any)["labels"].(map[string]any)["patched"] != "x" {
		t.Errorf("after the mutation the request's object is %v", a.Object)
	}

	exact := wh
	exact.MatchPolicy = ptr("Exact")
	hooks, err = admission.NewValidatingWebhooks([]admission.WebhookConfiguration{{Metadata: admission.ObjectMeta{Name: "cfg"},
		Webhooks: []admission.Webhook{exact}}}, admission.WebhookOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := h.count("/label")
	if err := hooks.Validate(context.Background(), atTwoVersions()); err != nil {
		t.Fatal(err)
	}
	if h.count("/label") != before {
		t.Error("a webhook with matchPolicy Exact was called for another version")
	}
}
