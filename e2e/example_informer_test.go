package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// TestWatchListInformerAgainstTheExample runs a dynamic informer with
// client-go's WatchListClient on against the environments example binary
// (standalone, its own kubeconfig): it syncs through a watch-list request
// (sendInitialEvents=true), never a plain list, then sees a later create.
func TestWatchListInformerAgainstTheExample(t *testing.T) {
	clientGates.watchList.Store(true)
	t.Cleanup(func() { clientGates.watchList.Store(false) })
	_, kubeconfig, logs := runExample(t, buildEnvironments(t), "environments")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	log := &requestLog{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{next: rt, log: log} })
	s := &server{kubeconfig: kubeconfig, cfg: cfg, log: log}

	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	envs := dc.Resource(gvr).Namespace("team-a")
	ctx := context.Background()
	if _, err := envs.Create(ctx, newEnvironment("team-a", "before", "alice"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	inf := startInformer(t, s, "dynamic", rec)
	if got := storeNames(inf); got != "before" {
		t.Fatalf("synced store = %q", got)
	}
	if n := log.count("sendInitialEvents=true", "watch=true"); n == 0 {
		t.Fatalf("no watch-list request was sent; requests: %v", log.urls)
	}
	if n := log.count("GET /apis/" + group + "/" + version + "/namespaces/team-a/" + plural + "?limit="); n != 0 {
		t.Fatalf("the informer fell back to a plain list (%d requests): %v", n, log.urls)
	}
	if _, err := envs.Create(ctx, newEnvironment("team-a", "after", "bob"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the informer sees the later create", logs, func() bool { return storeNames(inf) == "after,before" })
}
