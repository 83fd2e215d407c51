package kubeclient_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/kubeclient"
)

func caPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func fastBackoff() kubeclient.Backoff {
	return kubeclient.Backoff{Initial: time.Millisecond, Factor: 1, Jitter: -1, Steps: 3}
}

func newClient(t *testing.T, srv *httptest.Server, mod func(*kubeclient.Config)) *kubeclient.Client {
	t.Helper()
	cfg := kubeclient.Config{Host: srv.URL, CAData: caPEM(srv), BearerToken: "tok", Backoff: fastBackoff()}
	if mod != nil {
		mod(&cfg)
	}
	c, err := kubeclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClient_requests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		handler   func(calls int32, w http.ResponseWriter, r *http.Request)
		post      bool
		wantErr   error
		wantCalls int32
	}{
		{name: "get_decodes", wantCalls: 1, handler: func(_ int32, w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" || r.URL.Path != "/api/v1/x" || r.URL.RawQuery != "a=b" {
				http.Error(w, "bad request "+r.URL.String(), 400)
				return
			}
			_, _ = io.WriteString(w, `{"value":"ok"}`)
		}},
		{name: "post_sends_json", post: true, wantCalls: 1, handler: func(_ int32, w http.ResponseWriter, r *http.Request) {
			var in map[string]string
			if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&in) != nil || in["q"] != "1" {
				http.Error(w, "bad", 400)
				return
			}
			_, _ = io.WriteString(w, `{"value":"ok"}`)
		}},
		{name: "retries_503_then_succeeds", wantCalls: 3, handler: func(n int32, w http.ResponseWriter, _ *http.Request) {
			if n < 3 {
				w.WriteHeader(503)
				return
			}
			_, _ = io.WriteString(w, `{"value":"ok"}`)
		}},
		{name: "retries_429", wantCalls: 2, handler: func(n int32, w http.ResponseWriter, _ *http.Request) {
			if n < 2 {
				w.WriteHeader(429)
				return
			}
			_, _ = io.WriteString(w, `{"value":"ok"}`)
		}},
		{name: "gives_up_after_steps", wantCalls: 3, wantErr: kubeclient.ErrServer, handler: func(_ int32, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(500)
		}},
		{name: "forbidden_not_retried", wantCalls: 1, wantErr: kubeclient.ErrForbidden, handler: func(_ int32, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(403)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps is forbidden","reason":"Forbidden","code":403}`)
		}},
		{name: "not_found", wantCalls: 1, wantErr: kubeclient.ErrNotFound, handler: func(_ int32, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(404)
		}},
		{name: "redirect_not_followed", wantCalls: 1, wantErr: kubeclient.ErrRedirect, handler: func(_ int32, w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/elsewhere" {
				_, _ = io.WriteString(w, `{"value":"followed"}`)
				return
			}
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tt.handler(calls.Add(1), w, r)
			}))
			defer srv.Close()
			c := newClient(t, srv, nil)
			var out struct{ Value string }
			var err error
			if tt.post {
				err = c.Post(t.Context(), "/api/v1/x?a=b", map[string]string{"q": "1"}, &out)
			} else {
				err = c.Get(t.Context(), "/api/v1/x?a=b", &out)
			}
			if tt.wantErr == nil && (err != nil || out.Value != "ok") {
				t.Fatalf("err = %v, out = %+v", err, out)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestClient_status_error_message(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(403)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope","reason":"Forbidden","code":403}`)
	}))
	defer srv.Close()
	err := newClient(t, srv, nil).Get(t.Context(), "/x", nil)
	var se *kubeclient.StatusError
	if !errors.As(err, &se) || se.Code != 403 || se.Status == nil || se.Status.Reason != "Forbidden" {
		t.Fatalf("err = %#v", err)
	}
	if want := "kubeclient: GET /x: 403 nope"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestClient_connection_refused_is_retried_then_fails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	c := newClient(t, srv, nil)
	srv.Close()
	start := time.Now()
	err := c.Get(t.Context(), "/x", nil)
	if err == nil || errors.Is(err, kubeclient.ErrServer) {
		t.Fatalf("err = %v, want a connection error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

func TestClient_wrong_ca_fails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	other, err := certs.NewCA(certs.CAConfig{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv, func(c *kubeclient.Config) { c.CAData = other.CertPEM })
	if err := c.Get(t.Context(), "/x", nil); err == nil || errors.Is(err, kubeclient.ErrNotFound) {
		t.Fatalf("err = %v, want a TLS verification error", err)
	}
}

func TestNew_rejects(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]kubeclient.Config{
		"no_host":    {},
		"http":       {Host: "http://x"},
		"bad_ca":     {Host: "https://x", CAData: []byte("junk")},
		"bad_cert":   {Host: "https://x", CertData: []byte("junk"), KeyData: []byte("junk")},
		"token_file": {Host: "https://x", BearerTokenFile: "/nonexistent/token"},
	} {
		if _, err := kubeclient.New(cfg); !errors.Is(err, kubeclient.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			w.WriteHeader(400)
			return
		}
		fmt.Fprintln(w, `{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a"}}}`)
		w.(http.Flusher).Flush()
		fmt.Fprintln(w, `{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a"}}}`)
	}))
	defer srv.Close()
	w, err := newClient(t, srv, nil).Watch(t.Context(), "/api/v1/configmaps?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var types []string
	for {
		ev, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[ADDED MODIFIED]" {
		t.Errorf("events %v", types)
	}
	srvBad := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(403) }))
	defer srvBad.Close()
	if _, err := newClient(t, srvBad, nil).Watch(t.Context(), "/x?watch=true"); !errors.Is(err, kubeclient.ErrForbidden) {
		t.Errorf("watch 403: %v", err)
	}
}

func TestInClusterConfig(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"value":%q}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("sa-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM(srv), 0o600); err != nil {
		t.Fatal(err)
	}
	u := srv.Listener.Addr().String()
	host, port := u[:len(u)-len(filepath.Ext(u))], ""
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] == ':' {
			host, port = u[:i], u[i+1:]
			break
		}
	}
	env := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
	cfg, err := kubeclient.InClusterConfigWith(kubeclient.InClusterOptions{Dir: dir, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubeclient.New(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Value string }
	if err := c.Get(t.Context(), "/", &out); err != nil || out.Value != "Bearer sa-token" {
		t.Fatalf("err %v, sent %q", err, out.Value)
	}
	if _, err := kubeclient.InClusterConfigWith(kubeclient.InClusterOptions{Dir: dir, Getenv: func(string) string { return "" }}); !errors.Is(err, kubeclient.ErrNotInCluster) {
		t.Errorf("no env: %v", err)
	}
	if _, err := kubeclient.InClusterConfigWith(kubeclient.InClusterOptions{Dir: t.TempDir(), Getenv: func(k string) string { return env[k] }}); !errors.Is(err, kubeclient.ErrInvalidConfig) {
		t.Errorf("no files: %v", err)
	}
}

func TestLoadKubeconfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("CA-FROM-FILE"), 0o600); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	doc := `apiVersion: v1
kind: Config
current-context: main
clusters:
- name: prod
  cluster: {server: "https://prod:6443", certificate-authority: ca.pem}
- name: other
  cluster: {server: "https://other:6443", certificate-authority-data: ` + b64([]byte("CA-DATA")) + `, tls-server-name: kube}
- name: insecure
  cluster: {server: "https://x", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {client-certificate-data: ` + b64([]byte("CERT")) + `, client-key-data: ` + b64([]byte("KEY")) + `}
- name: bot
  user: {token: abc, tokenFile: tok}
contexts:
- name: main
  context: {cluster: prod, user: admin}
- name: second
  context: {cluster: other, user: bot}
- name: bad
  context: {cluster: insecure, user: bot}
- name: dangling
  context: {cluster: nowhere, user: bot}
`
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		context string
		check   func(c *kubeclient.Config) bool
		wantErr error
	}{
		{name: "current_context_with_relative_ca_file", check: func(c *kubeclient.Config) bool {
			return c.Host == "https://prod:6443" && string(c.CAData) == "CA-FROM-FILE" && string(c.CertData) == "CERT" && string(c.KeyData) == "KEY"
		}},
		{name: "named_context_token", context: "second", check: func(c *kubeclient.Config) bool {
			return c.Host == "https://other:6443" && string(c.CAData) == "CA-DATA" && c.ServerName == "kube" && c.BearerToken == "abc" && c.BearerTokenFile == filepath.Join(dir, "tok")
		}},
		{name: "insecure_refused", context: "bad", wantErr: kubeclient.ErrInvalidConfig},
		{name: "missing_cluster", context: "dangling", wantErr: kubeclient.ErrInvalidConfig},
		{name: "missing_context", context: "nope", wantErr: kubeclient.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := kubeclient.LoadKubeconfig(path, tt.context)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("err = %v, config %+v", err, c)
			}
		})
	}
}

// TestInform: a list, the watch's changes, then a 410 from the watch makes
// Inform list again and go on from the new list.
func TestInform(t *testing.T) {
	t.Parallel()
	var lists, watches atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			n := lists.Add(1)
			fmt.Fprintf(w, `{"kind":"NamespaceList","metadata":{"resourceVersion":"%d"},"items":[{"metadata":{"name":"list-%d"}}]}`, n*10, n)
			return
		}
		switch watches.Add(1) {
		case 1:
			if rv := r.URL.Query().Get("resourceVersion"); rv != "10" {
				t.Errorf("first watch from %q, want the list's 10", rv)
			}
			fmt.Fprintln(w, `{"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":"11"}}}`)
			fmt.Fprintln(w, `{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}`)
		default:
			<-r.Context().Done() // the second list's watch stays open
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		kubeclient.Inform(ctx, newClient(t, srv, nil), "/api/v1/namespaces", time.Millisecond, kubeclient.InformHandler{
			Replace: func(items []json.RawMessage) error {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, fmt.Sprintf("replace %d", len(items)))
				if len(seen) == 3 { // the second list: that is all the test needs
					cancel()
				}
				return nil
			},
			Event: func(typ string, _ json.RawMessage) error {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, typ)
				return nil
			},
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Inform did not re-list after 410")
	}
	if got := fmt.Sprint(seen); got != "[replace 1 ADDED replace 1]" {
		t.Errorf("handler saw %s", got)
	}
}

// TestInform_pages: a large collection is listed in pages of 500 (a cluster's
// pods would not fit in one answer), every page's items reach Replace, and
// the watch starts from the list's resourceVersion.
func TestInform_pages(t *testing.T) {
	t.Parallel()
	var limits, conts []string
	watchFrom := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("watch") == "true" {
			watchFrom <- q.Get("resourceVersion")
			<-r.Context().Done()
			return
		}
		limits, conts = append(limits, q.Get("limit")), append(conts, q.Get("continue"))
		next := map[string]string{"": "page 2", "page 2": "page 3", "page 3": ""}[q.Get("continue")]
		fmt.Fprintf(w, `{"kind":"PodList","metadata":{"resourceVersion":"42","continue":%q},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`, next)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	replaced := make(chan int, 1)
	go kubeclient.Inform(ctx, newClient(t, srv, nil), "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", time.Millisecond, kubeclient.InformHandler{
		Replace: func(items []json.RawMessage) error { replaced <- len(items); return nil },
		Event:   func(string, json.RawMessage) error { return nil },
	})
	select {
	case n := <-replaced:
		if n != 6 {
			t.Errorf("Replace got %d items, want the 6 of three pages", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Replace")
	}
	select {
	case rv := <-watchFrom:
		if rv != "42" {
			t.Errorf("watch from %q, want the list's 42", rv)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch")
	}
	if fmt.Sprint(limits) != "[500 500 500]" || fmt.Sprint(conts) != "[ page 2 page 3]" {
		t.Errorf("pages asked with limit %q, continue %q", limits, conts)
	}
}

// TestInform_metadata: a metadata informer asks for PartialObjectMetadata
// on its list and its watch, with the Accept headers client-go's metadata
// client sends (less protobuf), and gets the partial objects.
func TestInform_metadata(t *testing.T) {
	t.Parallel()
	accepts := make(chan string, 2)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepts <- r.Header.Get("Accept")
		if r.URL.Query().Get("watch") == "true" {
			fmt.Fprintln(w, `{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","labels":{"app":"x"}}}}`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}]}`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan string, 2)
	go kubeclient.Inform(ctx, newClient(t, srv, nil), "/api/v1/pods", time.Millisecond, kubeclient.InformHandler{
		Metadata: true,
		Replace:  func(items []json.RawMessage) error { got <- string(items[0]); return nil },
		Event:    func(_ string, obj json.RawMessage) error { got <- string(obj); return nil },
	})
	for _, want := range []string{
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
	} {
		select {
		case a := <-accepts:
			if a != want {
				t.Errorf("Accept %q, want %q", a, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no request")
		}
		select {
		case obj := <-got:
			if !strings.Contains(obj, `"kind":"PartialObjectMetadata"`) {
				t.Errorf("handler got %s", obj)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler got nothing")
		}
	}
}
