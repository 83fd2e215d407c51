package annex_test

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/rest"
)

// TestAdmissionControlConfigFileWebhookCredentials: a validating webhook
// that requires a client certificate signed by its own CA, and a bearer
// token, is reached with the credentials an AdmissionConfiguration's
// WebhookAdmissionConfiguration names (a kubeconfig user named after the
// webhook's host, as kube-apiserver looks it up); without them the call
// fails and the write is refused by the failure policy.
func TestAdmissionControlConfigFileWebhookCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := certs.EnsureCA(certs.CAConfig{Dir: dir, Name: "hook-ca"})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.EnsureServingCert(certs.ServingConfig{Dir: dir, Name: "hook", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ca.EnsureClientCert(certs.ClientConfig{Dir: dir, Name: "apiserver", User: "apiserver"})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serving.TLSCertificate()},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer hook-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		calls.Add(1)
		var review struct {
			Request struct{ UID string } `json:"request"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &review)
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"response": map[string]any{"uid": review.Request.UID, "allowed": true}})
	})}
	go func() { _ = hook.Serve(ln) }()
	t.Cleanup(func() { _ = hook.Close() })
	hostPort := ln.Addr().String()
	_, port, _ := net.SplitHostPort(hostPort)

	hooks := filepath.Join(dir, "hooks.yaml")
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(hooks, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: guarded}
webhooks:
- name: guarded.annex.dev
  clientConfig:
    url: https://`+hostPort+`/validate
    caBundle: `+base64.StdEncoding.EncodeToString(ca.CertPEM)+`
  rules: [{apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
`)
	kubeconfig := filepath.Join(dir, "webhook-kubeconfig.yaml")
	write(kubeconfig, `apiVersion: v1
kind: Config
users:
- name: "*.example.com"
  user: {token: wrong-token}
- name: "127.0.0.1:`+port+`"
  user:
    client-certificate: apiserver.crt
    client-key: apiserver.key
    token: hook-token
`)
	admissionCfg := filepath.Join(dir, "admission.yaml")
	write(admissionCfg, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: webhook-kubeconfig.yaml
`)
	body := `{"apiVersion":"test.annex.dev/v1","kind":"Widget","metadata":{"name":"w"}}`
	for _, tc := range []struct {
		name   string
		config string
		code   int
	}{{"with_credentials", admissionCfg, 201}, {"without", "", 500}} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			ts := startServer(t, annex.Builder{Admission: annex.Admission{WebhookFiles: []string{hooks}, ConfigFile: tc.config}})
			code, resp := do(t, ts.Client(), "POST", ts.URL+"/apis/test.annex.dev/v1/namespaces/a/widgets", body)
			if code != tc.code {
				t.Fatalf("create: %d %s", code, resp)
			}
			if tc.code == 201 && calls.Load() != before+1 {
				t.Fatal("the webhook did not see the request")
			}
			if tc.code != 201 && !strings.Contains(resp, `failed calling webhook \"guarded.annex.dev\"`) {
				t.Fatalf("refusal: %s", resp)
			}
		})
	}
	// Bad configurations name the plugin and the field.
	write(filepath.Join(dir, "bad.yaml"), "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: AlwaysPullImages\n")
	b := annex.Builder{DataDir: t.TempDir(), Resources: []rest.Resource{widgets()}, Admission: annex.Admission{ConfigFile: filepath.Join(dir, "bad.yaml")}}
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), `plugins[0].name: admission plugin "AlwaysPullImages" is unknown`) {
		t.Fatalf("unknown plugin: %v", err)
	}
}
