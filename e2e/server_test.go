package e2e

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientfeatures "k8s.io/client-go/features"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/rest"
	annexschema "github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
	"github.com/annexapi/annex/watch"
)

const (
	group   = "platform.example.com"
	version = "v1alpha1"
	plural  = "environments"
)

var gvr = schema.GroupVersionResource{Group: group, Version: version, Resource: plural}

// ringSize is the watch cache's history: small, so a test can outrun it.
const ringSize = 16

// cacheStore is the watch cache, declared able to send initial events.
// The Builder's own cache gets this from package watch once it says so;
// here the test builds its cache itself to choose a small ring.
type cacheStore struct{ *watch.Cacher }

func (cacheStore) SendsInitialEvents() bool { return true }

var _ rest.InitialEventsSender = cacheStore{}

const environmentSchema = `
type: object
description: An Environment is a place where a team deploys its services.
properties:
  spec:
    type: object
    description: Spec is the desired state of the environment.
    required: [owner]
    properties:
      owner: {type: string, description: Owner is the team that owns the environment.}
      tier: {type: string, description: "Tier is the stage of the environment: dev, staging or prod.", default: dev}
      replicas: {type: integer, description: Replicas is how many copies of each service run., default: 1}
  status:
    type: object
    description: Status is the observed state.
    properties:
      phase: {type: string, description: Phase is Pending or Ready.}
`

func environment(s storage.Interface) rest.Resource {
	return rest.Resource{
		Group: group, Version: version, Plural: plural, Kind: "Environment", Namespaced: true,
		ShortNames: []string{"env"}, Categories: []string{"all"},
		Storage:           s,
		Schema:            annexschema.MustParseYAML(environmentSchema),
		StatusSubresource: true,
		PrinterColumns: []rest.PrinterColumn{
			{Name: "Tier", Type: "string", JSONPath: ".spec.tier", Description: "The stage."},
			{Name: "Owner", Type: "string", JSONPath: ".spec.owner"},
			{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas", Priority: 1},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
	}
}

// server is a running annex server and what the tests need to reach it.
type server struct {
	kubeconfig string
	cfg        *restclient.Config
	cache      *watch.Cacher
	log        *requestLog
	gate       *dialGate
}

// requestLog records the URLs clients sent.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) add(u string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.urls = append(l.urls, u)
}

// count returns how many recorded URLs contain every part.
func (l *requestLog) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, u := range l.urls {
		for _, p := range parts {
			if !strings.Contains(u, p) {
				continue next
			}
		}
		n++
	}
	return n
}

type recordingTransport struct {
	next http.RoundTripper
	log  *requestLog
}

func (t recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.log.add(r.Method + " " + r.URL.RequestURI())
	return t.next.RoundTrip(r)
}

// dialGate can cut a client's connections and hold its new ones back.
type dialGate struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed atomic.Bool
	open   chan struct{}
}

func newDialGate() *dialGate {
	g := &dialGate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *dialGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		g.mu.Lock()
		g.conns = append(g.conns, c)
		g.mu.Unlock()
	}
	return c, err
}

// cut closes every connection and holds new dials until release.
func (g *dialGate) cut() (release func()) {
	g.mu.Lock()
	ch := make(chan struct{})
	g.open = ch
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
	g.mu.Unlock()
	return func() { close(ch) }
}

func startServer(t *testing.T) *server {
	t.Helper()
	st, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return startServerOn(t, st)
}

// startServerOn is startServer on the store st (the caller closes it).
func startServerOn(t *testing.T, st storage.Interface) *server {
	t.Helper()
	dir := t.TempDir()
	cache, err := watch.New(st, watch.Config{Prefix: storage.ResourcePrefix(group, plural, ""), RingSize: ringSize, BookmarkInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The cache is the resource's own store: Run starts it (and stops it when
	// it returns), as it does every store with a Start method.
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := annex.Builder{
		Name:      "e2e",
		Resources: []rest.Resource{environment(cacheStore{cache})},
		DataDir:   dir,
		Serving:   annex.Serving{Listener: ln},
		Storage:   annex.Storage{DisableWatchCache: true},
	}
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	s := &server{kubeconfig: srv.KubeconfigPath(), cache: cache, log: &requestLog{}, gate: newDialGate()}
	cfg.Dial = s.gate.dial
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{next: rt, log: s.log} }
	cfg.QPS, cfg.Burst = 1000, 1000
	s.cfg = cfg
	// Ready when the cache has its initial list.
	eventually(t, 10*time.Second, "watch cache ready", func() bool { return cache.Ready(context.Background()) == nil })
	return s
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// gates is a client-go feature gate set whose WatchListClient can be
// switched between informers (client-go reads it when a reflector starts).
type gates struct{ watchList atomic.Bool }

func (g *gates) Enabled(key clientfeatures.Feature) bool {
	if key == clientfeatures.WatchListClient {
		return g.watchList.Load()
	}
	return false
}

// clientGates is installed once for the whole test binary.
var clientGates = func() *gates {
	g := &gates{}
	clientfeatures.ReplaceFeatureGates(g)
	return g
}()
