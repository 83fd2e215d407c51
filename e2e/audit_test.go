package e2e

// The audit comparison: the same sequence of requests (create, get, list,
// watch, patch, a forbidden list, an impersonated get, a create denied by a
// ValidatingAdmissionPolicy) against a real kube-apiserver serving a CRD
// with the environments example's schema and against an annex server
// serving the same resource, both under the same audit policy file. Every
// event each writes must decode strictly into k8s.io/apiserver's
// audit.k8s.io/v1 types, and the events of each request must carry the same
// fields with the same values at each stage, except for the differences
// listed in auditDifferences, each with its reason.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/kubeflags"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
	"github.com/spf13/pflag"
)

// auditComparePolicy records only the test's users (not kube-apiserver's
// own controllers), at a different level per verb so that each level is
// compared: RequestResponse for writes, Request for reads, Metadata for
// watches and for everything else the users do, and Metadata for a get by
// anyone (a request that fails authentication has no user).
const auditComparePolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  users: [e2e-admin, alice]
  verbs: [create, update, patch, delete]
  resources:
  - group: platform.example.com
    resources: [environments]
- level: Request
  users: [e2e-admin, alice]
  verbs: [get, list]
  resources:
  - group: platform.example.com
- level: Metadata
  users: [e2e-admin, alice]
  resources:
  - group: platform.example.com
- level: Metadata
  verbs: [get]
  resources:
  - group: platform.example.com
    resources: [environments]
- level: None
`

// auditCompareVAP is the admission policy both servers run: prod
// environments need an owner label.
const auditCompareVAP = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: prod-needs-owner-label
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [platform.example.com]
      apiVersions: ["*"]
      operations: [CREATE, UPDATE]
      resources: [environments]
  validations:
  - expression: "object.spec.tier != 'prod' || (has(object.metadata.labels) && 'owner' in object.metadata.labels)"
    message: prod environments need an owner label
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: prod-needs-owner-label
spec:
  policyName: prod-needs-owner-label
  validationActions: [Deny]
`

// auditDifference is a field where annex's events may differ from
// kube-apiserver's, and why.
type auditDifference struct {
	// path is a flattened field path (see flattenEvent); a trailing "*"
	// matches a prefix.
	path string
	// side is "annex" (only annex writes it), "kube" (only kube-apiserver
	// writes it) or "value" (both write it, with different values).
	side   string
	reason string
}

// auditDifferences are the differences the comparison allows. Anything else
// fails the test.
var auditDifferences = []auditDifference{
	{"annotations[annex.dev/stage-latencies]", "annex",
		"annex's own: the time spent in each stage, on every ResponseComplete event (issue 15)"},
	{"annotations[annex.dev/rejected-by]", "annex",
		"annex's own: the stage that rejected the request (issue 15)"},
	{"annotations[apiserver.latency.k8s.io/*", "kube",
		"kube-apiserver's latency breakdown, added only to requests slower than its threshold (500ms); " +
			"annex's stage-latencies annotation carries the same information on every request"},
}

func TestAuditEventsMatchKubeAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver; not in -short")
	}
	p := newPKI(t)
	dir := t.TempDir()
	policyFile := writeFile(t, filepath.Join(dir, "audit-policy.yaml"), []byte(auditComparePolicy))
	vapFile := writeFile(t, filepath.Join(dir, "vap.yaml"), []byte(auditCompareVAP))
	kasLog := filepath.Join(dir, "kube-audit.log")
	annexLog := filepath.Join(dir, "annex-audit", "audit.log")

	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t),
		"--audit-policy-file="+policyFile, "--audit-log-path="+kasLog)
	admin := p.client(t)
	alicePair, err := p.clusterCA.Issue(certs.Request{CommonName: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	alice := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig(p, alicePair)}}
	noCert := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.clusterCA.Pool()}}}

	// The CRD and the admission policy, in kube-apiserver.
	schemaYAML := environmentSchemaYAML(t)
	var openAPI map[string]any
	if err := yaml.Unmarshal(schemaYAML, &openAPI); err != nil {
		t.Fatal(err)
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "environments.platform.example.com"},
		"spec": map[string]any{
			"group": "platform.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "environments", "singular": "environment", "kind": "Environment", "listKind": "EnvironmentList"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": openAPI}, "subresources": map[string]any{"status": map[string]any{}}}},
		},
	}
	mustCreate(t, admin, kasURL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
	for _, doc := range strings.Split(auditCompareVAP, "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		plural := map[string]string{"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
			"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}[obj["kind"].(string)]
		mustCreate(t, admin, kasURL+"/apis/admissionregistration.k8s.io/v1/"+plural, obj)
	}
	kasEnvs := kasURL + "/apis/platform.example.com/v1alpha1/namespaces/default/environments"
	// The CRD is served and the policy enforced once a prod environment
	// without an owner is refused (probes have no e2e- audit ID).
	probe := 0
	waitUntil(t, 2*time.Minute, "the CRD served and the policy enforced", kasLogs, func() bool {
		probe++
		code, _ := send(t, admin, "POST", kasEnvs, prodEnv(fmt.Sprintf("probe-%d", probe)), "", nil)
		return code == http.StatusForbidden
	})

	// annex, serving the same resource with the same certificates, policy
	// file (through package kubeflags) and admission policy.
	props, err := schema.ParseYAML(schemaYAML)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := annex.Builder{
		Name:    "environments",
		DataDir: filepath.Join(dir, "annex-data"),
		Resources: []rest.Resource{{Group: "platform.example.com", Version: "v1alpha1", Plural: "environments", Singular: "environment",
			Kind: "Environment", ListKind: "EnvironmentList", Namespaced: true, Schema: props, StatusSubresource: true}},
		Serving:        annex.Serving{Listener: ln, CertFile: p.file("serving.crt"), KeyFile: p.file("serving.key")},
		Authentication: annex.Authentication{ClientCAFile: p.file("cluster-ca.crt")},
		Admission:      annex.Admission{PolicyFiles: []string{vapFile}},
		Observability:  annex.Observability{Logger: zap.NewNop()},
	}
	var flags kubeflags.Options
	fs := pflag.NewFlagSet("annex", pflag.ContinueOnError)
	flags.AddFlags(fs, &b)
	if err := fs.Parse([]string{"--audit-policy-file=" + policyFile, "--audit-log-path=" + annexLog}); err != nil {
		t.Fatal(err)
	}
	if err := flags.Apply(&b); err != nil {
		t.Fatal(err)
	}
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	stopAnnex := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("annex Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("annex did not stop")
		}
		done <- nil
	}
	t.Cleanup(func() { cancel(); <-done })
	annexURL := srv.URL()
	waitUntil(t, time.Minute, "annex /readyz", &lockedBuffer{}, func() bool {
		code, _ := send(t, admin, "GET", annexURL+"/readyz", "", "", nil)
		return code == 200
	})
	annexEnvs := annexURL + "/apis/platform.example.com/v1alpha1/namespaces/default/environments"

	// The sequence, on both servers, each request with the same audit ID.
	type step struct {
		id, method, path, body, contentType string
		client                              *http.Client
		header                              http.Header
		code                                int
	}
	steps := []step{
		{id: "create", method: "POST", body: env("audit-a", "dev", nil), code: 201},
		{id: "get", method: "GET", path: "/audit-a", code: 200},
		{id: "list", method: "GET", code: 200},
		{id: "watch", method: "GET", path: "?watch=true&timeoutSeconds=1", code: 200},
		{id: "patch", method: "PATCH", path: "/audit-a", body: `{"metadata":{"labels":{"patched":"yes"}}}`, contentType: "application/merge-patch+json", code: 200},
		{id: "forbidden", method: "GET", client: alice, code: 403},
		{id: "impersonated", method: "GET", path: "/audit-a", header: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}, code: 200},
		{id: "denied", method: "POST", body: prodEnv("audit-prod"), code: 403},
		// Failed authentication: one ResponseStarted event, no user.
		{id: "unauthenticated", method: "GET", path: "/audit-a", client: noCert, header: http.Header{"Authorization": {"Bearer not-a-token"}}, code: 401},
	}
	for _, server := range []struct{ name, base string }{{"kube-apiserver", kasEnvs}, {"annex", annexEnvs}} {
		for _, s := range steps {
			c := s.client
			if c == nil {
				c = admin
			}
			h := http.Header{"Audit-Id": {"e2e-" + s.id}}
			for k, v := range s.header {
				h[k] = v
			}
			ct := s.contentType
			if ct == "" && s.body != "" {
				ct = "application/json"
			}
			code, body := send(t, c, s.method, server.base+s.path, s.body, ct, h)
			if code != s.code {
				t.Fatalf("%s %s: %d, want %d: %s", server.name, s.id, code, s.code, body)
			}
		}
	}
	stopAnnex() // flushes annex's log

	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = "e2e-" + s.id
	}
	var kube map[string][]loggedEvent
	waitUntil(t, 30*time.Second, "kube-apiserver's last events", kasLogs, func() bool {
		kube = readAuditLog(t, kasLog)
		for _, id := range ids {
			evs := kube[id]
			last := auditv1.StageResponseComplete
			if id == "e2e-unauthenticated" {
				last = auditv1.StageResponseStarted
			}
			if len(evs) == 0 || evs[len(evs)-1].ev.Stage != last {
				return false
			}
		}
		return true
	})
	ours := readAuditLog(t, annexLog)

	var diffs []string
	used := map[int]bool{}
	for _, id := range ids {
		an, ku := ours[id], kube[id]
		if stages(an) != stages(ku) {
			diffs = append(diffs, fmt.Sprintf("%s: stages: annex %s, kube-apiserver %s", id, stages(an), stages(ku)))
			continue
		}
		for i := range an {
			fa, fk := flattenEvent(t, an[i].raw), flattenEvent(t, ku[i].raw)
			for _, path := range unionKeys(fa, fk) {
				va, inA := fa[path]
				vk, inK := fk[path]
				side := ""
				switch {
				case inA && !inK:
					side = "annex"
				case inK && !inA:
					side = "kube"
				case va != vk:
					side = "value"
				default:
					continue
				}
				if j := allowedDifference(path, side); j >= 0 {
					used[j] = true
					continue
				}
				diffs = append(diffs, fmt.Sprintf("%s %s %s (%s): annex %s, kube-apiserver %s", id, an[i].ev.Stage, path, side, va, vk))
			}
		}
	}
	compared := 0
	for _, id := range ids {
		compared += len(ours[id])
	}
	if compared < 2*len(ids)-1 {
		t.Fatalf("compared %d events, want at least 2 per request", compared)
	}
	t.Logf("compared %d events of %d requests field by field", compared, len(ids))
	if testing.Verbose() {
		for _, id := range []string{"e2e-denied", "e2e-watch", "e2e-impersonated"} {
			for i := range ours[id] {
				t.Logf("annex: %s\nkube:  %s", ours[id][i].raw, kube[id][i].raw)
			}
		}
	}
	if len(diffs) > 0 {
		t.Errorf("annex's audit events differ from kube-apiserver's beyond auditDifferences:\n%s", strings.Join(diffs, "\n"))
	}
	for j, d := range auditDifferences {
		if !used[j] && !strings.HasPrefix(d.path, "annotations[apiserver.latency") { // that one shows only on slow requests
			t.Errorf("allowed difference %q (%s) no longer occurs: remove it", d.path, d.side)
		}
	}
}

// prodEnv is a prod environment without the owner label the policy wants.
func prodEnv(name string) string { return env(name, "prod", nil) }

func env(name, tier string, labels map[string]string) string {
	obj := map[string]any{"apiVersion": "platform.example.com/v1alpha1", "kind": "Environment",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"owner": "payments-team", "tier": tier, "replicas": 2}}
	if labels != nil {
		obj["metadata"].(map[string]any)["labels"] = labels
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

func tlsConfig(p *pki, kp *certs.KeyPair) *tls.Config {
	return &tls.Config{RootCAs: p.clusterCA.Pool(), Certificates: []tls.Certificate{kp.TLSCertificate()}}
}

func mustCreate(t *testing.T, c *http.Client, url string, obj any) {
	t.Helper()
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if code, resp := send(t, c, "POST", url, string(body), "application/json", nil); code != 201 {
		t.Fatalf("create %s: %d %s", url, code, resp)
	}
}

// send makes one request and reads the whole response (a watch's until the
// server ends it).
func send(t *testing.T, c *http.Client, method, url, body, contentType string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%s %s: reading: %v", method, url, err)
	}
	return resp.StatusCode, string(b)
}

// loggedEvent is one line of an audit log, decoded and as written.
type loggedEvent struct {
	ev  auditv1.Event
	raw []byte
}

// readAuditLog decodes every line of an audit log strictly (unknown fields
// refused) into audit.k8s.io/v1 Events and returns those of the test's
// requests (audit IDs e2e-*) by audit ID, in order.
func readAuditLog(t *testing.T, path string) map[string][]loggedEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]loggedEvent{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var ev auditv1.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%s: event does not decode strictly as audit.k8s.io/v1: %v\n%s", filepath.Base(path), err, sc.Bytes())
		}
		if strings.HasPrefix(string(ev.AuditID), "e2e-") {
			out[string(ev.AuditID)] = append(out[string(ev.AuditID)], loggedEvent{ev, bytes.Clone(sc.Bytes())})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func stages(evs []loggedEvent) string {
	var s []string
	for _, ev := range evs {
		s = append(s, string(ev.ev.Stage))
	}
	return strings.Join(s, ",")
}

// flattenEvent turns an event as written into field paths and values,
// comparable across servers. Four kinds of value are replaced by what they
// are, being expected to differ between two servers: timestamps ("<time>":
// the requests ran at other times), objectRef.resourceVersion and
// objectRef.uid ("<set>": two stores), and the recorded requestObject and
// responseObject ("<object>": their presence per level and stage is
// compared; their contents differ by design, kube-apiserver re-encoding
// the decoded object, e.g. adding "creationTimestamp":null to a create's
// requestObject, where annex records the bytes as sent and returned). The
// rest is kept as JSON; an empty object is kept as {}, so an empty field and
// a missing one differ.
func flattenEvent(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch prefix {
		case "requestReceivedTimestamp", "stageTimestamp":
			out[prefix] = "<time>"
			return
		case "requestObject", "responseObject":
			out[prefix] = "<object>"
			return
		case "objectRef.resourceVersion", "objectRef.uid":
			out[prefix] = "<set>"
			return
		}
		if obj, ok := v.(map[string]any); ok && len(obj) > 0 {
			for k, vv := range obj {
				key := prefix + "." + k
				if prefix == "" {
					key = k
				} else if prefix == "annotations" || prefix == "user.extra" || prefix == "impersonatedUser.extra" {
					key = prefix + "[" + k + "]"
				}
				walk(key, vv)
			}
			return
		}
		j, _ := json.Marshal(v)
		out[prefix] = string(j)
	}
	walk("", m)
	return out
}

func unionKeys(a, b map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func allowedDifference(path, side string) int {
	return slices.IndexFunc(auditDifferences, func(d auditDifference) bool {
		if d.side != side {
			return false
		}
		if prefix, ok := strings.CutSuffix(d.path, "*"); ok {
			return strings.HasPrefix(path, prefix)
		}
		return d.path == path
	})
}
