package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// recorder collects an informer's notifications in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, kind+" "+m.GetName())
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.add("add", o) },
		UpdateFunc: func(_, o any) { r.add("update", o) },
		DeleteFunc: func(o any) { r.add("delete", o) },
	}
}

// startInformer starts a dynamic or metadata informer on team-a and waits
// for it to sync.
func startInformer(t *testing.T, s *server, kind string, rec *recorder) cache.SharedIndexInformer {
	t.Helper()
	var inf cache.SharedIndexInformer
	switch kind {
	case "dynamic":
		dc, err := dynamic.NewForConfig(s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		inf = dynamicinformer.NewFilteredDynamicInformer(dc, gvr, "team-a", 0, cache.Indexers{}, nil).Informer()
	case "metadata":
		mc, err := metadata.NewForConfig(s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		inf = metadatainformer.NewFilteredMetadataInformer(mc, gvr, "team-a", 0, cache.Indexers{}, nil).Informer()
	}
	if _, err := inf.AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	syncCtx, syncCancel := context.WithTimeout(ctx, 15*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatalf("%s informer did not sync", kind)
	}
	return inf
}

func storeNames(inf cache.SharedIndexInformer) string {
	var names []string
	for _, k := range inf.GetStore().ListKeys() {
		names = append(names, strings.TrimPrefix(k, "team-a/"))
	}
	sortStrings(names)
	return strings.Join(names, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestInformers runs dynamic and metadata informers with WatchListClient
// off and on: each syncs with the objects already there, then sees every
// later create, update and delete, in order.
func TestInformers(t *testing.T) {
	testInformers(t, startServer)
}

// testInformers runs the informer cases against servers from start.
func testInformers(t *testing.T, start func(t *testing.T) *server) {
	for _, watchList := range []bool{false, true} {
		for _, kind := range []string{"dynamic", "metadata"} {
			t.Run(fmt.Sprintf("%s_watchlist_%v", kind, watchList), func(t *testing.T) {
				clientGates.watchList.Store(watchList)
				s := start(t)
				ctx := context.Background()
				dc, err := dynamic.NewForConfig(s.cfg)
				if err != nil {
					t.Fatal(err)
				}
				envs := dc.Resource(gvr).Namespace("team-a")
				for _, n := range []string{"a", "b", "c"} {
					if _, err := envs.Create(ctx, newEnvironment("team-a", n, "alice"), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				rec := &recorder{}
				inf := startInformer(t, s, kind, rec)
				if got := storeNames(inf); got != "a,b,c" {
					t.Fatalf("synced store = %s, want a,b,c", got)
				}
				initialLists := s.log.count("sendInitialEvents=true")
				if watchList && initialLists == 0 {
					t.Fatal("WatchListClient on, but no watch-list request was made")
				}
				if !watchList && initialLists != 0 {
					t.Fatal("WatchListClient off, but a watch-list request was made")
				}
				base := len(rec.snapshot()) // the three initial adds
				if _, err := envs.Create(ctx, newEnvironment("team-a", "d", "bob"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := envs.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := envs.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := envs.Create(ctx, newEnvironment("team-a", "e", "bob"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				want := "add d,update a,delete b,add e"
				eventually(t, 10*time.Second, "informer events", func() bool { return len(rec.snapshot()) >= base+4 })
				if got := strings.Join(rec.snapshot()[base:], ","); got != want {
					t.Fatalf("events = %s, want %s", got, want)
				}
				if got := storeNames(inf); got != "a,c,d,e" {
					t.Fatalf("store = %s, want a,c,d,e", got)
				}
			})
		}
	}
}

// TestWatchOutlivesHistory: a watch from a resource version the cache no
// longer holds gets a 410 ERROR event, and an informer whose connection
// drops while more than the history's worth of writes happen relists on
// its own and ends up with the right state.
func TestWatchOutlivesHistory(t *testing.T) {
	clientGates.watchList.Store(false)
	s := startServer(t)
	ctx := context.Background()
	writer := *s.cfg
	writer.Dial, writer.WrapTransport = nil, nil
	wc, err := dynamic.NewForConfig(&writer)
	if err != nil {
		t.Fatal(err)
	}
	envs := wc.Resource(gvr).Namespace("team-a")
	first, err := envs.Create(ctx, newEnvironment("team-a", "keep", "alice"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	inf := startInformer(t, s, "dynamic", rec)
	lists := s.log.count("GET /apis/"+group+"/"+version+"/namespaces/team-a/"+plural+"?") - s.log.count("watch=true")

	release := s.gate.cut()
	for i := 0; i < 2*ringSize; i++ {
		obj, err := envs.Create(ctx, newEnvironment("team-a", fmt.Sprintf("n%02d", i), "bob"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := envs.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A raw watch from the first object's version is past the history.
	w, err := envs.Watch(ctx, metav1.ListOptions{ResourceVersion: first.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) && !apierrors.IsGone(apierrors.FromObject(ev.Object)) {
		t.Fatalf("old watch event = %v %v, want ERROR 410", ev.Type, ev.Object)
	}
	if code := apierrors.FromObject(ev.Object).(apierrors.APIStatus).Status().Code; code != http.StatusGone {
		t.Fatalf("ERROR code = %d, want 410", code)
	}
	release()
	var want []string
	want = append(want, "keep")
	for i := 1; i < 2*ringSize; i += 2 {
		want = append(want, fmt.Sprintf("n%02d", i))
	}
	eventually(t, 20*time.Second, "informer relist", func() bool { return storeNames(inf) == strings.Join(want, ",") })
	relists := s.log.count("GET /apis/"+group+"/"+version+"/namespaces/team-a/"+plural+"?") - s.log.count("watch=true") - lists
	if relists < 1 {
		t.Fatalf("informer caught up without relisting (%d lists)", relists)
	}
	_ = unstructured.Unstructured{}
}
