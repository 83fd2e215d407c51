package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/annexapi/annex/kubeclient"
)

// StartAnnex builds the environments example (go build, from this
// module's replace of the library) into dir, runs it fresh on bbolt with
// fsync in dir, and returns its target; stop ends the process.
func StartAnnex(ctx context.Context, dir string) (t Target, stop func(), err error) {
	return StartAnnexWith(ctx, dir)
}

// StartAnnexWith is StartAnnex with extra flags (--etcd-servers); started
// again on the same dir, it restarts on the data already there.
func StartAnnexWith(ctx context.Context, dir string, flags ...string) (t Target, stop func(), err error) {
	bin := filepath.Join(dir, "environments")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/annexapi/annex/examples/environments")
	if out, err := build.CombinedOutput(); err != nil {
		return t, nil, fmt.Errorf("go build: %v: %s", err, out)
	}
	return StartAnnexBin(ctx, dir, bin, flags...)
}

// StartAnnexBin is StartAnnexWith with the environments example already
// built at bin (another build of the library: an old and a new side by
// side).
func StartAnnexBin(ctx context.Context, dir, bin string, flags ...string) (t Target, stop func(), err error) {
	port, err := freePort()
	if err != nil {
		return t, nil, err
	}
	data := filepath.Join(dir, "data")
	// On a restart the kubeconfig of the last run names its port: wait for
	// the new one.
	_ = os.Remove(filepath.Join(data, "kubeconfig"))
	started := time.Now()
	stop, pid, err := startProcess(dir, "environments", bin,
		append([]string{"--data-dir", data, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port)}, flags...)...)
	if err != nil {
		return t, nil, err
	}
	kubeconfig := filepath.Join(data, "kubeconfig")
	deadline := time.Now().Add(30 * time.Second)
	var cfg *kubeclient.Config
	for {
		if cfg, err = kubeclient.LoadKubeconfig(kubeconfig, ""); err == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return t, nil, fmt.Errorf("no kubeconfig from the example: %w", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	tc, err := tlsConfig(cfg)
	if err != nil {
		stop()
		return t, nil, err
	}
	// v1beta1 is the storage version: no conversion on any path.
	t = Target{Name: "annex", Host: cfg.Host, Collection: cfg.Host + "/apis/platform.example.com/v1beta1/namespaces/default/environments", TLS: tc,
		PIDs: []int{pid}, Object: environment}
	if err := waitReady(t); err != nil {
		stop()
		return t, nil, err
	}
	t.Ready = time.Since(started)
	return t, stop, nil
}

func tlsConfig(cfg *kubeclient.Config) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, errors.New("the kubeconfig has no CA")
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// waitReady polls the collection until it answers (a page of one: a
// large collection's full list would be the measure).
func waitReady(t Target) error {
	c := t.client()
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, err := do(c, "GET", t.Collection+"?limit=1", nil)
		if err == nil && code == 200 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready: %d %v", code, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// WaitReadyz polls the server's /readyz (every readiness check, the watch
// caches' initial lists among them) until it answers 200, for at most
// limit, and returns the time from the server's start (t.Ready counts up
// to the collection's first answer).
func (t Target) WaitReadyz(limit time.Duration) (time.Duration, error) {
	c := t.client()
	defer c.CloseIdleConnections()
	start := time.Now()
	for {
		code, b, err := do(c, "GET", t.Host+"/readyz", nil)
		if err == nil && code == 200 {
			return t.Ready + time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("/readyz after %v: %d %v %.300s", limit, code, err, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CreateOne creates the object name.
func (t Target) CreateOne(name string) error {
	c := t.client()
	defer c.CloseIdleConnections()
	code, b, err := do(c, "POST", t.Collection, t.Object(name))
	return want(code, 201, err, b)
}
