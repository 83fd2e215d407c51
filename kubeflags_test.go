package annex

import (
	"bufio"
	"crypto/tls"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/storage/etcd"
)

// serverFlags is a flag set as a server built on annex has it (the
// environments example's): the Builder's flags and etcd's.
func serverFlags(t *testing.T) (*Builder, *pflag.FlagSet) {
	t.Helper()
	b := &Builder{}
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	b.AddPFlags(fs)
	var ec etcd.Config
	gfs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	ec.AddFlags(gfs)
	fs.AddGoFlagSet(gfs)
	return b, fs
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestSampleAPIServerFlagChecklist: every flag of k8s.io/sample-apiserver
// v0.37.2's --help exists here, with its name; the ones that mean nothing
// here are refused at Build with the reason, never ignored.
func TestSampleAPIServerFlagChecklist(t *testing.T) {
	t.Parallel()
	_, fs := serverFlags(t)
	for _, name := range readLines(t, "testdata/sample-apiserver-v0.37.2-flags.txt") {
		if name == "help" {
			continue // pflag's own
		}
		if fs.Lookup(name) == nil {
			t.Errorf("--%s does not exist", name)
		}
	}
	for _, tc := range []struct{ arg, reason string }{
		{"--egress-selector-config-file=/x", "no egress selector"},
		{"--lease-reuse-duration-seconds=30", "no object here is stored with an etcd lease"},
		{"--etcd-count-metric-poll-period=1m", "not polled"},
		{"--emulated-version=kube=1.32", "serves one version"},
		{"--min-compatibility-version=kube=1.32", "serves one version"},
		{"--etcd-servers-overrides=/pods#http://e:2379", "one etcd cluster"},
		{"--feature-gates=kube:WatchList=true", "unrecognized feature gate: kube:WatchList=true"},
		{"--feature-gates=APIResponseCompression=maybe", "invalid value of APIResponseCompression=maybe"},
		{"--enable-garbage-collector=false", "cannot be false here"},
		{"--storage-backend=etcd2", `"etcd2" is not supported`},
		{"--storage-media-type=application/vnd.kubernetes.protobuf", "objects are stored as application/json"},
		{"--enable-admission-plugins=AlwaysPullImages", `plugin "AlwaysPullImages" is unknown`},
		{"--tls-min-version=VersionTLS9", `unknown tls version "VersionTLS9"`},
		{"--tls-cipher-suites=TLS_NOPE", "Cipher suite TLS_NOPE not supported"},
		{"--watch-cache-sizes=environments", "invalid value of watch cache size: environments"},
		{"--kubeconfig=/k", "--kubeconfig: has no effect without --delegated-auth"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			t.Parallel()
			b, fs := serverFlags(t)
			if err := fs.Parse([]string{tc.arg}); err != nil {
				t.Fatal(err)
			}
			b.DataDir = t.TempDir()
			b.Resources = append(b.Resources, widgets())
			_, err := b.Build()
			name := strings.SplitN(strings.TrimPrefix(tc.arg, "--"), "=", 2)[0]
			if err == nil || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s: Build error %v, want the flag named with %q", tc.arg, err, tc.reason)
			}
		})
	}
}

// TestFeatureGateResponseCompression drives the one feature gate over
// HTTPS: with APIResponseCompression on (the default) a LIST larger than
// 128 KiB is gzipped for a client that accepts gzip, with it off it is not.
func TestFeatureGateResponseCompression(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		gzip bool
	}{{nil, true}, {[]string{"--feature-gates=kube:APIResponseCompression=true"}, true}, {[]string{"--feature-gates=APIResponseCompression=false"}, false}} {
		b, fs := serverFlags(t)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		b.Resources = append(b.Resources, widgets())
		ts := startServer(t, *b)
		base := ts.srv.URL() + "/apis/test.annex.dev/v1/namespaces/ns/widgets"
		owner := strings.Repeat("o", 1500)
		for i := range 100 {
			body := `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w` + strconv.Itoa(i) + `"},"spec":{"owner":"` + owner + `"}}`
			if code, out := do(t, ts.admin, "POST", base, body); code != 201 {
				t.Fatalf("create: %d %s", code, out)
			}
		}
		req, _ := http.NewRequest("GET", base, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := ts.admin.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzip || resp.StatusCode != 200 {
			t.Fatalf("%v: %d, Content-Encoding %q (%d bytes), want gzip %v", tc.args, resp.StatusCode, resp.Header.Get("Content-Encoding"), n, tc.gzip)
		}
		if !tc.gzip && n < 150_000 || tc.gzip && n > 50_000 {
			t.Fatalf("%v: %d bytes on the wire", tc.args, n)
		}
	}
}

// TestSampleAPIServerDeploymentArgs runs the arguments of
// k8s.io/sample-apiserver's published Deployment (pinned, testdata) against
// a server's flag set: each is accepted.
func TestSampleAPIServerDeploymentArgs(t *testing.T) {
	t.Parallel()
	b, fs := serverFlags(t)
	args := readLines(t, "testdata/sample-apiserver-v0.37.2-deployment-args.txt")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	ts := startServer(t, *b)
	if code, _ := do(t, ts.admin, "GET", ts.srv.URL()+"/readyz", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}
}

// TestKubeServingFlags drives the serving flags over real TLS: the minimum
// version and ciphers refuse a client outside them, --disable-http2-serving
// offers HTTP/1.1 only, an SNI certificate is served for its name and the
// default one otherwise, --cert-dir is where certificates are generated.
func TestKubeServingFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A certificate of its own for sni.example.com, from another CA.
	sniDir := filepath.Join(dir, "sni")
	ca, err := certs.EnsureCA(certs.CAConfig{Dir: sniDir, Name: "sni-ca"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.EnsureServingCert(certs.ServingConfig{Dir: sniDir, Hosts: []string{"sni.example.com"}}); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "elsewhere")
	ts := startServer(t, Builder{
		Serving: Serving{CertDir: certDir, TLSMinVersion: tls.VersionTLS13, DisableHTTP2: true, SNICertKeys: []SNICertKey{{CertFile: filepath.Join(sniDir, "serving.crt"), KeyFile: filepath.Join(sniDir, "serving.key"), Names: []string{"*.example.com"}}}},
	})
	if _, err := os.Stat(filepath.Join(certDir, "serving.crt")); err != nil {
		t.Fatalf("--cert-dir: %v", err)
	}
	addr := strings.TrimPrefix(ts.srv.URL(), "https://")
	handshake := func(cfg *tls.Config) (tls.ConnectionState, error) {
		cfg.InsecureSkipVerify = true // the chain is not what is checked here
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer c.Close()
		return c.ConnectionState(), nil
	}
	if _, err := handshake(&tls.Config{MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("a TLS 1.2 client was served with --tls-min-version=VersionTLS13")
	}
	st, err := handshake(&tls.Config{NextProtos: []string{"h2", "http/1.1"}})
	if err != nil || st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("ALPN with --disable-http2-serving: %q, %v", st.NegotiatedProtocol, err)
	}
	if st, err := handshake(&tls.Config{ServerName: "api.example.com"}); err != nil || !slices.Contains(st.PeerCertificates[0].DNSNames, "sni.example.com") {
		t.Errorf("SNI api.example.com: %v, %v", err, st.PeerCertificates)
	}
	if st, err := handshake(&tls.Config{ServerName: "localhost"}); err != nil || slices.Contains(st.PeerCertificates[0].DNSNames, "sni.example.com") {
		t.Errorf("SNI localhost got the SNI certificate: %v", err)
	}
	if code, _ := do(t, ts.admin, "GET", ts.srv.URL()+"/readyz", ""); code != 200 {
		t.Fatalf("readyz %d", code)
	}
}

// TestShutdownSendRetryAfter: with --shutdown-send-retry-after, a request
// arriving while one is still in flight during shutdown gets 429 with
// Retry-After and Connection: close, and the one in flight completes.
func TestShutdownSendRetryAfter(t *testing.T) {
	t.Parallel()
	d := &drain{retryAfter: true}
	release := make(chan struct{})
	h := d.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.WriteHeader(200)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan int)
	go func() {
		resp, err := http.Get(srv.URL + "/apis/g/v1/things")
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	for d.inflight.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	d.draining.Store(true)
	resp, err := http.Get(srv.URL + "/apis/g/v1/things")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("request while draining: %d %v", resp.StatusCode, resp.Header)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the request in flight: %d", code)
	}
	waitFor(&d.inflight, time.Second)
	if d.inflight.Load() != 0 {
		t.Fatal("in flight count not back to 0")
	}
}

// TestGoAwayChance: at the maximum chance, some HTTP/2 responses carry
// Connection: close (Go's server then sends GOAWAY), none at zero.
func TestGoAwayChance(t *testing.T) {
	t.Parallel()
	for _, chance := range []float64{0, 0.02} {
		d := &drain{goaway: chance}
		h := d.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		closed := 0
		for range 2000 {
			r := httptest.NewRequest("GET", "/apis/g/v1/things", nil)
			r.ProtoMajor = 2
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Header().Get("Connection") == "close" {
				closed++
			}
		}
		if (chance == 0) != (closed == 0) || closed > 100 {
			t.Errorf("chance %v: %d of 2000 told to go away", chance, closed)
		}
	}
}
