package load

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
)

// StartReference runs the reference: k8s.io/sample-apiserver
// (binaries.SampleAPIServerVersion) on its own etcd with fsync on, with a
// kube-apiserver beside it for what it delegates (its authentication
// configuration, SubjectAccessReviews, the namespaces its admission
// watches). All three are built from the Go module proxy into the binaries
// cache on first use. The target is its flunders in the default namespace;
// the footprint counts sample-apiserver and its etcd (not the
// kube-apiserver, which annex does not need). stop ends every process.
func StartReference(ctx context.Context, dir string) (t Target, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	build := func(m binaries.Module) string {
		if err != nil {
			return ""
		}
		var bin string
		bin, err = binaries.Build(ctx, m)
		return bin
	}
	etcdBin, kasBin, sampleBin := build(binaries.EtcdModule()), build(binaries.KubeAPIServerModule()), build(binaries.SampleAPIServerModule())
	if err != nil {
		return t, stop, err
	}
	etcd, err := binaries.StartEtcdProcess(etcdBin, dir, binaries.EtcdOptions{Fsync: true})
	if err != nil {
		return t, stop, err
	}
	stops = append(stops, func() { _ = etcd.Stop() })

	ca, err := certs.NewCA(certs.CAConfig{Name: "annexload-ca"})
	if err != nil {
		return t, stop, err
	}
	serving, err := ca.Issue(certs.Request{CommonName: "localhost", DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return t, stop, err
	}
	admin, err := ca.Issue(certs.Request{CommonName: "annexload-admin", Organization: []string{"system:masters"}})
	if err != nil {
		return t, stop, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return t, stop, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return t, stop, err
	}
	files := map[string][]byte{"ca.crt": ca.CertPEM, "serving.crt": serving.CertPEM, "serving.key": serving.KeyPEM,
		"sa.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})}
	for name, b := range files {
		if err = os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return t, stop, err
		}
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	tlsCfg := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{admin.TLSCertificate()}, MinVersion: tls.VersionTLS12}

	kasPort, err := freePort()
	if err != nil {
		return t, stop, err
	}
	kasURL := "https://127.0.0.1:" + strconv.Itoa(kasPort)
	kas, _, err := startProcess(dir, "kube-apiserver", kasBin,
		"--etcd-servers="+etcd.ClientURL, "--etcd-prefix=/kube-registry",
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(kasPort),
		"--cert-dir="+file("kas-certs"), "--tls-cert-file="+file("serving.crt"), "--tls-private-key-file="+file("serving.key"),
		"--client-ca-file="+file("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+file("sa.key"),
		"--service-account-signing-key-file="+file("sa.key"), "--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC", "--enable-priority-and-fairness=false", "--profiling=false")
	if err != nil {
		return t, stop, err
	}
	stops = append(stops, kas)
	if err = waitOK(tlsCfg, kasURL+"/readyz", 3*time.Minute); err != nil {
		return t, stop, fmt.Errorf("kube-apiserver: %w (log: %s)", err, file("kube-apiserver.log"))
	}
	kubeconfig := file("admin.kubeconfig")
	if err = certs.WriteKubeconfig(kubeconfig, certs.Kubeconfig{Server: kasURL, CAPEM: ca.CertPEM,
		ClientCertPEM: admin.CertPEM, ClientKeyPEM: admin.KeyPEM, ClusterName: "annexload", UserName: "admin"}); err != nil {
		return t, stop, err
	}

	port, err := freePort()
	if err != nil {
		return t, stop, err
	}
	started := time.Now()
	sample, samplePID, err := startProcess(dir, "sample-apiserver", sampleBin,
		"--etcd-servers="+etcd.ClientURL,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+file("serving.crt"), "--tls-private-key-file="+file("serving.key"),
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--client-ca-file="+file("ca.crt"), "--authentication-skip-lookup", "--profiling=false",
		// Its MutatingAdmissionPolicy plugin watches the v1 API, which
		// kube-apiserver 1.33 does not serve: it would never be ready.
		"--disable-admission-plugins=MutatingAdmissionPolicy")
	if err != nil {
		return t, stop, err
	}
	stops = append(stops, sample)
	t = Target{Name: "sample-apiserver", TLS: tlsCfg,
		Collection: "https://127.0.0.1:" + strconv.Itoa(port) + "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
		PIDs:       []int{samplePID, etcd.PID()},
		Object: func(name string) []byte {
			return []byte(`{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"` + name +
				`","labels":{"app":"load","team":"payments"}},"spec":{"reference":"payments-team"}}`)
		}}
	if err = waitReady(t); err != nil {
		return t, stop, fmt.Errorf("sample-apiserver: %w (log: %s)", err, file("sample-apiserver.log"))
	}
	t.Ready = time.Since(started)
	return t, stop, nil
}

// startProcess starts bin with args, its output in dir/<name>.log, and
// returns what stops it (SIGTERM, then SIGKILL after 20 s) and its pid.
func startProcess(dir, name, bin string, args ...string) (func(), int, error) {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, 0, err
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}, cmd.Process.Pid, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitOK polls url until it answers 200.
func waitOK(cfg *tls.Config, url string, d time.Duration) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(d)
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %v", url, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
