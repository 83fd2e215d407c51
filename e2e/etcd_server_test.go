package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage/etcd"
)

// TestEtcdExpiredContinueThroughServer pages a list through a server on
// etcd, compacts etcd under it, and continues: 410 Gone with a fresh
// inconsistent token in the Status, which continues from the same key. The
// server runs without the watch cache, which would serve the next page from
// its own history and never see etcd's compaction.
func TestEtcdExpiredContinueThroughServer(t *testing.T) {
	url := binaries.Etcd(t)
	st, err := etcd.Config{Servers: []string{url}, Prefix: "/expired"}.Open(etcd.Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := annex.Builder{Name: "expired", Resources: []rest.Resource{environment(nil)}, DataDir: t.TempDir(), Serving: annex.Serving{Listener: ln}, Storage: annex.Storage{Store: st, DisableWatchCache: true}}
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := dc.Resource(gvr).Namespace("pages")
	eventually(t, 30*time.Second, "server serving lists", func() bool {
		_, err := c.List(ctx, metav1.ListOptions{})
		return err == nil
	})
	for i := range 5 {
		if _, err := c.Create(ctx, newEnvironment("pages", fmt.Sprintf("e%d", i), "o"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := c.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil || len(first.Items) != 2 || first.GetContinue() == "" {
		t.Fatalf("first page: %v, %v", first, err)
	}
	// One more write, then compact everything before it: the first
	// page's revision is gone.
	if _, err := c.Create(ctx, newEnvironment("pages", "e5", "o"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := st.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	_, err = c.List(ctx, metav1.ListOptions{Limit: 2, Continue: first.GetContinue()})
	var se *apierrors.StatusError
	if !apierrors.IsResourceExpired(err) || !errors.As(err, &se) {
		t.Fatalf("continue after compaction: %v, want 410 Expired", err)
	}
	if se.ErrStatus.Code != 410 || se.ErrStatus.ListMeta.Continue == "" {
		t.Fatalf("410 status: code %d, continue %q; want 410 with an inconsistent continue token", se.ErrStatus.Code, se.ErrStatus.ListMeta.Continue)
	}
	rest, err := c.List(ctx, metav1.ListOptions{Limit: 10, Continue: se.ErrStatus.ListMeta.Continue})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range rest.Items {
		names = append(names, it.GetName())
	}
	if fmt.Sprint(names) != "[e2 e3 e4 e5]" {
		t.Errorf("inconsistent continuation = %v, want [e2 e3 e4 e5] (from the same key, at the latest revision)", names)
	}
}
