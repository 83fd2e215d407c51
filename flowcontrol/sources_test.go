package flowcontrol

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/annexapi/annex/kubeclient"
)

func levelOfSchema(c *Controller, fs string) string {
	for _, f := range c.Configuration().FlowSchemas {
		if f.Metadata.Name == fs {
			return f.Spec.PriorityLevelConfiguration.Name
		}
	}
	return ""
}

func TestConfigFileReloaded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "apf.yaml")
	write := func(level string) {
		doc := fmt.Sprintf(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: mine}
spec:
  priorityLevelConfiguration: {name: %s}
  matchingPrecedence: 50
  rules: [{subjects: [{kind: User, user: {name: alice}}], nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]}]
`, level)
		atomicWrite(t, path, doc)
	}
	write("workload-low")
	c, err := New(Config{ConfigFiles: []string{path}, FileCheckInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := levelOfSchema(c, "mine"); got != "workload-low" {
		t.Fatalf("initial level %q", got)
	}
	if levelOfSchema(c, "global-default") != "global-default" {
		t.Errorf("the suggested objects are not kept beside the file's")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	write("workload-high")
	waitFor(t, func() bool { return levelOfSchema(c, "mine") == "workload-high" })
	srv := serve(t, c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	resp := get(t, srv.URL+"/x", "alice")
	resp.Body.Close()
	if got := resp.Header.Get(HeaderPriorityLevelUID); got != StableUID(KindPriorityLevelConfiguration, "workload-high") {
		t.Errorf("served level uid %q after reload", got)
	}
	// A broken file is refused; the last good configuration stays.
	atomicWrite(t, path, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: mine}\nspec: {bogus: 1}\n")
	waitFor(t, func() bool { return c.reloadErrors.Load() > 0 })
	if got := levelOfSchema(c, "mine"); got != "workload-high" {
		t.Errorf("after a broken file, level %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}

// fakeKube serves flowschemas and prioritylevelconfigurations as
// kube-apiserver does: a List with metadata.resourceVersion, then watch
// streams of {"type","object"} lines.
type fakeKube struct {
	mu       sync.Mutex
	fs       []string // JSON objects
	rv       int
	down     atomic.Bool
	watches  atomic.Int32
	gone     atomic.Bool // answer the next flowschemas watch with a 410 ERROR event
	events   chan string // events for the flowschemas watch
	listings atomic.Int32
	refused  atomic.Int32
}

const kubePL = `{"metadata":{"name":"custom","uid":"6a1d0c9e-0000-4000-8000-000000000001","resourceVersion":"7","generation":1,"creationTimestamp":"2025-01-01T00:00:00Z","managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"flowcontrol.apiserver.k8s.io/v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":10,"limitResponse":{"type":"Reject"},"lendablePercent":0}},"status":{}}`

func kubeFS(name, uid, level string, precedence int) string {
	return fmt.Sprintf(`{"metadata":{"name":%q,"uid":%q,"resourceVersion":"8","generation":1,"creationTimestamp":"2025-01-01T00:00:00Z"},"spec":{"priorityLevelConfiguration":{"name":%q},"matchingPrecedence":%d,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"User","user":{"name":"x"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]},"status":{"conditions":[{"type":"Dangling","status":"False","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"Found","message":"This FlowSchema references the PriorityLevelConfiguration object named %s and it exists"}]}}`, name, uid, level, precedence, level)
}

func (k *fakeKube) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if k.down.Load() {
		k.refused.Add(1)
		http.Error(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"unavailable","reason":"ServiceUnavailable","code":503}`, 503)
		return
	}
	isFS := strings.HasSuffix(r.URL.Path, "/flowschemas")
	if r.URL.Query().Get("watch") != "true" {
		k.mu.Lock()
		defer k.mu.Unlock()
		if isFS {
			k.listings.Add(1)
			fmt.Fprintf(w, `{"kind":"FlowSchemaList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{"resourceVersion":"%d"},"items":[%s]}`, k.rv, strings.Join(k.fs, ","))
		} else {
			fmt.Fprintf(w, `{"kind":"PriorityLevelConfigurationList","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{"resourceVersion":"%d"},"items":[%s]}`, k.rv, kubePL)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	flush := func() { http.NewResponseController(w).Flush() }
	flush()
	if !isFS {
		<-r.Context().Done()
		return
	}
	k.watches.Add(1)
	if k.gone.CompareAndSwap(true, false) {
		fmt.Fprintf(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}`+"\n")
		flush()
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-k.events:
			if ev == "END" { // the server ends the stream
				return
			}
			fmt.Fprintln(w, ev)
			flush()
		}
	}
}

func TestClusterSource(t *testing.T) {
	t.Parallel()
	k := &fakeKube{fs: []string{kubeFS("one", "uid-one", "custom", 100)}, rv: 10, events: make(chan string, 10)}
	k.gone.Store(true)
	srv := httptest.NewTLSServer(k)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if _, err := x509.ParseCertificate(srv.Certificate().Raw); err != nil {
		t.Fatal(err)
	}
	cl, err := kubeclient.New(kubeclient.Config{Host: srv.URL, CAData: ca, Backoff: kubeclient.Backoff{Steps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Cluster: cl, ClusterRetry: time.Millisecond, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if levelOfSchema(c, "global-default") != "global-default" {
		t.Fatal("before the first list the defaults must serve")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()

	// Listed: the cluster's objects replace the defaults; mandatory ones are
	// added back.
	waitFor(t, func() bool { return levelOfSchema(c, "one") == "custom" })
	if levelOfSchema(c, "global-default") != "" || levelOfSchema(c, "catch-all") != "catch-all" || levelOfSchema(c, "exempt") != "exempt" {
		t.Errorf("cluster configuration: %+v", c.Configuration().FlowSchemas)
	}
	// The first watch got 410: the informer listed again.
	waitFor(t, func() bool { return k.listings.Load() >= 2 && k.watches.Load() >= 2 })

	// A watch event adds a schema.
	k.events <- `{"type":"ADDED","object":` + kubeFS("two", "uid-two", "custom", 200) + `}`
	waitFor(t, func() bool { return levelOfSchema(c, "two") == "custom" })
	hsrv := serve(t, c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	resp := get(t, hsrv.URL+"/x", "x")
	resp.Body.Close()
	if resp.Header.Get(HeaderFlowSchemaUID) != "uid-one" || resp.Header.Get(HeaderPriorityLevelUID) != "6a1d0c9e-0000-4000-8000-000000000001" {
		t.Errorf("headers carry %q %q, want the cluster's UIDs", resp.Header.Get(HeaderFlowSchemaUID), resp.Header.Get(HeaderPriorityLevelUID))
	}
	k.events <- `{"type":"DELETED","object":` + kubeFS("two", "uid-two", "custom", 200) + `}`
	waitFor(t, func() bool { return levelOfSchema(c, "two") == "" })

	// The cluster goes away: the last good configuration stays.
	k.down.Store(true)
	k.events <- `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"11"}}}`
	listings, watches := k.listings.Load(), k.watches.Load()
	k.events <- "END"
	waitFor(t, func() bool { return k.refused.Load() >= 2 }) // the re-watch and a re-list were refused
	if k.listings.Load() != listings || k.watches.Load() != watches {
		t.Errorf("requests served while down")
	}
	if levelOfSchema(c, "one") != "custom" {
		t.Errorf("configuration lost while the cluster is down")
	}
	k.down.Store(false)
	waitFor(t, func() bool { return k.listings.Load() > listings })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}

// atomicWrite replaces path's content in one rename, so the poller never
// reads a half-written file.
func atomicWrite(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
