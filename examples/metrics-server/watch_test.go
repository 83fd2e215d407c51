package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/internal/kubectltest"
)

// TestWatchMetrics: NodeMetrics and PodMetrics are watchable, which
// metrics-server's are not (metrics-server#87): kubectl get --watch sees a
// node's metrics again at each new sample, and a watch-list (client-go's
// WatchList) gets the current objects, then the bookmark that ends them.
func TestWatchMetrics(t *testing.T) {
	s := start(t, "--simulation-file", "testdata/cluster.yaml")
	waitFor(t, "readyz", func() (bool, string) {
		code, body := s.insecureGet(t, "/readyz")
		return code == 200, body
	})
	k := kubectltest.New(t, filepath.Join(s.dataDir, "kubeconfig"))
	out := k.MustRun("api-resources", "--api-group", "metrics.k8s.io", "-o", "wide")
	kubectltest.WantContains(t, "api-resources", out, "get,list,watch")

	// kubectl get --watch: each line is an event; a new sample each second
	// (--metric-resolution 1s) makes node-1 appear again.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := k.Command(ctx, "get", "nodemetrics", "node-1", "--watch", "-o", "jsonpath={.metadata.name} {.metadata.resourceVersion} {.timestamp}{\"\\n\"}")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	// The first line is kubectl's GET (a computed object has no
	// resourceVersion); the watch's events follow.
	sc := bufio.NewScanner(stdout)
	var lines []string
	for len(lines) < 4 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 4 {
		t.Fatalf("kubectl get nodemetrics node-1 --watch: %q", lines)
	}
	rvs, stamps := map[string]bool{}, map[string]bool{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "node-1" {
			t.Fatalf("watch line %q of %q", l, lines)
		}
		rvs[f[1]], stamps[f[2]] = true, true
	}
	if len(rvs) != 3 || len(stamps) < 2 {
		t.Errorf("three watch events, each its own resourceVersion, new samples: %q", lines)
	}

	// A watch-list as client-go sends it: the state as ADDED events, then a
	// bookmark annotated k8s.io/initial-events-end.
	c := s.adminClient(t, 10*time.Second)
	resp, err := c.Get(s.url + "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch-list: %d", resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	added := map[string]bool{}
	for {
		var ev struct {
			Type   string
			Object struct {
				Metadata struct {
					Name        string
					Annotations map[string]string
				}
			}
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch-list ended before its bookmark (%v); added %v", err, added)
		}
		if ev.Type == "BOOKMARK" {
			if ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] != "true" {
				t.Errorf("bookmark without k8s.io/initial-events-end: %+v", ev)
			}
			break
		}
		if ev.Type != "ADDED" {
			t.Fatalf("watch-list: %s before the bookmark", ev.Type)
		}
		added[ev.Object.Metadata.Name] = true
	}
	if !added["web-0"] || !added["db-0"] || added["coredns-0"] {
		t.Errorf("watch-list of namespace default added %v, want web-0 and db-0 only", added)
	}
}

// adminClient is a client of s as the admin of its kubeconfig (client
// certificate), trusting its serving CA.
func (s *started) adminClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.dataDir, "certs", "metrics-server-serving-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := tls.LoadX509KeyPair(filepath.Join(s.dataDir, "certs", "admin.crt"), filepath.Join(s.dataDir, "certs", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}}}
}

// watchEvent is a watch event of PodMetrics, or a Status in an ERROR.
type watchEvent struct {
	Type   string
	Object struct {
		Metadata struct{ Name, ResourceVersion string }
		Code     int
		Reason   string
	}
}

// TestWatchOnlyWhileWatched drives the watch of PodMetrics as client-go's
// reflector does (LIST, then a watch from the list's resourceVersion with
// bookmarks, then a re-watch from the last resourceVersion it saw), raw
// HTTP with the headers client-go sends, and reads the server's watch
// cache metrics: no watch cache is built while nobody watches (the metrics
// are scraped and listed all along); the first watch builds one and gets
// every pod, a re-watch from a resourceVersion it served replays after it;
// once the watches end and --watch-linger has passed the cache is gone; a
// watch from its resourceVersion is then 410 Expired (the client re-lists,
// as it does with kube's watch cache), and a watch from "0" builds another
// whose resource versions follow.
func TestWatchOnlyWhileWatched(t *testing.T) {
	s := start(t, "--simulation-file", "testdata/cluster.yaml", "--watch-linger", "1s")
	waitFor(t, "readyz", func() (bool, string) {
		code, body := s.insecureGet(t, "/readyz")
		return code == 200, body
	})
	c := s.adminClient(t, 30*time.Second)
	const pods = "/apis/metrics.k8s.io/v1beta1/pods"
	do := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json, */*")
		req.Header.Set("User-Agent", "metrics-watch-test/v0.0.0 (linux/amd64) kubernetes/$Format")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// metric is the value of a watch cache metric of PodMetrics; false
	// when it is not there.
	metric := func(name string) (float64, bool) {
		t.Helper()
		resp := do("/metrics")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, name+`{resource="pods.metrics.k8s.io"} `); ok {
				v, err := strconv.ParseFloat(rest, 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	list := func() (rv string, n int, stamp string) {
		t.Helper()
		resp := do(pods)
		defer resp.Body.Close()
		var l struct {
			Metadata struct{ ResourceVersion string }
			Items    []struct{ Timestamp string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != 200 {
			t.Fatalf("list: %d %v", resp.StatusCode, err)
		}
		if len(l.Items) > 0 {
			stamp = l.Items[0].Timestamp
		}
		return l.Metadata.ResourceVersion, len(l.Items), stamp
	}
	// Two new samples go by (a scrape a second), served by list, with
	// nobody watching: no watch cache.
	_, _, first := list()
	for seen := 0; seen < 2; {
		waitFor(t, "a new sample", func() (bool, string) {
			_, _, stamp := list()
			return stamp != first, stamp
		})
		_, _, first = list()
		seen++
	}
	if v, ok := metric("apiserver_watch_cache_initializations_total"); ok && v != 0 {
		t.Fatalf("a watch cache of PodMetrics was built (%v) with nobody watching", v)
	}
	rv, n, _ := list()
	if rv != "" || n != 3 {
		t.Fatalf("list: resourceVersion %q, %d items; want none (as metrics-server's) and 3", rv, n)
	}

	// The reflector's watch from the list's resourceVersion.
	watch := func(rv string) (*http.Response, *json.Decoder) {
		t.Helper()
		resp := do(pods + "?allowWatchBookmarks=true&resourceVersion=" + rv + "&timeoutSeconds=20&watch=true")
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("watch from %q: %d %s", rv, resp.StatusCode, b)
		}
		return resp, json.NewDecoder(resp.Body)
	}
	nextEvent := func(dec *json.Decoder) watchEvent {
		t.Helper()
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch: %v", err)
		}
		return ev
	}
	rvOf := func(ev watchEvent) uint64 {
		t.Helper()
		v, err := strconv.ParseUint(ev.Object.Metadata.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatalf("%s event's resourceVersion %q", ev.Type, ev.Object.Metadata.ResourceVersion)
		}
		return v
	}
	resp1, dec1 := watch(rv)
	defer resp1.Body.Close()
	added, primed := map[string]bool{}, uint64(0)
	for len(added) < n {
		ev := nextEvent(dec1)
		if ev.Type != "ADDED" {
			t.Fatalf("initial %s %s", ev.Type, ev.Object.Metadata.Name)
		}
		added[ev.Object.Metadata.Name] = true
		primed = max(primed, rvOf(ev))
	}
	if v, _ := metric("apiserver_watch_cache_initializations_total"); v != 1 {
		t.Errorf("%v watch cache initializations with one watch, want 1", v)
	}
	// A new sample is a MODIFIED event after the primed state.
	var last uint64
	for last == 0 {
		if ev := nextEvent(dec1); ev.Type == "MODIFIED" {
			last = rvOf(ev)
		}
	}
	if last <= primed {
		t.Fatalf("MODIFIED at %d, not after the primed state at %d", last, primed)
	}
	// The reflector re-watches from the last resourceVersion it saw.
	resp2, dec2 := watch(strconv.FormatUint(primed, 10))
	if ev := nextEvent(dec2); ev.Type != "MODIFIED" || rvOf(ev) <= primed {
		t.Fatalf("re-watch from %d: %s at %s", primed, ev.Type, ev.Object.Metadata.ResourceVersion)
	}
	if v, _ := metric("apiserver_registered_watchers"); v != 2 {
		t.Errorf("%v registered watchers, want 2", v)
	}
	resp1.Body.Close()
	resp2.Body.Close()

	// The watchers gone and a second gone by, the cache goes.
	waitFor(t, "the watch cache gone", func() (bool, string) {
		v, _ := metric("apiserver_watch_cache_objects")
		w, _ := metric("apiserver_registered_watchers")
		return v == 0 && w == 0, fmt.Sprintf("%v objects, %v watchers", v, w)
	})
	// A watch from its last resourceVersion: 410 Expired in an ERROR event.
	resp3, dec3 := watch(strconv.FormatUint(last, 10))
	ev := nextEvent(dec3)
	resp3.Body.Close()
	if ev.Type != "ERROR" || ev.Object.Code != 410 || ev.Object.Reason != "Expired" {
		t.Fatalf("watch from the ended cache's %d: %s %d %s, want ERROR 410 Expired", last, ev.Type, ev.Object.Code, ev.Object.Reason)
	}
	// From "0": a new cache, the state again after the old revisions.
	resp4, dec4 := watch("0")
	defer resp4.Body.Close()
	for range n {
		if ev := nextEvent(dec4); ev.Type != "ADDED" || rvOf(ev) <= last {
			t.Fatalf("new cache: %s at %s, want ADDED after %d", ev.Type, ev.Object.Metadata.ResourceVersion, last)
		}
	}
	if v, _ := metric("apiserver_watch_cache_initializations_total"); v != 2 {
		t.Errorf("%v watch cache initializations, want 2", v)
	}
}
