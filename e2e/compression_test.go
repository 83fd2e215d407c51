package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/annexapi/annex/internal/kubectltest"
)

// gzipSeen counts the responses the transport below it decompressed: those
// the server sent gzipped to a client that let Go's transport ask for gzip.
type gzipSeen struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (g gzipSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(r)
	if err == nil && resp.Uncompressed {
		g.n.Add(1)
	}
	return resp, err
}

// TestLargeListCompressed lists more than 128 KiB of Environments with
// client-go and kubectl as they come: both ask for gzip (Go's transport
// does), the server compresses as kube-apiserver does, and both read the
// whole list.
func TestLargeListCompressed(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	dc, err := dynamic.NewForConfig(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	envs := dc.Resource(gvr).Namespace("big")
	owner := strings.Repeat("o", 1500)
	const n = 120
	for i := range n {
		if _, err := envs.Create(ctx, newEnvironment("big", "env-"+strconv.Itoa(i), owner), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var seen atomic.Int64
	cfg := rest.CopyConfig(s.cfg)
	wrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return wrap(gzipSeen{next: rt, n: &seen}) }
	gc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := gc.Resource(gvr).Namespace("big").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n || seen.Load() != 1 {
		t.Fatalf("client-go: %d items, %d gzipped responses; want %d and 1", len(list.Items), seen.Load(), n)
	}
	if _, err := gc.Resource(gvr).Namespace("big").Get(ctx, "env-0", metav1.GetOptions{}); err != nil || seen.Load() != 1 {
		t.Fatalf("a small GET: %v, %d gzipped responses; want it plain", err, seen.Load())
	}

	k := newKubectl(t, s)
	out := k.MustRun("get", "environments", "-n", "big", "-o", "name")
	if got := strings.Count(out, "environment.platform.example.com/env-"); got != n {
		t.Fatalf("kubectl get -o name: %d environments, want %d", got, n)
	}
	kubectltest.WantContains(t, "kubectl get (Table)", k.MustRun("get", "environments", "-n", "big"), "NAME", "env-119")
}
