package annex_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
)

// kubeStandIn is a loopback HTTPS stand-in for the kube-apiserver endpoints a
// delegated server calls: the extension-apiserver-authentication ConfigMap,
// TokenReview and SubjectAccessReview.
type kubeStandIn struct {
	srv           *httptest.Server
	sars          atomic.Int32
	configMapGets atomic.Int32
	kubeconfig    string
}

func newKubeStandIn(t *testing.T, clientCA, requestHeaderCA *certs.CA) *kubeStandIn {
	t.Helper()
	k := &kubeStandIn{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication", func(w http.ResponseWriter, _ *http.Request) {
		k.configMapGets.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"kind": "ConfigMap", "apiVersion": "v1",
			"metadata": map[string]any{"name": "extension-apiserver-authentication", "namespace": "kube-system", "resourceVersion": "7"},
			"data": map[string]string{
				"client-ca-file":                     string(clientCA.CertPEM),
				"requestheader-client-ca-file":       string(requestHeaderCA.CertPEM),
				"requestheader-allowed-names":        `["front-proxy-client"]`,
				"requestheader-username-headers":     `["X-Remote-User"]`,
				"requestheader-group-headers":        `["X-Remote-Group"]`,
				"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
			},
		})
	})
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		var tr map[string]any
		_ = json.NewDecoder(r.Body).Decode(&tr)
		spec, _ := tr["spec"].(map[string]any)
		status := map[string]any{"authenticated": false}
		if spec["token"] == "good-token" {
			status = map[string]any{"authenticated": true, "user": map[string]any{"username": "bob", "uid": "b-1", "groups": []string{"viewers"}}}
		}
		tr["status"] = status
		_ = json.NewEncoder(w).Encode(tr)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		k.sars.Add(1)
		var sar map[string]any
		_ = json.NewDecoder(r.Body).Decode(&sar)
		spec, _ := sar["spec"].(map[string]any)
		ra, _ := spec["resourceAttributes"].(map[string]any)
		allowed := spec["user"] == "alice" && ra["verb"] == "list" && ra["resource"] == "widgets"
		status := map[string]any{"allowed": allowed}
		if !allowed {
			status["reason"] = "no RBAC policy matched"
		}
		sar["status"] = status
		_ = json.NewEncoder(w).Encode(sar)
	})
	k.srv = httptest.NewTLSServer(mux)
	t.Cleanup(k.srv.Close)

	// The annex server reaches the stand-in with a kubeconfig, as a pod
	// would with --authentication-kubeconfig.
	dir := t.TempDir()
	ca, err := certs.NewCA(certs.CAConfig{Name: "kubeconfig-client-ca"})
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.EnsureClientCert(certs.ClientConfig{Dir: dir, User: "system:serviceaccount:annex:annex"})
	if err != nil {
		t.Fatal(err)
	}
	k.kubeconfig = filepath.Join(dir, "kubeconfig")
	serverCA := certs.EncodeCert(k.srv.Certificate())
	if err := certs.WriteKubeconfig(k.kubeconfig, certs.Kubeconfig{Server: k.srv.URL, CAPEM: serverCA, ClientCertPEM: kp.CertPEM, ClientKeyPEM: kp.KeyPEM}); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestDelegatedModeTrustsOnlyTheFrontProxy(t *testing.T) {
	t.Parallel()
	clientCA, err := certs.NewCA(certs.CAConfig{Name: "cluster-client-ca"})
	if err != nil {
		t.Fatal(err)
	}
	frontProxyCA, err := certs.NewCA(certs.CAConfig{Name: "front-proxy-ca"})
	if err != nil {
		t.Fatal(err)
	}
	kube := newKubeStandIn(t, clientCA, frontProxyCA)

	srv := startServer(t, annex.Builder{Authentication: annex.Authentication{Delegation: &annex.Delegation{
		AuthenticationKubeconfig: kube.kubeconfig, AuthorizationKubeconfig: kube.kubeconfig}}})
	if srv.Kubeconfig != "" || srv.KubeconfigPath() != "" {
		t.Errorf("delegated mode wrote an admin kubeconfig: %s", srv.KubeconfigPath())
	}

	issued := func(ca *certs.CA, cn string) string {
		dir := t.TempDir()
		if _, err := ca.EnsureClientCert(certs.ClientConfig{Dir: dir, Name: "c", User: cn}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	proxyDir := issued(frontProxyCA, "front-proxy-client")
	otherProxyDir := issued(frontProxyCA, "not-the-proxy")
	clientDir := issued(clientCA, "carol")
	client := func(dir string) *http.Client {
		if dir == "" {
			return clientWith(t, srv, "", "")
		}
		return clientWith(t, srv, filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key"))
	}

	list := srv.URL + "/apis/test.annex.dev/v1/namespaces/default/widgets"
	tests := []struct {
		name     string
		certDir  string
		headers  map[string]string
		wantCode int
		wantBody string
	}{
		{"front_proxy_user_allowed_by_sar", proxyDir, map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "devs"}, 200, `"kind":"WidgetList"`},
		{"front_proxy_user_denied_by_sar", proxyDir, map[string]string{"X-Remote-User": "mallory"}, 403,
			`User \"mallory\" cannot list resource \"widgets\" in API group \"test.annex.dev\" in the namespace \"default\"`},
		{"headers_without_certificate_are_not_trusted", "", map[string]string{"X-Remote-User": "alice"}, 401, `"reason":"Unauthorized"`},
		{"proxy_ca_with_a_cn_not_allowed", otherProxyDir, map[string]string{"X-Remote-User": "alice"}, 401, `"reason":"Unauthorized"`},
		{"client_ca_certificate_never_makes_headers_trusted", clientDir, map[string]string{"X-Remote-User": "alice"}, 403, `User \"carol\" cannot list`},
		{"token_review_user", "", map[string]string{"Authorization": "Bearer good-token"}, 403, `User \"bob\" cannot list`},
		{"bad_token_is_401_never_anonymous", "", map[string]string{"Authorization": "Bearer nope"}, 401, `"reason":"Unauthorized"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, list, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := client(tc.certDir).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Fatalf("got %d %s, want %d containing %s", resp.StatusCode, body, tc.wantCode, tc.wantBody)
			}
		})
	}
	if kube.sars.Load() == 0 {
		t.Error("no SubjectAccessReview reached the cluster")
	}
	code, body := do(t, client(""), http.MethodGet, srv.URL+"/readyz?verbose", "")
	if code != 200 || !strings.Contains(body, "[+]delegated-authentication ok") {
		t.Errorf("readyz: %d %s", code, body)
	}
}
