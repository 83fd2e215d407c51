package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/internal/kubectltest"
)

// started is a running example server.
type started struct {
	url     string
	dataDir string
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the example with args on a loopback port until the test ends.
func start(t *testing.T, args ...string) *started {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logs := &syncBuffer{}
	base := []string{"--metric-resolution", "1s"}
	if !slices.Contains(args, "--tls-cert-file") { // else nothing goes in a data dir: the flag is an error
		base = append(base, "--data-dir", dir)
	}
	a, err := setup(append(base, args...), logs, ln)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return &started{url: a.srv.URL(), dataDir: dir, logs: logs}
}

// insecureGet fetches path anonymously (health paths allow it).
func (s *started) insecureGet(t *testing.T, path string) (int, string) {
	t.Helper()
	return s.getAs(t, path, nil)
}

// getAs fetches path presenting cert (nil: none) as the front proxy does,
// for user system:kube-aggregator in group system:masters.
func (s *started) getAs(t *testing.T, path string, cert *tls.Certificate) (int, string) {
	t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cert != nil {
		req.Header.Set("X-Remote-User", "system:kube-aggregator")
		req.Header.Set("X-Remote-Group", "system:masters")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond every 100ms until it holds or 20s pass.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 20s; last: %s", what, last)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for an event
	}
}

func TestStandaloneKubectl(t *testing.T) {
	s := start(t, "--simulation-file", "testdata/cluster.yaml")
	waitFor(t, "readyz", func() (bool, string) {
		code, body := s.insecureGet(t, "/readyz")
		return code == 200, body
	})
	k := kubectltest.New(t, filepath.Join(s.dataDir, "kubeconfig"))
	clusterFile, err := filepath.Abs("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		wants []string
		fails bool
	}{
		{name: "get_nodemetrics_table", args: []string{"get", "nodemetrics"},
			wants: []string{"NAME     CPU     MEMORY   WINDOW", "node-1   250m    1536Mi", "node-2   1500m   3Gi"}},
		{name: "get_nodemetrics_label_selector", args: []string{"get", "nodemetrics", "-l", "topology.kubernetes.io/zone=zone-b", "-o", "name"},
			wants: []string{"nodemetrics.metrics.k8s.io/node-2"}},
		{name: "get_podmetrics_all_namespaces", args: []string{"get", "podmetrics", "-A"},
			wants: []string{"default       web-0       2m,1m   12Mi,4Mi", "kube-system   coredns-0   3m      20Mi"}},
		{name: "raw_node_list", args: []string{"get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"},
			wants: []string{`{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[`, `"usage":{"cpu":"250m","memory":"1536Mi"}`}},
		{name: "raw_pod", args: []string{"get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/db-0"},
			wants: []string{`"containers":[{"name":"postgres","usage":{"cpu":"40m","memory":"256Mi"}}]`}},
		{name: "create_is_not_allowed", args: []string{"create", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes", "-f", clusterFile}, fails: true,
			wants: []string{"MethodNotAllowed"}},
		{name: "delete_is_not_allowed", args: []string{"delete", "nodemetrics", "node-1"}, fails: true,
			wants: []string{"the server does not allow this method on the requested resource"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := k.Run(c.args...)
			if ok == c.fails {
				t.Fatalf("kubectl %v: succeeded %v, want failure %v:\n%s", c.args, ok, c.fails, out)
			}
			kubectltest.WantContains(t, c.name, out, c.wants...)
		})
	}
}

// clusterStandIn is a loopback stand-in for the few kube-apiserver
// endpoints a delegated server reads at start: the authentication
// ConfigMap and SelfSubjectAccessReviews.
type clusterStandIn struct {
	srv         *httptest.Server
	configMap   map[string]string // nil: 403
	deniedReviw map[string]bool   // resources SelfSubjectAccessReviews deny
}

func newClusterStandIn(t *testing.T, frontProxyCA []byte, mutate func(*clusterStandIn)) *clusterStandIn {
	t.Helper()
	c := &clusterStandIn{configMap: map[string]string{
		"client-ca-file":                     string(frontProxyCA),
		"requestheader-client-ca-file":       string(frontProxyCA),
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}, deniedReviw: map[string]bool{}}
	if mutate != nil {
		mutate(c)
	}
	c.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication":
			if c.configMap == nil {
				w.WriteHeader(403)
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"configmaps \"extension-apiserver-authentication\" is forbidden"}`)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "data": c.configMap})
		case r.URL.Path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
			var in struct {
				Spec struct{ ResourceAttributes struct{ Resource string } }
			}
			_ = json.NewDecoder(r.Body).Decode(&in)
			w.WriteHeader(201)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": map[string]any{"allowed": !c.deniedReviw[in.Spec.ResourceAttributes.Resource]}})
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// kubeconfig writes a token kubeconfig for the stand-in.
func (c *clusterStandIn) kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	ca := certs.EncodeCert(c.srv.Certificate())
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority-data: %q}
users:
- name: u
  user: {token: sa-token}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, c.srv.URL, encodeB64(ca))
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSelfDiagnosis removes each piece a server behind kube-aggregator
// needs, in turn, and checks that /readyz fails naming it.
func TestSelfDiagnosis(t *testing.T) {
	ca, err := certs.NewCA(certs.CAConfig{Name: "front-proxy-ca"})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := ca.Issue(certs.Request{CommonName: "front-proxy-client"})
	if err != nil {
		t.Fatal(err)
	}
	proxyCert := proxy.TLSCertificate()
	// A serving certificate without the service name, for one case.
	badDir := t.TempDir()
	servingCA, err := certs.NewCA(certs.CAConfig{Name: "serving-ca"})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := servingCA.Issue(certs.Request{CommonName: "metrics-server", DNSNames: []string{"localhost", "metrics-server"}})
	if err != nil {
		t.Fatal(err)
	}
	badCert, badKey := filepath.Join(badDir, "tls.crt"), filepath.Join(badDir, "tls.key")
	if err := errors.Join(os.WriteFile(badCert, bad.CertPEM, 0o600), os.WriteFile(badKey, bad.KeyPEM, 0o600)); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		mutate func(*clusterStandIn)
		args   []string
		check  string // the failing readyz check; "" means ready
		wants  []string
		// reachable: the front proxy still authenticates, so /readyz/<check>
		// can be read as system:masters.
		reachable bool
	}{
		{name: "everything_present"},
		{name: "no_request_header_ca", mutate: func(c *clusterStandIn) { delete(c.configMap, "requestheader-client-ca-file") },
			check: "delegated-authentication", wants: []string{"requestheader-client-ca-file", "--requestheader-client-ca-file"}},
		{name: "configmap_forbidden", mutate: func(c *clusterStandIn) { c.configMap = nil },
			check: "delegated-authentication", wants: []string{"forbidden", "extension-apiserver-authentication-reader"}},
		{name: "tokenreview_denied", mutate: func(c *clusterStandIn) { c.deniedReviw["tokenreviews"] = true },
			check: "delegation-permissions", wants: []string{"may not create tokenreviews.authentication.k8s.io", "system:auth-delegator"}, reachable: true},
		{name: "subjectaccessreview_denied", mutate: func(c *clusterStandIn) { c.deniedReviw["subjectaccessreviews"] = true },
			check: "delegation-permissions", wants: []string{"may not create subjectaccessreviews.authorization.k8s.io", "system:auth-delegator"}, reachable: true},
		{name: "serving_cert_without_service_name", args: []string{"--tls-cert-file", badCert, "--tls-private-key-file", badKey},
			check: "serving-certificate-name", wants: []string{"not valid for metrics-server.annex-metrics.svc"}, reachable: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cluster := newClusterStandIn(t, ca.CertPEM, c.mutate)
			s := start(t, append([]string{"--delegated-auth", "--authentication-kubeconfig", cluster.kubeconfig(t), "--authorization-kubeconfig", cluster.kubeconfig(t),
				"--service", "metrics-server.annex-metrics", "--simulation-file", "testdata/cluster.yaml"}, c.args...)...)
			if c.check == "" {
				waitFor(t, "readyz", func() (bool, string) {
					code, body := s.insecureGet(t, "/readyz?verbose")
					return code == 200, body
				})
				return
			}
			// /readyz fails naming the check (anonymous access, as a kubelet
			// probe), and the log gives the reason: the start-up
			// self-diagnosis, the ConfigMap reader's own log, and the failed
			// probe's warning.
			waitFor(t, "/readyz failing with [-]"+c.check, func() (bool, string) {
				code, body := s.insecureGet(t, "/readyz?verbose")
				return code == 500 && strings.Contains(body, "[-]"+c.check+" failed"), body
			})
			waitFor(t, "the log naming the problem", func() (bool, string) {
				logs := s.logs.String()
				for _, w := range c.wants {
					if !strings.Contains(logs, w) {
						return false, "lacks " + w + ":\n" + logs
					}
				}
				return true, ""
			})
			if c.reachable {
				// With the front proxy working, /readyz/<check> answers the reason.
				// (Polled: the front-proxy CA is read from the ConfigMap
				// asynchronously at start.)
				waitFor(t, "/readyz/"+c.check+" answering the reason", func() (bool, string) {
					code, body := s.getAs(t, "/readyz/"+c.check, &proxyCert)
					return code == 500 && strings.Contains(body, c.wants[0]), fmt.Sprint(code, " ", body)
				})
			}
		})
	}
}

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
