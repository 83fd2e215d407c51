// This file holds the kine build (etcd's API over SQL, as k3s runs it) and a
// kine server for tests.

package binaries

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// KineVersion is the kine release the tests build: its latest release on
// the Go module proxy when it was pinned.
const KineVersion = "v0.17.5"

// KineModule is the wrapper that builds kine, as kine's own main does. It
// builds with cgo, as k3s ships it (mattn/go-sqlite3 for SQLite).
func KineModule() Module {
	return Module{
		Name:    "kine",
		Go:      "1.26.5", // kine v0.17.5's go directive
		Require: []Require{{Path: "github.com/k3s-io/kine", Version: KineVersion}},
		CGO:     true,
		Main: `package main

import (
	"context"
	"errors"
	"os"

	"github.com/k3s-io/kine/pkg/app"
	"github.com/sirupsen/logrus"
)

func main() {
	if err := app.New().Run(os.Args); err != nil && !errors.Is(err, context.Canceled) {
		logrus.Fatal(err)
	}
}
`,
	}
}

// KineBinary builds kine (or finds it in the cache) and returns its path.
func KineBinary(t testing.TB) string {
	t.Helper()
	return BuildT(t, KineModule())
}

// KineServer is a running kine.
type KineServer struct {
	// ClientURL is the etcd client URL, http://127.0.0.1:<port>.
	ClientURL string
	// LogFile holds the server's output.
	LogFile string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// KineSQLite is the kine endpoint of a SQLite database file at path, with
// the DSN parameters kine documents for SQLite (WAL, busy timeout, immediate
// transactions).
func KineSQLite(path string) string {
	return "sqlite://" + path + "?_journal=WAL&cache=shared&_busy_timeout=30000&_txlock=immediate"
}

// StartKine starts kine on endpoint (KineSQLite, or a postgres:// DSN) on a
// free loopback port and stops it when the test ends. args are extra kine
// flags (such as --compact-min-retain=0). It fails t when kine does not
// accept connections within a minute.
func StartKine(t testing.TB, endpoint string, args ...string) *KineServer {
	t.Helper()
	bin := KineBinary(t)
	logPath := filepath.Join(t.TempDir(), "kine.log")
	var lastErr error
	for range 3 { // a free port may be taken between probe and bind
		s, err := StartKineProcess(bin, endpoint, logPath, args...)
		if err == nil {
			t.Cleanup(func() {
				if err := s.Stop(); err != nil {
					t.Errorf("stop kine: %v", err)
				}
			})
			return s
		}
		lastErr = err
	}
	t.Fatalf("start kine: %v", lastErr)
	return nil
}

// StartKineProcess starts kine from bin on endpoint, its output in logPath,
// outside a test (the load tool); the caller stops it.
func StartKineProcess(bin, endpoint, logPath string, args ...string) (*KineServer, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{
		"--listen-address=" + addr,
		"--endpoint=" + endpoint,
		"--metrics-bind-address=0",
	}, args...)...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &KineServer{ClientURL: "http://" + addr, LogFile: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("kine exited: %v\n%s", s.err, tail(logPath, 4096))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.Stop()
			return nil, fmt.Errorf("kine not listening after a minute\n%s", tail(logPath, 4096))
		}
	}
}

// PID is the server's process id.
func (s *KineServer) PID() int { return s.cmd.Process.Pid }

// Stop ends kine: SIGTERM, then SIGKILL after ten seconds. It may be called
// more than once.
func (s *KineServer) Stop() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	return fmt.Errorf("kine did not stop on SIGTERM within 10s")
}
