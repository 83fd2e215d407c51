package bbolt

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/annexapi/annex/storage"
)

// The crash test re-executes the test binary as a child that writes until it
// is killed; these variables switch the child on and tell it where to write.
const (
	crashEnvPath = "ANNEX_BBOLT_CRASH_PATH"
	crashEnvIter = "ANNEX_BBOLT_CRASH_ITER"
)

// TestMain runs the crash child instead of the tests when the crash
// variables are set.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnvPath); path != "" {
		crashChild(path, os.Getenv(crashEnvIter))
		return
	}
	os.Exit(m.Run())
}

// crashChild is the child of TestCrashDurability: 16 writers creating and
// updating objects, printing each acknowledged write, until killed.
func crashChild(path, iter string) {
	s, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	ack := func(key string, rev uint64) {
		mu.Lock()
		fmt.Fprintf(os.Stdout, "%s %d\n", key, rev)
		mu.Unlock()
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shared := testKey(fmt.Sprintf("u-%s-%d", iter, w))
			for j := 0; ; j++ {
				if j%2 == 0 {
					k := testKey(fmt.Sprintf("c-%s-%d-%d", iter, w, j))
					o, err := s.Create(ctx, k, testObject("c", strconv.Itoa(j)))
					if err != nil {
						fmt.Fprintln(os.Stderr, "create:", err)
						os.Exit(2)
					}
					ack(k, o.ResourceVersion)
					continue
				}
				o, err := s.Update(ctx, shared, storage.UpdateOptions{IgnoreNotFound: true}, func(storage.Object) ([]byte, error) {
					return testObject("u", strconv.Itoa(j)), nil
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "update:", err)
					os.Exit(2)
				}
				ack(shared, o.ResourceVersion)
			}
		}()
	}
	wg.Wait()
}

// TestCrashDurability kills a writing child with SIGKILL and checks that
// every acknowledged write survived, that the revision never goes backwards,
// and that the file is consistent.
func TestCrashDurability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	var lastRev uint64
	for iter := range 3 {
		acked, maxAck := runCrashChild(t, path, iter, 200+iter*100)
		if len(acked) == 0 {
			t.Fatal("child acknowledged nothing")
		}

		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		})
		_ = db.Close()
		if err != nil {
			t.Fatalf("iteration %d: consistency check: %v", iter, err)
		}

		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := s.CurrentRevision(context.Background())
		if rev < maxAck || rev < lastRev {
			t.Fatalf("iteration %d: revision %d after restart, acked up to %d, previous run ended at %d", iter, rev, maxAck, lastRev)
		}
		lastRev = rev
		for k, want := range acked {
			o, err := s.Get(context.Background(), k, storage.GetOptions{})
			if err != nil {
				t.Fatalf("iteration %d: acknowledged %s@%d lost: %v", iter, k, want, err)
			}
			if o.ResourceVersion < want {
				t.Fatalf("iteration %d: %s at rv %d, acknowledged %d", iter, k, o.ResourceVersion, want)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("iteration %d: %d keys acknowledged (max rv %d), revision after restart %d", iter, len(acked), maxAck, rev)
	}
}

// runCrashChild runs the child until it acknowledged at least kill writes,
// kills it, and returns the highest acknowledged revision of each key.
func runCrashChild(t *testing.T, path string, iter, kill int) (map[string]uint64, uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashEnvPath+"="+path, crashEnvIter+"="+strconv.Itoa(iter))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]uint64{}
	var maxAck uint64
	n := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		k, r, ok := strings.Cut(sc.Text(), " ")
		rev, err := strconv.ParseUint(r, 10, 64)
		if !ok || err != nil {
			t.Fatalf("child printed %q", sc.Text())
		}
		acked[k] = max(acked[k], rev)
		maxAck = max(maxAck, rev)
		if n++; n == kill {
			_ = cmd.Process.Kill() // SIGKILL; lines already written are still read
		}
	}
	_ = cmd.Wait()
	if n < kill {
		t.Fatalf("child exited after %d acks: %s", n, stderr.String())
	}
	return acked, maxAck
}
