package main

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex/internal/kubectltest"
)

// TestKubectlImpersonation: kubectl --as sends Impersonate-User beside its
// ordinary headers (User-Agent, Accept, Accept-Encoding, ...); only the
// Impersonate-* headers are impersonation's business.
func TestKubectlImpersonation(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))

	out, ok := k.Run("--as=bob", "get", "environments")
	if ok {
		t.Fatalf("bob, who has no role, listed environments:\n%s", out)
	}
	// bob has no role, not even discovery: kubectl reports the 403 of its
	// discovery request (it prints no message of its own for it).
	kubectltest.WantContains(t, "--as=bob", out, "Error from server (Forbidden)")
	if strings.Contains(out, "BadRequest") || strings.Contains(out, "impersonation header") {
		t.Errorf("--as=bob refused as a bad request:\n%s", out)
	}
	// With a group that may do anything, the impersonated requests succeed.
	manifest, err := os.ReadFile("environment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kubectltest.WantContains(t, "create --as", k.MustRun("--as=bob", "--as-group=system:masters", "create", "-f", k.WriteFile("env.yaml", string(manifest))),
		"environment.platform.example.com/checkout-staging created")
	kubectltest.WantContains(t, "--as-group", k.MustRun("--as=bob", "--as-group=system:masters", "get", "environments"),
		"checkout-staging", "staging", "payments-team")
}

// clientHeaders are the headers kubectl and client-go send on every request.
var clientHeaders = http.Header{
	"User-Agent":      {"kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd"},
	"Accept":          {"application/json, */*"},
	"Accept-Encoding": {"gzip"},
	"Kubectl-Command": {"kubectl get"},
}

// adminHTTP is an HTTP client with the example's admin client certificate.
func adminHTTP(t *testing.T, dataDir string) *http.Client {
	t.Helper()
	dir := filepath.Join(dataDir, "certs")
	caPEM, err := os.ReadFile(filepath.Join(dir, "environments-serving-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// do sends a request with a real client's headers plus extra ones and
// returns the status code and the (decompressed) body.
func do(t *testing.T, c *http.Client, method, url, contentType string, body []byte, extra http.Header) (int, string) {
	t.Helper()
	code, b, err := send(c, method, url, contentType, body, extra)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// send is do for any goroutine: it returns the error rather than failing.
func send(c *http.Client, method, url, contentType string, body []byte, extra http.Header) (int, string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, "", err
	}
	for k, vs := range clientHeaders {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: reading body: %w", method, url, err)
	}
	if resp.Header.Get("Content-Encoding") == "gzip" && len(b) > 0 {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return 0, "", fmt.Errorf("%s %s: %w", method, url, err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			return 0, "", fmt.Errorf("%s %s: gunzip: %w", method, url, err)
		}
	}
	return resp.StatusCode, string(b), nil
}

// TestRawImpersonationWithClientHeaders: the same over raw HTTP, with
// Impersonate-User next to the headers every client sends.
func TestRawImpersonationWithClientHeaders(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	c := adminHTTP(t, dataDir)
	list := url + "/apis/platform.example.com/v1alpha1/namespaces/default/environments"
	for _, tc := range []struct {
		name   string
		header http.Header
		code   int
		want   string
	}{
		{"user_without_role", http.Header{"Impersonate-User": {"bob"}}, 403, `User \"bob\" cannot list resource \"environments\"`},
		{"user_and_masters_group", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}, 200, `"kind":"EnvironmentList"`},
		{"unknown_impersonate_header", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Usr": {"x"}}, 400, `unknown impersonation header`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, c, "GET", list, "", nil, tc.header)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("got %d %s, want %d with %q", code, body, tc.code, tc.want)
			}
		})
	}
}

// createEnvironment creates the example manifest's environment as admin.
func createEnvironment(t *testing.T, c *http.Client, url string) {
	t.Helper()
	const env = `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"checkout-staging","namespace":"default"},"spec":{"owner":"payments-team","tier":"staging","replicas":3}}`
	code, body := do(t, c, "POST", url+"/apis/platform.example.com/v1alpha1/namespaces/default/environments", "application/json", []byte(env), nil)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
}

// jsonPatchOps is a JSON patch of n operations that all apply.
func jsonPatchOps(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"op":"test","path":"/spec/owner","value":"payments-team"}`)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// TestJSONPatchOperationLimit: as kube-apiserver, a JSON patch of more than
// 10,000 operations is a 413 with kube's message; 10,000 apply.
func TestJSONPatchOperationLimit(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	c := adminHTTP(t, dataDir)
	createEnvironment(t, c, url)
	obj := url + "/apis/platform.example.com/v1alpha1/namespaces/default/environments/checkout-staging"
	for _, tc := range []struct {
		name string
		ops  int
		code int
		want string
	}{
		{"at_the_limit", 10000, 200, `"owner":"payments-team"`},
		{"over_the_limit", 10001, 413, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001","reason":"RequestEntityTooLarge","code":413}`},
		{"far_over_the_limit", 40000, 413, `The allowed maximum operations in a JSON patch is 10000, got 40000`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, c, "PATCH", obj, "application/json-patch+json", jsonPatchOps(tc.ops), nil)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("got %d %.300s, want %d with %q", code, body, tc.code, tc.want)
			}
		})
	}
}

// TestJSONPatchCopyLimit: "copy" operations may grow the document by at most
// 3 MiB, as kube-apiserver's JSONPatchMaxCopyBytes; each copy of /spec into
// itself doubles it, so 17 take a 100-byte spec to 13 MiB (25 would need 3
// GiB).
func TestJSONPatchCopyLimit(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	c := adminHTTP(t, dataDir)
	createEnvironment(t, c, url)
	obj := url + "/apis/platform.example.com/v1alpha1/namespaces/default/environments/checkout-staging"
	var ops []string
	for i := range 17 {
		ops = append(ops, `{"op":"copy","from":"/spec","path":"/spec/c`+string(rune('a'+i))+`"}`)
	}
	code, body := do(t, c, "PATCH", obj, "application/json-patch+json", []byte("["+strings.Join(ops, ",")+"]"), nil)
	if code != 422 || !strings.Contains(body, "exceeding the limit 3145728") {
		t.Errorf("got %d %.300s, want 422 naming the copy limit", code, body)
	}
}

// TestPathSegmentsThatNameNothing: a namespace or name in the path that can
// never name an object is refused with a Status before storage is reached
// (a namespace of ".." was a 500 "invalid key" from storage, as in k8s).
func TestPathSegmentsThatNameNothing(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	c := adminHTTP(t, dataDir)
	createEnvironment(t, c, url)
	g := url + "/apis/platform.example.com/v1alpha1"
	status := func(reason, msg string) string {
		return `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":` + strconv.Quote(msg) + `,"reason":"` + reason + `",`
	}
	for _, tc := range []struct {
		name, method, path string
		code               int
		want               string
	}{
		{"namespace_dotdot_encoded_list", "GET", "/namespaces/%2e%2e/environments", 400, status("BadRequest", `Namespace parameter invalid: "..": may not be '..'`)},
		{"namespace_dotdot_get", "GET", "/namespaces/%2e%2e/environments/checkout-staging", 400, status("BadRequest", `Namespace parameter invalid: "..": may not be '..'`)},
		{"namespace_dot_watch", "GET", "/namespaces/%2e/environments?watch=1", 400, status("BadRequest", `Namespace parameter invalid: ".": may not be '.'`)},
		{"namespace_dotdot_delete", "DELETE", "/namespaces/%2e%2e/environments/x", 400, status("BadRequest", `Namespace parameter invalid: "..": may not be '..'`)},
		{"namespace_dotdot_deletecollection", "DELETE", "/namespaces/%2e%2e/environments", 400, status("BadRequest", `Namespace parameter invalid: "..": may not be '..'`)},
		{"namespace_percent", "GET", "/namespaces/a%25b/environments", 400, status("BadRequest", `Namespace parameter invalid: "a%b": may not contain '%'`)},
		{"namespace_upper_case", "GET", "/namespaces/Default/environments", 400, status("BadRequest", `Namespace parameter invalid: "Default": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`)},
		{"name_dotdot", "GET", "/namespaces/default/environments/%2e%2e", 400, status("BadRequest", `Name parameter invalid: "..": may not be '..'`)},
		{"name_not_a_subdomain_get", "GET", "/namespaces/default/environments/Checkout-Staging", 404, status("NotFound", `environments.platform.example.com "Checkout-Staging" not found`)},
		{"name_not_a_subdomain_delete", "DELETE", "/namespaces/default/environments/a_b", 404, status("NotFound", `environments.platform.example.com "a_b" not found`)},
		{"put_on_collection", "PUT", "/namespaces/default/environments", 405, status("MethodNotAllowed", "the server does not allow this method on the requested resource")},
		{"put_on_all_namespaces", "PUT", "/environments", 405, status("MethodNotAllowed", "the server does not allow this method on the requested resource")},
		{"watch_without_resource", "GET", "/watch", 404, status("NotFound", "the server could not find the requested resource")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, c, tc.method, g+tc.path, "application/json", []byte(`{}`), nil)
			if code != tc.code || !strings.HasPrefix(body, tc.want) {
				t.Errorf("got %d %s\nwant %d %s", code, body, tc.code, tc.want)
			}
		})
	}
}

// TestWatchBookmarkBeforeTimeout: a reflector's watch (allowWatchBookmarks,
// timeoutSeconds) gets one bookmark shortly before its timeout, as from
// kube's watch cache, so it can resume from a fresh resourceVersion; the
// periodic bookmark is once a minute, so a 4-second watch gets no other.
func TestWatchBookmarkBeforeTimeout(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	c := adminHTTP(t, dataDir)
	createEnvironment(t, c, url)
	code, body := do(t, c, "GET", url+"/apis/platform.example.com/v1alpha1/namespaces/default/environments", "", nil, nil)
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("list: %d %v %s", code, err, body)
	}
	req, err := http.NewRequest("GET", url+"/apis/platform.example.com/v1alpha1/namespaces/default/environments?allowWatchBookmarks=true&resourceVersion="+list.Metadata.ResourceVersion+"&timeoutSeconds=4&watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "environments-controller/v0.0.0 (linux/amd64) kubernetes/$Format")
	req.Header.Set("Accept", "application/json, */*")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var bookmarks []time.Duration
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct{ ResourceVersion string } `json:"metadata"`
			} `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			break // the watch timed out and the server ended it
		}
		if ev.Type != "BOOKMARK" {
			t.Fatalf("event %s, want only bookmarks", ev.Type)
		}
		if ev.Object.Metadata.ResourceVersion != list.Metadata.ResourceVersion {
			t.Errorf("bookmark at %s, want %s", ev.Object.Metadata.ResourceVersion, list.Metadata.ResourceVersion)
		}
		bookmarks = append(bookmarks, time.Since(start))
	}
	ended := time.Since(start)
	if len(bookmarks) != 1 {
		t.Fatalf("bookmarks at %v in a 4s watch (ended after %v), want one, about 2s before the end", bookmarks, ended)
	}
	// Due at 2s; the cache looks every 1-1.25s.
	if at := bookmarks[0]; at < 1500*time.Millisecond || at > 3900*time.Millisecond {
		t.Errorf("bookmark after %v, want between 2s and the 4s timeout", at)
	}
}

// TestBodiesNoClientCanDecode: found by FuzzPatch. A number beyond float64
// (1e400) was stored as is, and every later list failed in client-go; it is
// a 400 as in k8s. A JSON patch "test" of the root without a value panicked
// in the patch library (a 500); it is a 422 like any patch that does not
// apply.
func TestBodiesNoClientCanDecode(t *testing.T) {
	t.Parallel()
	dataDir, url, _ := startExample(t)
	c := adminHTTP(t, dataDir)
	createEnvironment(t, c, url)
	col := url + "/apis/platform.example.com/v1alpha1/namespaces/default/environments"
	for _, tc := range []struct {
		name, method, path, ct, body string
		code                         int
		want                         string
	}{
		{"create_with_1e400", "POST", "", "application/json", `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"huge"},"spec":{"owner":"o","replicas":1e400}}`,
			400, `cannot unmarshal number 1e400 into Go value of type float64`},
		{"merge_patch_with_1e400", "PATCH", "/checkout-staging", "application/merge-patch+json", `{"spec":{"x":-1e400}}`,
			400, `cannot unmarshal number -1e400 into Go value of type float64`},
		{"json_patch_test_root_without_value", "PATCH", "/checkout-staging", "application/json-patch+json", `[{"op":"test","path":""}]`,
			422, `the patch could not be applied to the object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, c, tc.method, col+tc.path, tc.ct, []byte(tc.body), nil)
			if code != tc.code || !strings.Contains(body, tc.want) || !strings.HasPrefix(body, `{"kind":"Status"`) {
				t.Errorf("got %d %s, want %d with %q", code, body, tc.code, tc.want)
			}
		})
	}
	code, body := do(t, c, "GET", col, "", nil, nil)
	var list map[string]any
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Errorf("list after: %d %v %s", code, err, body)
	}
}
