// This file holds the wrapper-module builder and its cache.

package binaries

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Require is one require line of a wrapper's go.mod.
type Require struct {
	Path    string
	Version string
}

// Module is a wrapper module that builds one program.
type Module struct {
	// Name names the binary (and its cache entry).
	Name string
	// Go is the go directive of the wrapper's go.mod; empty means "1.26.0".
	Go string
	// Require pins the modules the wrapper needs, the program's module first.
	Require []Require
	// Replace holds replace directives without the keyword, such as
	// "example.com/a => example.com/b v1.2.3".
	Replace []string
	// Main is the source of main.go.
	Main string
	// Tags are build tags passed to go build.
	Tags []string
	// Package, when set, is the package built instead of main.go's (a
	// command of a required module, which main.go cannot import: main.go
	// then only names it for go mod tidy, behind a build tag).
	Package string
	// CGO builds with CGO_ENABLED=1 (kine's SQLite driver); false builds
	// with CGO_ENABLED=0.
	CGO bool
}

// GoMod is the text of the wrapper's go.mod.
func (m Module) GoMod() string {
	var b strings.Builder
	goVersion := m.Go
	if goVersion == "" {
		goVersion = "1.26.0"
	}
	fmt.Fprintf(&b, "module annexe2e/%s\n\ngo %s\n", m.Name, goVersion)
	if len(m.Require) > 0 {
		b.WriteString("\nrequire (\n")
		for _, r := range m.Require {
			fmt.Fprintf(&b, "\t%s %s\n", r.Path, r.Version)
		}
		b.WriteString(")\n")
	}
	for _, r := range m.Replace {
		fmt.Fprintf(&b, "\nreplace %s\n", r)
	}
	return b.String()
}

// Key is the cache key of the wrapper: a hash of its go.mod, main.go and
// build tags.
func (m Module) Key() string {
	h := sha256.New()
	h.Write([]byte(m.GoMod()))
	h.Write([]byte{0})
	h.Write([]byte(m.Main))
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(m.Tags, ",")))
	if m.Package != "" {
		h.Write([]byte{0, 'p'})
		h.Write([]byte(m.Package))
	}
	if m.CGO {
		h.Write([]byte{0, 'c'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// CacheDir is where built binaries are kept: $ANNEX_E2E_CACHE, or
// os.UserCacheDir()/annex-e2e, or os.TempDir()/annex-e2e when there is no
// user cache directory.
func CacheDir() string {
	if d := os.Getenv("ANNEX_E2E_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "annex-e2e")
	}
	return filepath.Join(os.TempDir(), "annex-e2e")
}

// Build returns the path of m's binary, building it first unless the cache
// holds it. It takes a lock file per cache entry, so that concurrent callers
// (in this process or others) build once.
func Build(ctx context.Context, m Module) (string, error) {
	if m.Name == "" || len(m.Require) == 0 || m.Main == "" {
		return "", errors.New("binaries: a module needs a name, a require and a main")
	}
	dir := CacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entry := filepath.Join(dir, m.Name+"-"+m.Key())
	bin := filepath.Join(entry, m.Name)
	if fileExists(bin) {
		return bin, nil
	}
	unlock, err := lockFile(entry + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if fileExists(bin) { // built by whoever held the lock
		return bin, nil
	}
	src, err := os.MkdirTemp(dir, m.Name+"-src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(m.GoMod()), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(m.Main), 0o644); err != nil {
		return "", err
	}
	if err := goCmd(ctx, src, false, "mod", "tidy"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(entry, 0o755); err != nil {
		return "", err
	}
	// Build next to the final name, then rename: a reader never sees a
	// half-written binary.
	tmp := bin + ".tmp"
	args := []string{"build", "-trimpath", "-o", tmp}
	if len(m.Tags) > 0 {
		args = append(args, "-tags", strings.Join(m.Tags, ","))
	}
	pkg := "."
	if m.Package != "" {
		pkg = m.Package
	}
	if err := goCmd(ctx, src, m.CGO, append(args, pkg)...); err != nil {
		return "", err
	}
	// Keep the wrapper next to the binary for whoever wants to know what it is.
	_ = os.WriteFile(filepath.Join(entry, "go.mod"), []byte(m.GoMod()), 0o644)
	_ = os.WriteFile(filepath.Join(entry, "main.go"), []byte(m.Main), 0o644)
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// BuildT is Build for a test: it fails t on error and logs a cold build's
// duration.
func BuildT(t testing.TB, m Module) string {
	t.Helper()
	start := time.Now()
	cached := fileExists(filepath.Join(CacheDir(), m.Name+"-"+m.Key(), m.Name))
	bin, err := Build(context.Background(), m)
	if err != nil {
		t.Fatalf("build %s: %v", m.Name, err)
	}
	if !cached {
		t.Logf("built %s in %v (cached at %s)", m.Name, time.Since(start).Round(time.Second), bin)
	}
	return bin
}

// goCmd runs the go command in dir with the wrapper isolated from any
// enclosing workspace or module flags, with cgo on or off.
func goCmd(ctx context.Context, dir string, cgo bool, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cgoEnv := "CGO_ENABLED=0"
	if cgo {
		cgoEnv = "CGO_ENABLED=1"
	}
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", cgoEnv)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out.String())
	}
	return nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// lockFile takes an exclusive flock on path and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
