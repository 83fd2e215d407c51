package binaries

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestModuleKey(t *testing.T) {
	base := EtcdModule()
	tests := []struct {
		name   string
		change func(m *Module)
		same   bool
	}{
		{name: "unchanged", change: func(*Module) {}, same: true},
		{name: "version", change: func(m *Module) { m.Require = []Require{{Path: m.Require[0].Path, Version: "v3.6.0"}} }},
		{name: "replace", change: func(m *Module) { m.Replace = []string{"a => b v1.0.0"} }},
		{name: "main", change: func(m *Module) { m.Main += "\n" }},
		{name: "tags", change: func(m *Module) { m.Tags = []string{"x"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := EtcdModule()
			tt.change(&m)
			if got := m.Key() == base.Key(); got != tt.same {
				t.Errorf("key equal to the base's = %v, want %v", got, tt.same)
			}
		})
	}
}

func TestBuildReusesCache(t *testing.T) {
	t.Setenv("ANNEX_E2E_CACHE", t.TempDir())
	m := Module{
		Name:    "hello",
		Require: []Require{{Path: "golang.org/x/sync", Version: "v0.24.0"}},
		Main: `package main

import (
	"fmt"

	"golang.org/x/sync/errgroup"
)

func main() { var g errgroup.Group; fmt.Println(g.Wait() == nil) }
`,
	}
	bin, err := Build(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(CacheDir(), "hello-"+m.Key(), "hello"); bin != want {
		t.Errorf("binary at %s, want %s", bin, want)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	fi2, err := os.Stat(again)
	if err != nil {
		t.Fatal(err)
	}
	if again != bin || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("second build did not reuse the cached binary: %s (%v) vs %s (%v)", again, fi2.ModTime(), bin, fi.ModTime())
	}
}

func TestEtcd(t *testing.T) {
	s := StartEtcd(t)
	post := func(path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.ClientURL+path, bytes.NewReader(b))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	post("/v3/kv/put", map[string]string{"key": b64("/annex/k"), "value": b64("v")})
	got := post("/v3/kv/range", map[string]string{"key": b64("/annex/k")})
	kvs, _ := got["kvs"].([]any)
	if len(kvs) != 1 || kvs[0].(map[string]any)["value"] != b64("v") {
		t.Errorf("range after put = %v", got)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(s.ClientURL + "/health"); err == nil {
		t.Errorf("etcd still answers after Stop")
	}
}

// TestHelm: the helm command built from the module proxy runs and is the
// pinned release (built without helm's ldflags, it knows its major and
// minor version only).
func TestHelm(t *testing.T) {
	out, err := exec.Command(Helm(t), "version", "--short").CombinedOutput()
	if v := strings.TrimSpace(string(out)); err != nil || len(v) < len("v3.1") || !strings.HasPrefix(HelmVersion+".", v+".") {
		t.Fatalf("helm version: %q, %v", out, err)
	}
}

// TestMetricsServer: metrics-server built from the module proxy runs and
// has the flags the side-by-side test passes it.
func TestMetricsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds metrics-server; not in -short")
	}
	out, err := exec.Command(MetricsServer(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("metrics-server --help: %v\n%s", err, out)
	}
	for _, flag := range []string{"--kubelet-use-node-status-port", "--kubelet-preferred-address-types", "--kubelet-certificate-authority", "--metric-resolution", "--authentication-kubeconfig"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("metrics-server --help lacks %s", flag)
		}
	}
}
