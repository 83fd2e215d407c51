package kubeflags

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/rest"
	"github.com/spf13/pflag"
)

// serverFlags is a flag set as a server built on annex has it: kube's
// flags, bound to a Builder, and the Options to Apply.
func serverFlags(t *testing.T) (*annex.Builder, *pflag.FlagSet, *Options) {
	t.Helper()
	b := &annex.Builder{}
	o := &Options{}
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	o.AddFlags(fs, b)
	return b, fs, o
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
// here are refused by Apply with the reason, never ignored.
func TestSampleAPIServerFlagChecklist(t *testing.T) {
	t.Parallel()
	_, fs, _ := serverFlags(t)
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
		{"--storage-backend=etcd3", "etcd3 needs --etcd-servers"},
		{"--storage-backend=postgres", "postgres needs --postgres-dsn"},
		{"--postgres-dsn=postgres://u:hunter2@db/annex", "--postgres-dsn: has no effect without --storage-backend=postgres"},
		{"--secure-port=0", "--secure-port 0 must be between 1 and 65535, inclusive. It cannot be turned off with 0"},
		{"--secure-port=70000", "--secure-port 70000 must be between 1 and 65535"},
		{"--etcd-prefix=/x", "--etcd-prefix: has no effect without --etcd-servers"},
		{"--storage-media-type=application/vnd.kubernetes.protobuf", "objects are stored as application/json"},
		{"--enable-admission-plugins=AlwaysPullImages", `plugin "AlwaysPullImages" is unknown`},
		{"--tls-min-version=VersionTLS9", `unknown tls version "VersionTLS9"`},
		{"--tls-cipher-suites=TLS_NOPE", "Cipher suite TLS_NOPE not supported"},
		{"--watch-cache-sizes=environments", "invalid value of watch cache size: environments"},
		{"--kubeconfig=/k", "--kubeconfig: has no effect without --delegated-auth"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			t.Parallel()
			b, fs, o := serverFlags(t)
			if err := fs.Parse([]string{tc.arg}); err != nil {
				t.Fatal(err)
			}
			b.Resources = append(b.Resources, widgets())
			err := o.Apply(b)
			name := strings.SplitN(strings.TrimPrefix(tc.arg, "--"), "=", 2)[0]
			if err == nil || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s: Apply error %v, want the flag named with %q", tc.arg, err, tc.reason)
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
		b, fs, o := serverFlags(t)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := o.Apply(b); err != nil {
			t.Fatal(err)
		}
		b.Resources = append(b.Resources, widgets())
		ts := annextest.Start(t, *b)
		base := ts.URL + "/apis/test.annex.dev/v1/namespaces/ns/widgets"
		owner := strings.Repeat("o", 1500)
		for i := range 100 {
			body := `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w` + strconv.Itoa(i) + `"},"spec":{"owner":"` + owner + `"}}`
			if code, out := do(t, ts.Client(), "POST", base, body); code != 201 {
				t.Fatalf("create: %d %s", code, out)
			}
		}
		req, _ := http.NewRequest("GET", base, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := ts.Client().Do(req)
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
// a server's flag set: each is accepted and the server serves.
func TestSampleAPIServerDeploymentArgs(t *testing.T) {
	t.Parallel()
	b, fs, o := serverFlags(t)
	args := readLines(t, "testdata/sample-apiserver-v0.37.2-deployment-args.txt")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if err := o.Apply(b); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	// --etcd-servers made etcd the default store; no etcd runs here (the
	// e2e module runs these flags against a real one), so the server
	// serves from bbolt.
	if b.Storage.Open == nil {
		t.Fatal("--etcd-servers did not set Storage.Open")
	}
	b.Storage.Open = nil
	b.Resources = append(b.Resources, widgets())
	ts := annextest.Start(t, *b)
	if code, _ := do(t, ts.Client(), "GET", ts.URL+"/readyz", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}
}

func widgets() rest.Resource {
	return rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "widgets", Kind: "Widget", Namespaced: true}
}

// do sends a request as kubectl would (Accept and User-Agent set) and
// returns the status and body.
func do(t testing.TB, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/annex-test")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
