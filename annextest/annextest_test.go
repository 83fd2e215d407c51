package annextest_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/annextest"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/healthz"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage"
	"github.com/annexapi/annex/storage/bbolt"
)

const (
	group   = "test.annex.dev"
	version = "v1"
)

func widgets() annex.Builder {
	return annex.Builder{Resources: []rest.Resource{{Group: group, Version: version, Plural: "widgets", Kind: "Widget", Namespaced: true}}}
}

// do sends a request as a Kubernetes client does (Accept, Content-Type on a
// body, a User-Agent) and returns the status and body.
func do(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	code, data, err := send(c, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return code, data
}

func send(c *http.Client, method, url, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "annextest.test/v0.0.0")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// apiResource is the part of a discovery APIResource the tests read.
type apiResource struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Namespaced bool     `json:"namespaced"`
	Verbs      []string `json:"verbs"`
}

func TestStartServesDiscovery(t *testing.T) {
	t.Parallel()
	srv := annextest.Start(t, widgets())
	if !strings.HasPrefix(srv.URL, "https://127.0.0.1:") || srv.URL == "https://127.0.0.1:0" {
		t.Errorf("URL = %q, want https://127.0.0.1:<port>", srv.URL)
	}
	code, body := do(t, srv.Client(), http.MethodGet, srv.URL+"/apis/"+group+"/"+version, "")
	if code != http.StatusOK {
		t.Fatalf("discovery: %d %s", code, body)
	}
	var list struct {
		Kind         string        `json:"kind"`
		GroupVersion string        `json:"groupVersion"`
		Resources    []apiResource `json:"resources"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("discovery is not JSON: %v: %s", err, body)
	}
	if list.Kind != "APIResourceList" || list.GroupVersion != group+"/"+version {
		t.Errorf("discovery kind %q groupVersion %q, want APIResourceList %s/%s", list.Kind, list.GroupVersion, group, version)
	}
	i := slices.IndexFunc(list.Resources, func(r apiResource) bool { return r.Name == "widgets" })
	if i < 0 {
		t.Fatalf("discovery does not list widgets: %s", body)
	}
	if r := list.Resources[i]; r.Kind != "Widget" || !r.Namespaced || !slices.Contains(r.Verbs, "create") {
		t.Errorf("widgets in discovery = %+v, want kind Widget, namespaced, with create", r)
	}
}

func TestAdminClient(t *testing.T) {
	t.Parallel()
	srv := annextest.Start(t, widgets())
	c := srv.Client()
	if c == nil {
		t.Fatal("Client() is nil in standalone mode")
	}
	if srv.Client() != c {
		t.Error("Client() returned a different client on the second call")
	}
	base := srv.URL + "/apis/" + group + "/" + version + "/namespaces/default/widgets"
	for _, name := range []string{"one", "two"} {
		code, body := do(t, c, http.MethodPost, base, `{"apiVersion":"`+group+`/`+version+`","kind":"Widget","metadata":{"name":"`+name+`"}}`)
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, code, body)
		}
	}
	code, body := do(t, c, http.MethodGet, base+"/two", "")
	if code != http.StatusOK || !strings.Contains(body, `"name":"two"`) {
		t.Fatalf("get: %d %s", code, body)
	}
	code, body = do(t, c, http.MethodGet, base, "")
	if code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("list is not JSON: %v: %s", err, body)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Metadata.Name)
	}
	if list.Kind != "WidgetList" || !slices.Equal(names, []string{"one", "two"}) {
		t.Errorf("list = %s %v, want WidgetList [one two]", list.Kind, names)
	}

	// The admin is who the kubeconfig says: the server's own review of the
	// caller names the user and group.
	code, body = do(t, c, http.MethodPost, srv.URL+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if code != http.StatusCreated || !strings.Contains(body, `"username":"admin"`) || !strings.Contains(body, `"system:masters"`) {
		t.Errorf("self subject review: %d %s", code, body)
	}

	// HTTP/2, as client-go speaks it.
	resp, err := c.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("admin client spoke %s, want HTTP/2", resp.Proto)
	}
}

func TestAnonymousClient(t *testing.T) {
	t.Parallel()
	srv := annextest.Start(t, widgets())
	anon := srv.AnonymousClient()
	if anon == nil {
		t.Fatal("AnonymousClient() is nil in standalone mode")
	}
	if srv.AnonymousClient() != anon || anon == srv.Client() {
		t.Error("AnonymousClient() is not one client of its own")
	}
	tests := []struct {
		name string
		path string
		want int
	}{
		{"readyz_allowed", "/readyz", http.StatusOK},
		{"livez_allowed", "/livez", http.StatusOK},
		{"healthz_allowed", "/healthz", http.StatusOK},
		// Anonymous requests are authenticated for the health paths only:
		// elsewhere a request without credentials is unauthenticated.
		{"resource_list_refused", "/apis/" + group + "/" + version + "/namespaces/default/widgets", http.StatusUnauthorized},
		{"discovery_refused", "/apis/" + group + "/" + version, http.StatusUnauthorized},
		{"metrics_refused", "/metrics", http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, body := do(t, anon, http.MethodGet, srv.URL+tc.path, "")
			if code != tc.want {
				t.Errorf("GET %s anonymously: %d %s, want %d", tc.path, code, body, tc.want)
			}
		})
	}
}

func TestCloseStopsServerAndRemovesTempDataDir(t *testing.T) {
	t.Parallel()
	srv, err := annextest.NewServer(widgets())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(srv.DataDir, "storage.db")); err != nil {
		t.Fatalf("the temporary data directory has no store: %v", err)
	}
	if srv.Kubeconfig == "" || !strings.HasPrefix(srv.Kubeconfig, srv.DataDir+string(filepath.Separator)) {
		t.Errorf("Kubeconfig = %q, want a file in DataDir %q", srv.Kubeconfig, srv.DataDir)
	}
	c := srv.Client()
	if code, body := do(t, c, http.MethodGet, srv.URL+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("before Close: %d %s", code, body)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if code, _, err := send(c, http.MethodGet, srv.URL+"/readyz", ""); err == nil {
		t.Errorf("a request after Close was answered %d", code)
	}
	if _, err := os.Stat(srv.DataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary data directory %s is still there after Close: %v", srv.DataDir, err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestGivenDataDirIsKept(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	b := widgets()
	b.DataDir = dir
	srv, err := annextest.NewServer(b)
	if err != nil {
		t.Fatal(err)
	}
	if srv.DataDir != dir {
		t.Errorf("DataDir = %q, want the given %q", srv.DataDir, dir)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, f := range []string{"storage.db", "kubeconfig"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s in the given data directory after Close: %v", f, err)
		}
	}
}

func TestNotStandaloneHasNoClients(t *testing.T) {
	t.Parallel()
	ca, err := certs.NewCA(certs.CAConfig{Name: "elsewhere-ca"})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	b := widgets()
	b.Authentication.ClientCAFile = caFile // client certificates from elsewhere: no admin, no kubeconfig
	srv := annextest.Start(t, b)
	if srv.Kubeconfig != "" || srv.Client() != nil || srv.AnonymousClient() != nil {
		t.Errorf("Kubeconfig %q, Client %v, AnonymousClient %v: want none without standalone mode",
			srv.Kubeconfig, srv.Client(), srv.AnonymousClient())
	}
	// It serves all the same; the test brings its own client (here one
	// that does not know the serving CA either).
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	if code, body := do(t, &http.Client{Transport: tr}, http.MethodGet, srv.URL+"/readyz", ""); code != http.StatusOK {
		t.Errorf("readyz: %d %s", code, body)
	}
}

func TestNewServerReturnsBuildError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		builder annex.Builder
	}{
		{"no_resources", annex.Builder{}},
		{"bad_resource", annex.Builder{Resources: []rest.Resource{{Group: group, Version: version, Plural: "Widgets!", Kind: "Widget"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := tc.builder
			direct.Observability.Logger = zap.NewNop()
			_, want := direct.Build() // fails in validation, before any side effect
			if want == nil {
				t.Fatal("the Builder builds: the case tests nothing")
			}
			srv, err := annextest.NewServer(tc.builder)
			if err == nil {
				srv.Close()
				t.Fatal("NewServer succeeded")
			}
			if err.Error() != want.Error() {
				t.Errorf("NewServer error:\n%v\nwant Build's:\n%v", err, want)
			}
		})
	}
}

// failingStore is a store whose long-running part fails at once, so that Run
// returns an error.
type failingStore struct{ storage.Interface }

var errCompaction = errors.New("compaction failed")

func (failingStore) Start(context.Context) error { return errCompaction }

func TestNewServerReturnsRunError(t *testing.T) {
	t.Parallel()
	st, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := widgets()
	b.Resources[0].Storage = failingStore{st}
	// Never ready, so NewServer cannot return before Run does.
	b.Serving.ReadyChecks = []healthz.Check{healthz.NamedCheck("never", func(*http.Request) error { return errors.New("not yet") })}
	srv, err := annextest.NewServer(b)
	if err == nil {
		srv.Close()
		t.Fatal("NewServer succeeded with a store whose Start fails")
	}
	if !errors.Is(err, errCompaction) {
		t.Errorf("NewServer error = %v, want Run's %v", err, errCompaction)
	}
}

// selfUser asks the server who the client is (SelfSubjectReview) and
// returns the body.
func selfUser(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	code, body := do(t, c, http.MethodPost, url+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if code != http.StatusCreated {
		t.Fatalf("self subject review: %d %s", code, body)
	}
	return body
}

func clientOf(t *testing.T, cfg *tls.Config) *http.Client {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestTLSConfig(t *testing.T) {
	t.Parallel()
	t.Run("standalone_is_the_admins", func(t *testing.T) {
		t.Parallel()
		srv := annextest.Start(t, widgets())
		cfg := srv.TLSConfig()
		if cfg == nil || cfg.InsecureSkipVerify || cfg.RootCAs == nil {
			t.Fatalf("TLSConfig() = %+v, want one verifying the serving CA", cfg)
		}
		cfg.NextProtos = []string{"h2"}
		if again := srv.TLSConfig(); again == cfg || len(again.NextProtos) != 0 {
			t.Error("TLSConfig() returned the configuration changed by an earlier caller, want a new one")
		}
		if body := selfUser(t, clientOf(t, srv.TLSConfig()), srv.URL); !strings.Contains(body, `"username":"admin"`) || !strings.Contains(body, `"system:masters"`) {
			t.Errorf("a client of TLSConfig() is not the admin: %s", body)
		}
		// Dialing itself, with the ALPN protocol it asks for.
		conn, err := tls.Dial("tcp", srv.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Errorf("negotiated %q, want h2", p)
		}
	})
	t.Run("not_standalone_trusts_the_serving_ca", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ca, err := certs.EnsureCA(certs.CAConfig{Dir: dir, Name: "client-ca"})
		if err != nil {
			t.Fatal(err)
		}
		kp, err := ca.EnsureClientCert(certs.ClientConfig{Dir: dir, Name: "carol", User: "carol", Groups: []string{"devs"}})
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		b := widgets()
		b.Name = "named" // the serving CA is <Name>-serving-ca.crt
		b.Serving.CertDir = filepath.Join(t.TempDir(), "certs")
		b.Authentication.ClientCAFile = ca.CertFile
		srv := annextest.Start(t, b)
		cfg := srv.TLSConfig()
		if cfg == nil || cfg.InsecureSkipVerify || cfg.RootCAs == nil || len(cfg.Certificates) != 0 {
			t.Fatalf("TLSConfig() = %+v, want one verifying the serving CA with no certificate", cfg)
		}
		if code, body := do(t, clientOf(t, srv.TLSConfig()), http.MethodGet, srv.URL+"/readyz", ""); code != http.StatusOK {
			t.Errorf("readyz: %d %s", code, body)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
		if body := selfUser(t, clientOf(t, cfg), srv.URL); !strings.Contains(body, `"username":"carol"`) || !strings.Contains(body, `"devs"`) {
			t.Errorf("a client of TLSConfig() with carol's certificate: %s", body)
		}
	})
	t.Run("serving_certificate_given_is_nil", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ca, err := certs.NewCA(certs.CAConfig{Name: "own-ca"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ca.EnsureServingCert(certs.ServingConfig{Dir: dir}); err != nil {
			t.Fatal(err)
		}
		b := widgets()
		b.Serving.CertFile, b.Serving.KeyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
		srv := annextest.Start(t, b)
		if cfg := srv.TLSConfig(); cfg != nil {
			t.Errorf("TLSConfig() = %+v with the Builder's serving certificate, want nil", cfg)
		}
	})
}

func TestShutdownThenDone(t *testing.T) {
	t.Parallel()
	b := widgets()
	b.Shutdown.Delay = time.Second
	srv := annextest.Start(t, b)
	anon := srv.AnonymousClient()
	srv.Shutdown()
	select {
	case <-srv.Done():
		t.Fatal("Done closed at once, before the 1s shutdown delay")
	default:
	}
	// During the delay /readyz fails and the server serves on.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := do(t, anon, http.MethodGet, srv.URL+"/readyz?verbose", "")
		if code == http.StatusInternalServerError && strings.Contains(body, "[-]shutdown failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz after Shutdown: %d %s, want 500 naming shutdown", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := do(t, anon, http.MethodGet, srv.URL+"/livez", ""); code != http.StatusOK {
		t.Errorf("livez during the shutdown delay: %d %s", code, body)
	}
	// Or the HTTP/2 shutdown waits a second for each idle connection.
	anon.CloseIdleConnections()
	srv.Client().CloseIdleConnections()
	select {
	case <-srv.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Done not closed 20s after Shutdown")
	}
	srv.Shutdown() // again: nothing more
	if err := srv.Close(); err != nil {
		t.Errorf("Close after Shutdown: %v", err)
	}
}
