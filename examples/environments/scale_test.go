package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annexapi/annex/internal/kubectltest"
)

// TestScaleSubresource: kubectl scale (with and without --current-replicas),
// and the HorizontalPodAutoscaler's access pattern over raw HTTPS: GET the
// Scale, PUT it back with new replicas and its resourceVersion; a stale
// resourceVersion is a 409; both versions serve it.
func TestScaleSubresource(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	c := adminHTTP(t, dataDir)
	createEnvironment(t, c, url) // replicas 3

	kubectltest.WantContains(t, "scale", k.MustRun("scale", "environment", "checkout-staging", "--replicas=5"),
		"environment.platform.example.com/checkout-staging scaled")
	if got := k.MustRun("get", "environment", "checkout-staging", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); got != "5 2" {
		t.Errorf("after kubectl scale: replicas and generation %q, want \"5 2\"", got)
	}
	out, ok := k.Run("scale", "environment", "checkout-staging", "--current-replicas=3", "--replicas=1")
	if ok {
		t.Fatalf("scale with a wrong --current-replicas succeeded:\n%s", out)
	}
	kubectltest.WantContains(t, "scale precondition", out, "Expected replicas to be 3, was 5")

	// The autoscaler: GET the Scale, PUT it back changed.
	scaleURL := url + "/apis/platform.example.com/v1beta1/namespaces/default/environments/checkout-staging/scale"
	code, body := do(t, c, "GET", scaleURL, "", nil, nil)
	var s map[string]any
	if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil {
		t.Fatalf("get scale: %d %v %s", code, err, body)
	}
	if s["kind"] != "Scale" || s["apiVersion"] != "autoscaling/v1" || s["spec"].(map[string]any)["replicas"] != float64(5) ||
		s["metadata"].(map[string]any)["name"] != "checkout-staging" || s["metadata"].(map[string]any)["resourceVersion"] == nil {
		t.Fatalf("scale: %s", body)
	}
	stale, _ := json.Marshal(s)
	s["spec"].(map[string]any)["replicas"] = 7
	b, _ := json.Marshal(s)
	if code, body = do(t, c, "PUT", scaleURL, "application/json", b, nil); code != 200 || !strings.Contains(body, `"replicas":7`) {
		t.Fatalf("put scale: %d %s", code, body)
	}
	if code, body = do(t, c, "PUT", scaleURL, "application/json", stale, nil); code != http.StatusConflict ||
		!strings.Contains(body, "the object has been modified; please apply your changes to the latest version and try again") {
		t.Errorf("put with a stale resourceVersion: %d %s", code, body)
	}
	// The v1alpha1 scale reads the same replicas.
	code, body = do(t, c, "GET", strings.Replace(scaleURL, "v1beta1", "v1alpha1", 1), "", nil, nil)
	if code != 200 || !strings.Contains(body, `"spec":{"replicas":7}`) {
		t.Errorf("v1alpha1 scale: %d %s", code, body)
	}
	kubectltest.WantContains(t, "api-resources", k.MustRun("get", "--raw", "/apis/platform.example.com/v1beta1"),
		`"name":"environments/scale"`, `"group":"autoscaling"`, `"kind":"Scale"`)
}
