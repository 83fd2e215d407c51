package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuditFlags runs the example as the README says, with
// --audit-policy-file=audit-policy.yaml and --audit-log-path, and checks the
// log after shutdown: the create at RequestResponse level with what was
// sent and returned, the get at Metadata level, probes and discovery not
// audited, no RequestReceived events (omitted by the policy).
func TestAuditFlags(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "audit", "audit.log")
	dataDir, url, stop := startExample(t, "--audit-policy-file=audit-policy.yaml", "--audit-log-path="+logPath)
	certs := filepath.Join(dataDir, "certs")
	caPEM, err := os.ReadFile(filepath.Join(certs, "environments-serving-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	admin, err := tls.LoadX509KeyPair(filepath.Join(certs, "admin.crt"), filepath.Join(certs, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	envs := url + "/apis/platform.example.com/v1alpha1/namespaces/default/environments"
	body := `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"audited"},"spec":{"owner":"payments-team","tier":"dev"}}`
	for _, r := range []struct {
		method, url, body string
		code              int
	}{
		{"POST", envs, body, 201},
		{"GET", envs + "/audited", "", 200},
		{"GET", url + "/readyz", "", 200},
		{"GET", url + "/apis", "", 200},
	} {
		req, _ := http.NewRequest(r.method, r.url, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != r.code {
			t.Fatalf("%s %s: %d %s", r.method, r.url, resp.StatusCode, b)
		}
	}
	stop()

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		Level, Stage, Verb, RequestURI string
		RequestObject, ResponseObject  json.RawMessage
	}
	var events []event
	for line := range bytes.Lines(data) {
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		events = append(events, ev)
	}
	if len(events) != 2 {
		t.Fatalf("got %d events, want the create's and the get's ResponseComplete:\n%s", len(events), data)
	}
	create, get := events[0], events[1]
	if create.Verb != "create" || create.Level != "RequestResponse" || create.Stage != "ResponseComplete" ||
		!bytes.Contains(create.RequestObject, []byte(`"owner":"payments-team"`)) || !bytes.Contains(create.ResponseObject, []byte(`"uid"`)) {
		t.Errorf("create event: %+v", create)
	}
	if get.Verb != "get" || get.Level != "Metadata" || get.RequestObject != nil || get.ResponseObject != nil {
		t.Errorf("get event: %+v", get)
	}
}
