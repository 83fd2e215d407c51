// This file holds the backend benchmark: create, get, list and update
// through an annex server on bbolt and on etcd, printed side by side.

package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/storage/etcd"
)

// benchServer starts an in-process annex server (with the Builder's watch
// cache) on st and returns a dynamic client of the namespace "bench".
func benchServer(b *testing.B, st storage.Interface) dynamic.ResourceInterface {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bl := annex.Builder{Name: "bench", Resources: []rest.Resource{environment(nil)}, DataDir: b.TempDir(), Serving: annex.Serving{Listener: ln}, Storage: annex.Storage{Store: st}}
	srv, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.KubeconfigPath())
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100000, 100000
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c := dc.Resource(gvr).Namespace("bench")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.List(context.Background(), metav1.ListOptions{}); err == nil {
			return c
		} else if time.Now().After(deadline) {
			b.Fatalf("server not serving: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// benchBbolt opens a bbolt store without fsync, closed when b ends.
func benchBbolt(b *testing.B) storage.Interface {
	s, err := bbolt.Open(filepath.Join(b.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true, CompactionInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkBackends measures create, get, list (100 objects) and update
// through the server, on bbolt and on a single-node etcd on loopback (both
// without fsync: etcd runs with --unsafe-no-fsync, bbolt with
// UnsafeNoSync), and prints a table of the two side by side.
//
//	cd e2e && go test -run '^$' -bench BenchmarkBackends -benchtime 2s .
func BenchmarkBackends(b *testing.B) {
	url := binaries.Etcd(b)
	backends := []struct {
		name string
		open func(b *testing.B) storage.Interface
	}{
		{"bbolt", benchBbolt},
		{"etcd", func(b *testing.B) storage.Interface {
			s, err := etcd.Config{Servers: []string{url}, Prefix: fmt.Sprintf("/bench-%d", time.Now().UnixNano())}.Open(etcd.Options{CompactionInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	ops := []string{"create", "get", "list", "update"}
	results := map[string]map[string]time.Duration{}
	for _, be := range backends {
		results[be.name] = map[string]time.Duration{}
		b.Run(be.name, func(b *testing.B) {
			c := benchServer(b, be.open(b))
			ctx := context.Background()
			var last *unstructured.Unstructured
			for i := range 100 {
				o, err := c.Create(ctx, newEnvironment("bench", fmt.Sprintf("seed-%03d", i), "bench"), metav1.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				last = o
			}
			run := map[string]func(b *testing.B, i int){
				"create": func(b *testing.B, i int) {
					if _, err := c.Create(ctx, newEnvironment("bench", fmt.Sprintf("c-%d-%d", b.N, i), "bench"), metav1.CreateOptions{}); err != nil {
						b.Fatal(err)
					}
				},
				"get": func(b *testing.B, i int) {
					if _, err := c.Get(ctx, fmt.Sprintf("seed-%03d", i%100), metav1.GetOptions{}); err != nil {
						b.Fatal(err)
					}
				},
				"list": func(b *testing.B, i int) {
					if _, err := c.List(ctx, metav1.ListOptions{LabelSelector: "", Limit: 100}); err != nil {
						b.Fatal(err)
					}
				},
				"update": func(b *testing.B, i int) {
					_ = unstructured.SetNestedField(last.Object, fmt.Sprintf("owner-%d", i), "spec", "owner")
					o, err := c.Update(ctx, last, metav1.UpdateOptions{})
					if err != nil {
						b.Fatal(err)
					}
					last = o
				},
			}
			for _, op := range ops {
				b.Run(op, func(b *testing.B) {
					for i := range b.N {
						run[op](b, i)
					}
					results[be.name][op] = b.Elapsed() / time.Duration(b.N)
				})
			}
		})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-8s %14s %14s %8s\n", "op", "bbolt/op", "etcd/op", "etcd/bbolt")
	for _, op := range ops {
		bb, ee := results["bbolt"][op], results["etcd"][op]
		ratio := 0.0
		if bb > 0 {
			ratio = float64(ee) / float64(bb)
		}
		fmt.Fprintf(&sb, "%-8s %14v %14v %8.2f\n", op, bb.Round(time.Microsecond), ee.Round(time.Microsecond), ratio)
	}
	// Printed, not logged: a parent benchmark's log is shown only with -v.
	fmt.Print(sb.String())
}
