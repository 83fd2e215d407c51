package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/annexapi/annex/internal/kubectltest"
)

// syncBuf is a buffer the server's goroutines write to.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestKubectlSessionWithJSONLogs runs the example as `--logging-format=json
// -v=3` and a kubectl session against it: every line the server writes is
// one JSON object with kube's fields, and each kubectl request is kube's
// httplog line ("HTTP" with verb, URI, userAgent, audit-ID, resp).
func TestKubectlSessionWithJSONLogs(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	o, err := parseFlags([]string{"--data-dir", dataDir, "--logging-format=json", "-v=3"})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	o.builder.Observability.Logging.Output = &logs
	b, err := builder(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Serving.Listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	k.MustRun("create", "-f", k.WriteFile("e.yaml", "apiVersion: platform.example.com/v1alpha1\nkind: Environment\n"+
		"metadata: {name: logged, namespace: default}\nspec: {owner: payments-team}\n"))
	k.MustRun("get", "environments")
	stop()

	var sawCreate, sawList, sawServing bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if _, ok := m["ts"].(float64); !ok || m["caller"] == nil || m["msg"] == nil {
			t.Errorf("a line without kube's ts, caller and msg: %q", line)
		}
		ua, _ := m["userAgent"].(string)
		switch {
		case m["msg"] == "serving":
			sawServing = true
		case m["msg"] == "HTTP" && m["verb"] == "CREATE" && strings.HasPrefix(ua, "kubectl/") && m["resp"] == float64(201) && m["audit-ID"] != "":
			sawCreate = true
		case m["msg"] == "HTTP" && m["verb"] == "LIST" && strings.HasPrefix(ua, "kubectl/") && m["v"] == float64(3) &&
			strings.HasPrefix(m["URI"].(string), "/apis/platform.example.com/v1beta1/namespaces/default/environments"):
			sawList = true
		}
	}
	if !sawServing || !sawCreate || !sawList {
		t.Fatalf("serving %v, kubectl create %v, kubectl get %v in:\n%s", sawServing, sawCreate, sawList, logs.String())
	}
}
