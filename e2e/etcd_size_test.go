// This file checks the object size limit on etcd, through a server: an
// object etcd would refuse is a 413 naming its size, never etcd's 500.

package e2e

import (
	"context"
	"errors"
	"net"
	"strings"
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

// TestEtcdTooLargeObjectThroughServer creates a 1.9 MB Environment, inside
// the 3 MiB body limit but over etcd's 1.5 MiB request limit, through a
// server on a real etcd: 413 RequestEntityTooLarge naming the size and the
// limit, and nothing stored. With the store's own limit off
// (MaxRequestBytes < 0), etcd's refusal is a 413 too, not a 500.
func TestEtcdTooLargeObjectThroughServer(t *testing.T) {
	url := binaries.Etcd(t)
	for _, tc := range []struct {
		name      string
		opts      etcd.Options
		wantInMsg string
	}{
		{name: "store_limit", opts: etcd.Options{}, wantInMsg: "limit is 1556480"},
		{name: "etcd_limit", opts: etcd.Options{MaxRequestBytes: -1}, wantInMsg: "request is too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.CompactionInterval = -1
			st, err := etcd.Config{Servers: []string{url}, Prefix: "/too-large-" + tc.name}.Open(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			b := annex.Builder{Name: "too-large", Resources: []rest.Resource{environment(nil)}, DataDir: t.TempDir(), Serving: annex.Serving{Listener: ln}, Storage: annex.Storage{Store: st}}
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
			c := dc.Resource(gvr).Namespace("big")
			eventually(t, 30*time.Second, "server serving lists", func() bool {
				_, err := c.List(ctx, metav1.ListOptions{})
				return err == nil
			})

			owner := strings.Repeat("x", 1900_000)
			_, err = c.Create(ctx, newEnvironment("big", "huge", owner), metav1.CreateOptions{})
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != 413 || !apierrors.IsRequestEntityTooLargeError(err) {
				t.Fatalf("create of a 1.9 MB object: %v, want 413 RequestEntityTooLarge", err)
			}
			msg := se.ErrStatus.Message
			if !strings.HasPrefix(msg, "Request entity too large: ") || !strings.Contains(msg, tc.wantInMsg) {
				t.Errorf("message %q, want Kubernetes' prefix and %q", msg, tc.wantInMsg)
			}
			if tc.name == "store_limit" && !strings.Contains(msg, "the object is 1900") {
				t.Errorf("message %q does not name the object's size", msg)
			}
			if _, err := c.Get(ctx, "huge", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after the refused create: %v, want 404", err)
			}
			// An update that grows a stored object over the limit is refused
			// the same way, and leaves it as it was.
			small, err := c.Create(ctx, newEnvironment("big", "grows", "o"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			grown := small.DeepCopy()
			grown.Object["spec"].(map[string]any)["owner"] = owner
			if _, err := c.Update(ctx, grown, metav1.UpdateOptions{}); !apierrors.IsRequestEntityTooLargeError(err) {
				t.Fatalf("update to 1.9 MB: %v, want 413", err)
			}
			got, err := c.Get(ctx, "grows", metav1.GetOptions{})
			if err != nil || got.GetResourceVersion() != small.GetResourceVersion() {
				t.Errorf("after the refused update: %v, resourceVersion %s, want %s", err, got.GetResourceVersion(), small.GetResourceVersion())
			}
		})
	}
}
