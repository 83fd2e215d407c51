package annex_test

import (
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/rest"
)

// TestFullDiskStartsAndServes runs the server on a 16 MiB tmpfs the test
// mounts (the test machines run as root), fills the disk and restarts it:
// start-up writes nothing it already has (the certificates and kubeconfig
// are unchanged), so the server starts; reads and a delete are served
// (bbolt's file has the pages it needs); a write fails with 500 naming the full disk and /readyz then says so (not
// /healthz: a restart would not help); once room is made, writes work and
// /readyz is 200 again.
func TestFullDiskStartsAndServes(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs (the test needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	b := annex.Builder{DataDir: dir, Resources: []rest.Resource{widgets()}, Serving: annex.Serving{Listener: ln}}
	srv := annextest.Start(t, b)
	base := srv.URL + "/apis/test.annex.dev/v1/namespaces/default/widgets"
	for i := range 3 {
		if code, body := do(t, srv.Client(), http.MethodPost, base, widgetJSON("w"+strconv.Itoa(i), 10)); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	fillDisk(t, filepath.Join(dir, "filler"))
	if b.Serving.Listener, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err != nil {
		t.Fatal(err)
	}
	srv = annextest.Start(t, b) // fails the test unless it starts and is ready
	base = srv.URL + "/apis/test.annex.dev/v1/namespaces/default/widgets"
	if code, body := do(t, srv.Client(), http.MethodGet, base, ""); code != http.StatusOK || strings.Count(body, `"kind":"Widget"`) != 3 {
		t.Fatalf("list on a full disk: %d %s", code, body)
	}
	if code, body := do(t, srv.Client(), http.MethodDelete, base+"/w0", ""); code != http.StatusOK {
		t.Fatalf("delete on a full disk: %d %s", code, body)
	}
	// Writes until one fails: bbolt may have free pages in its file.
	failed := ""
	for i := 0; i < 200 && failed == ""; i++ {
		code, body := do(t, srv.Client(), http.MethodPost, base, widgetJSON("big"+strconv.Itoa(i), 64<<10))
		if code != http.StatusCreated {
			if code != http.StatusInternalServerError || !strings.Contains(body, "no space left on device") {
				t.Fatalf("write on a full disk: %d %s, want 500 naming the full disk", code, body)
			}
			failed = body
		}
	}
	if failed == "" {
		t.Fatal("200 writes of 64 KiB succeeded on a full 16 MiB disk")
	}
	if code, body := do(t, srv.AnonymousClient(), http.MethodGet, srv.URL+"/readyz?verbose", ""); code == http.StatusOK || !strings.Contains(body, "[-]storage failed") {
		t.Errorf("/readyz on a full disk: %d %s, want the storage check failed", code, body)
	}
	if code, body := do(t, srv.AnonymousClient(), http.MethodGet, srv.URL+"/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz on a full disk: %d %s, want 200", code, body)
	}
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, srv.Client(), http.MethodPost, base, widgetJSON("after", 10)); code != http.StatusCreated {
		t.Fatalf("create once room is made: %d %s", code, body)
	}
	if code, body := do(t, srv.AnonymousClient(), http.MethodGet, srv.URL+"/readyz", ""); code != http.StatusOK {
		t.Errorf("/readyz once room is made: %d %s", code, body)
	}
}

// widgetJSON is a Widget with a field of n bytes.
func widgetJSON(name string, n int) string {
	return `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"` + name + `"},"data":"` + strings.Repeat("x", n) + `"}`
}

// fillDisk writes path until the filesystem is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
