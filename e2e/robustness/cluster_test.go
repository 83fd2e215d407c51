// This file holds the processes a run drives: the environments example
// (standalone on bbolt, or replicas on etcd) and etcd, each a subprocess the
// test can kill -9, pause and restart.

package robustness

import (
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
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annexapi/annex/e2e/internal/binaries"
)

// buildOnce builds examples/environments once per test binary.
type exampleBinary struct {
	once sync.Once
	path string
	err  error
}

func (b *exampleBinary) get(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "annex-robustness-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "environments")
		cmd := exec.Command("go", "build", "-o", b.path, "./examples/environments")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build the example: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// proc is a subprocess that can be killed, paused and restarted with the
// same arguments.
type proc struct {
	name string
	bin  string
	args []string
	log  string

	mu          sync.Mutex
	cmd         *exec.Cmd
	done        chan struct{}
	incarnation int
}

func (p *proc) start() error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.incarnation++
	p.mu.Unlock()
	return nil
}

// Name is the process's name and incarnation, as the history records it.
func (p *proc) Name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%s#%d", p.name, p.incarnation)
}

func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process dies too, but be sure
	_ = cmd.Process.Kill()
	<-done
}

func (p *proc) exited() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// server is one process of the environments example.
type server struct {
	proc
	dir string
	ep  *Endpoint
}

func newServer(t testing.TB, bin, name string, extra ...string) *server {
	dir := t.TempDir()
	port := freePort(t)
	s := &server{dir: dir, proc: proc{name: name, bin: bin, log: filepath.Join(dir, "server.log"),
		args: append([]string{"--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port)}, extra...)}}
	t.Cleanup(s.kill)
	return s
}

// startAndWait starts the server and waits until /readyz passes.
func (s *server) startAndWait(ctx context.Context) error {
	if err := s.start(); err != nil {
		return err
	}
	return s.waitReady(ctx)
}

func (s *server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if s.exited() {
			return fmt.Errorf("%s exited:\n%s", s.Name(), s.tail())
		}
		if s.ep == nil {
			if ep, err := endpointFor(filepath.Join(s.dir, "kubeconfig"), s.Name); err == nil {
				s.ep = ep
			}
		}
		if s.ep != nil && s.ready(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v\n%s", s.Name(), ctx.Err(), s.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *server) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.ep.BaseURL+"/readyz", nil)
	req.Header.Set("User-Agent", UserAgent)
	resp, err := s.ep.HTTP.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.TrimSpace(string(b)) == "ok"
}

// tlsFromKubeconfig reads the server URL and the admin client TLS
// configuration from the kubeconfig the example writes.
func tlsFromKubeconfig(path string) (string, *tls.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return "", nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return "", nil, err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return "", nil, err
	}
	return cfg.Host, tlsCfg, nil
}

func endpointFor(kubeconfig string, name func() string) (*Endpoint, error) {
	host, tlsCfg, err := tlsFromKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return &Endpoint{Name: name, BaseURL: host, HTTP: NewHTTPClient(tlsCfg)}, nil
}

// etcdProc is a single-member etcd with fsync on (it is killed with -9 and
// must keep what it acknowledged), restartable on its data directory.
type etcdProc struct {
	proc
	url string
}

func newEtcd(t testing.TB) *etcdProc {
	t.Helper()
	bin := binaries.EtcdBinary(t)
	dir := t.TempDir()
	cp, pp := freePort(t), freePort(t)
	client := fmt.Sprintf("http://127.0.0.1:%d", cp)
	peer := fmt.Sprintf("http://127.0.0.1:%d", pp)
	e := &etcdProc{url: client, proc: proc{name: "etcd", bin: bin, log: filepath.Join(dir, "etcd.log"), args: []string{
		"--name=rb", "--data-dir=" + filepath.Join(dir, "data"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=rb=" + peer, "--initial-cluster-state=new", "--log-level=warn",
	}}}
	t.Cleanup(e.kill)
	if err := e.startAndWait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *etcdProc) startAndWait(ctx context.Context) error {
	if err := e.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if e.exited() {
			return fmt.Errorf("etcd exited:\n%s", e.tail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"health":"true"`) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd not healthy: %v\n%s", ctx.Err(), e.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
