// This file holds the etcd build and a single-member etcd server for tests.

package binaries

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EtcdVersion is the etcd release the tests build.
const EtcdVersion = "v3.6.16"

// EtcdModule is the wrapper that builds etcd: etcdmain.Main, as the etcd
// binary's own main does.
func EtcdModule() Module {
	return Module{
		Name:    "etcd",
		Require: []Require{{Path: "go.etcd.io/etcd/server/v3", Version: EtcdVersion}},
		Main: `package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`,
	}
}

// EtcdBinary builds etcd (or finds it in the cache) and returns its path.
func EtcdBinary(t testing.TB) string {
	t.Helper()
	return BuildT(t, EtcdModule())
}

// EtcdServer is a running single-member etcd.
type EtcdServer struct {
	// ClientURL is the server's client URL, http://127.0.0.1:<port>.
	ClientURL string
	// DataDir is the member's data directory.
	DataDir string
	// LogFile holds the server's output.
	LogFile string

	cmd       *exec.Cmd
	done      chan struct{}
	err       error
	healthTLS *tls.Config
}

// Etcd starts a single-member etcd on loopback and returns its client URL.
// The server stops when the test ends.
func Etcd(t testing.TB) string {
	t.Helper()
	return StartEtcd(t).ClientURL
}

// EtcdOptions tune StartEtcdWith. The zero value is a plain-HTTP server.
type EtcdOptions struct {
	// CertFile and KeyFile, when set, make the client URL https with this
	// serving certificate.
	CertFile, KeyFile string
	// ClientCAFile, when set, makes etcd require client certificates signed
	// by it (--client-cert-auth).
	ClientCAFile string
	// HealthTLS is the client TLS configuration the health check uses for
	// an https server.
	HealthTLS *tls.Config
	// Fsync keeps etcd's fsync on; tests leave it off (--unsafe-no-fsync),
	// a comparison of write throughput turns it on.
	Fsync bool
}

// StartEtcd starts a single-member etcd on loopback with free ports and its
// data under t.TempDir(); it stops (SIGTERM, then SIGKILL) in t.Cleanup. It
// fails t when the server is not healthy within a minute.
func StartEtcd(t testing.TB) *EtcdServer {
	t.Helper()
	return StartEtcdWith(t, EtcdOptions{})
}

// StartEtcdWith is StartEtcd with options (TLS).
func StartEtcdWith(t testing.TB, opts EtcdOptions) *EtcdServer {
	t.Helper()
	bin := EtcdBinary(t)
	dir := t.TempDir()
	var lastErr error
	for range 3 { // a free port may be taken between probe and bind
		s, err := startEtcd(bin, dir, opts)
		if err == nil {
			t.Cleanup(func() {
				if err := s.Stop(); err != nil {
					t.Errorf("stop etcd: %v", err)
				}
			})
			return s
		}
		lastErr = err
	}
	t.Fatalf("start etcd: %v", lastErr)
	return nil
}

// StartEtcdProcess starts etcd from bin with its data under dir, outside a
// test (the load tool); the caller stops it.
func StartEtcdProcess(bin, dir string, opts EtcdOptions) (*EtcdServer, error) {
	return startEtcd(bin, dir, opts)
}

// PID is the server's process id.
func (s *EtcdServer) PID() int { return s.cmd.Process.Pid }

func startEtcd(bin, dir string, opts EtcdOptions) (*EtcdServer, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if opts.CertFile != "" {
		scheme = "https"
	}
	client := fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	data, err := os.MkdirTemp(dir, "etcd-data-")
	if err != nil {
		return nil, err
	}
	logPath := data + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--name=annex-e2e",
		"--data-dir=" + data,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=annex-e2e=" + peer,
		"--initial-cluster-state=new",
		"--log-level=warn",
		"--quota-backend-bytes=2147483648",
	}
	if !opts.Fsync {
		// Tests kill annex, never etcd: skip fsync for speed.
		args = append(args, "--unsafe-no-fsync")
	}
	if opts.CertFile != "" {
		args = append(args, "--cert-file="+opts.CertFile, "--key-file="+opts.KeyFile)
	}
	if opts.ClientCAFile != "" {
		args = append(args, "--client-cert-auth", "--trusted-ca-file="+opts.ClientCAFile)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &EtcdServer{ClientURL: client, DataDir: data, LogFile: logPath, cmd: cmd, done: make(chan struct{}), healthTLS: opts.HealthTLS}
	go func() {
		s.err = cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	if err := s.waitHealthy(time.Minute); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("%v\n%s", err, tail(logPath, 4096))
	}
	return s, nil
}

// waitHealthy polls /health until etcd says it is healthy.
func (s *EtcdServer) waitHealthy(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: s.healthTLS}}
	defer hc.CloseIdleConnections()
	var last string
	for {
		select {
		case <-s.done:
			return fmt.Errorf("etcd exited: %v", s.err)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.ClientURL+"/health", nil)
		resp, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"health":"true"`)) {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd not healthy after %v: %s", timeout, last)
		case <-s.done:
			return fmt.Errorf("etcd exited: %v", s.err)
		case <-tick.C:
		}
	}
}

// Stop ends the server: SIGTERM, then SIGKILL after ten seconds. It may be
// called more than once.
func (s *EtcdServer) Stop() error {
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
	return fmt.Errorf("etcd did not stop on SIGTERM within 10s")
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tail returns the last n bytes of a file, for failure messages.
func tail(path string, n int64) string {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return strings.TrimSpace(string(b))
}
