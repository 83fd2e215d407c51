package annex

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeOwnServerCompiles builds the README's "Your own server" program,
// so that the page newcomers copy from keeps compiling.
func TestReadmeOwnServerCompiles(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the README's program: %v", err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "## Your own server")
	if i < 0 {
		t.Fatal(`README.md has no "Your own server" section`)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(s[i:])
	if m == nil {
		t.Fatal(`the "Your own server" section has no Go program`)
	}
	// Inside the module, so that its imports resolve to this checkout.
	dir, err := os.MkdirTemp(".", "readme-program-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(m[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "build", "-o", os.DevNull, "./"+filepath.Base(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's program does not build: %v\n%s", err, out)
	}
}
