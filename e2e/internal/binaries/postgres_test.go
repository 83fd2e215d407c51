package binaries

import (
	"strconv"
	"strings"
	"testing"
)

// TestPostgres starts a throwaway cluster, creates a database, writes to
// it, crashes and restarts the server, and reads the row back.
func TestPostgres(t *testing.T) {
	p := StartPostgres(t)
	if _, err := p.CreateDatabase("probe"); err != nil {
		t.Fatal(err)
	}
	if err := p.SQL("probe", "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	out, err := p.command("psql", "-X", "-At", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", PostgresUser, "-d", "probe", "-c", "SELECT v FROM t").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "kept" {
		t.Fatalf("after a crash and restart: %q, want kept", got)
	}
}
