package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
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
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}}}
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
