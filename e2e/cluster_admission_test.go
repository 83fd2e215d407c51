package e2e

// The cluster's own admission configuration applied to annex resources
// (issue 32): an annex server behind kube-aggregator, in delegated mode,
// follows the ValidatingAdmissionPolicies, MutatingAdmissionPolicies and
// webhook configurations created in the cluster with kubectl. The same
// cluster serves a CRD of the same shape in another group, so that every
// answer annex gives (denials, mutations, the AdmissionReview a webhook
// receives) is compared with the one kube-apiserver gives for the CRD: kube
// is the oracle, not what the test believes.

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/yaml"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/internal/kubectltest"
	"github.com/annexapi/annex/rest"
)

// The group annex serves and the group of the CRD of the same shape.
const (
	admGroup = "adm.annex.e2e"
	crdGroup = "crd.annex.e2e"
)

// admReader lets the annex server's identity follow the cluster's admission
// configuration and the ConfigMaps policies take params from.
const admReader = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-adm:admission-reader"}
rules:
- apiGroups: [admissionregistration.k8s.io]
  resources: [mutatingwebhookconfigurations, validatingwebhookconfigurations, validatingadmissionpolicies, validatingadmissionpolicybindings, mutatingadmissionpolicies, mutatingadmissionpolicybindings]
  verbs: [get, list, watch]
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [services/proxy], verbs: [get, create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-adm:admission-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-adm:admission-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
`

// reviewRecorder is a validating webhook that records the AdmissionReviews
// it receives and refuses objects whose name starts with "hook-deny".
type reviewRecorder struct {
	mu      sync.Mutex
	reviews []map[string]any
}

func (r *reviewRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var review map[string]any
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	request, _ := review["request"].(map[string]any)
	r.mu.Lock()
	r.reviews = append(r.reviews, review)
	r.mu.Unlock()
	name, _ := request["name"].(string)
	resp := map[string]any{"uid": request["uid"], "allowed": true}
	if strings.HasPrefix(name, "hook-deny") {
		resp = map[string]any{"uid": request["uid"], "allowed": false,
			"status": map[string]any{"code": 403, "reason": "Forbidden", "message": "names starting with hook-deny are refused"}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
}

// review returns the last review received for an object named name in group.
func (r *reviewRecorder) review(group, name string) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.reviews) - 1; i >= 0; i-- {
		req, _ := r.reviews[i]["request"].(map[string]any)
		kind, _ := req["kind"].(map[string]any)
		if req["name"] == name && kind["group"] == group {
			return r.reviews[i]
		}
	}
	return nil
}

// startWebhook serves rec over HTTPS on loopback with a certificate of the
// cluster CA; it returns the URL.
func startWebhook(t *testing.T, p *pki, rec http.Handler) string {
	t.Helper()
	kp, err := p.clusterCA.Issue(certs.Request{CommonName: "webhook", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{kp.TLSCertificate()}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String()
}

// apply applies a manifest with kubectl, failing t (a subtest's) when it
// fails.
func apply(t *testing.T, k *kubectltest.Kubectl, name, manifest string) {
	t.Helper()
	if out, ok := k.Run("apply", "-f", k.WriteFile(name, manifest)); !ok {
		t.Fatalf("kubectl apply %s: %s", name, out)
	}
}

// kubectl runs kubectl, failing t when it fails.
func kubectl(t *testing.T, k *kubectltest.Kubectl, args ...string) {
	t.Helper()
	if out, ok := k.Run(args...); !ok {
		t.Fatalf("kubectl %s: %s", strings.Join(args, " "), out)
	}
}

// admEnv is an Environment of group at v1alpha1.
func admEnv(group, name, owner string, replicas int) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": group + "/v1alpha1", "kind": "Environment", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"owner": owner, "tier": "dev", "replicas": replicas}})
	return string(b)
}

// canonical is a JSON answer re-encoded with sorted keys, the CRD's group
// written as annex's, so that annex's and kube's answers compare as strings.
func canonical(t *testing.T, body string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return body
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), crdGroup, admGroup)
}

func TestClusterAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver; not in -short")
	}
	p := newPKI(t)
	// kube 1.33 serves MutatingAdmissionPolicy at v1alpha1, behind its gate.
	kasURL, kasLogs, stopKAS := startStoppableKubeAPIServer(t, p, binaries.Etcd(t),
		"--feature-gates=MutatingAdmissionPolicy=true", "--runtime-config=admissionregistration.k8s.io/v1alpha1=true")
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	k.MustRun("apply", "-f", k.WriteFile("setup.yaml", gcSetup))
	admin := p.client(t)

	// The CRD of the same shape, in crdGroup.
	var openAPI map[string]any
	if err := yaml.Unmarshal(environmentSchemaYAML(t), &openAPI); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, admin, kasURL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "environments." + crdGroup},
		"spec": map[string]any{
			"group": crdGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": "environments", "singular": "environment", "kind": "Environment", "listKind": "EnvironmentList"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": openAPI}, "subresources": map[string]any{"status": map[string]any{}}}},
		},
	})
	crdEnvs := kasURL + "/apis/" + crdGroup + "/v1alpha1/namespaces/default/environments"
	annexEnvs := kasURL + "/apis/" + admGroup + "/v1alpha1/namespaces/default/environments"
	waitUntil(t, 2*time.Minute, "the CRD served", kasLogs, func() bool {
		code, _ := call(t, admin, http.MethodGet, crdEnvs, "")
		return code == http.StatusOK
	})

	// annex, delegated, behind the aggregator.
	serving, err := p.clusterCA.Issue(certs.Request{CommonName: "annex-gc", DNSNames: []string{"annex-gc.kube-system.svc", "localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	annexLogs := &lockedBuffer{}
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(annexLogs), zap.InfoLevel))
	kubeconfig := p.kubeconfig(t, "annex-adm", kasURL, p.exampleUser)
	srv := runAnnex(t, annex.Builder{
		Name:      "annex-adm",
		Resources: []rest.Resource{environmentResource(t, admGroup, "v1alpha1")},
		DataDir:   t.TempDir(),
		Serving: annex.Serving{Listener: ln, CertFile: writeFile(t, filepath.Join(p.dir, "annex-adm.crt"), serving.CertPEM),
			KeyFile: writeFile(t, filepath.Join(p.dir, "annex-adm.key"), serving.KeyPEM)},
		Authentication: annex.Authentication{Delegation: &annex.Delegation{AuthenticationKubeconfig: kubeconfig, AuthorizationKubeconfig: kubeconfig,
			AuthorizedTTL: 5 * time.Minute}},
		Observability: annex.Observability{Logger: logger},
	})
	logs := multiLog{kasLogs, annexLogs}
	k.MustRun("apply", "-f", k.WriteFile("apiservice.yaml", fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.%[1]s}
spec:
  group: %[1]s
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {name: annex-gc, namespace: kube-system, port: %[2]d}
  caBundle: %[3]s
`, admGroup, ln.Addr().(*net.TCPAddr).Port, base64.StdEncoding.EncodeToString(p.clusterCA.CertPEM))))
	waitUntil(t, 2*time.Minute, "APIService Available=True", logs, func() bool {
		out, _ := k.Run("get", "apiservice", "v1alpha1."+admGroup, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return out == "True"
	})

	t.Run("readyz_names_the_followed_configuration", func(t *testing.T) {
		code, body := send(t, admin, http.MethodGet, srv.URL()+"/readyz?verbose", "", "", nil)
		if code != http.StatusOK || !strings.Contains(body, "[+]cluster-admission-configuration ok\n") {
			t.Errorf("annex /readyz?verbose: %d\n%s", code, body)
		}
	})

	// createBoth creates the same object in the CRD and in annex and
	// returns both answers, canonical.
	createBoth := func(t *testing.T, name, owner string, replicas int) (kube, ours string, kubeCode, ourCode int) {
		t.Helper()
		kubeCode, kube = send(t, admin, http.MethodPost, crdEnvs, admEnv(crdGroup, name, owner, replicas), "application/json", nil)
		ourCode, ours = send(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, name, owner, replicas), "application/json", nil)
		return canonical(t, kube), canonical(t, ours), kubeCode, ourCode
	}

	t.Run("validating_policy_denies_then_binding_deleted", func(t *testing.T) {
		apply(t, k, "vap.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-mallory}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [`+admGroup+`, `+crdGroup+`], apiVersions: ["*"], operations: [CREATE, UPDATE], resources: [environments]}
  validations:
  - expression: "object.spec.owner != 'mallory'"
    message: mallory may not own environments
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-mallory-binding}
spec: {policyName: no-mallory, validationActions: [Deny]}
`)
		// kube's own policy informer takes a moment too: wait for both.
		i := 0
		waitUntil(t, time.Minute, "the policy enforced by kube-apiserver and annex", logs, func() bool {
			i++
			_, _, kc, oc := createBoth(t, fmt.Sprintf("mallory-%d", i), "mallory", 1)
			return kc != http.StatusCreated && oc != http.StatusCreated
		})
		kube, ours, kc, oc := createBoth(t, "mallory-x", "mallory", 1)
		t.Logf("kube-apiserver: %d %s", kc, kube)
		if kc != http.StatusForbidden || !strings.Contains(kube, "ValidatingAdmissionPolicy 'no-mallory' with binding 'no-mallory-binding' denied request: mallory may not own environments") {
			t.Errorf("kube-apiserver's denial is not what the test expects of it: %d %s", kc, kube)
		}
		if oc != kc || ours != kube {
			t.Errorf("annex's denial differs from kube-apiserver's:\nkube:  %d %s\nannex: %d %s", kc, kube, oc, ours)
		}
		kubectl(t, k, "delete", "validatingadmissionpolicybinding", "no-mallory-binding")
		start := time.Now()
		i = 0
		waitUntil(t, 30*time.Second, "annex to admit mallory once the binding is gone", logs, func() bool {
			i++
			code, _ := call(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, fmt.Sprintf("mallory-after-%d", i), "mallory", 1))
			return code == http.StatusCreated
		})
		took := time.Since(start)
		t.Logf("annex admitted mallory %v after the binding was deleted", took)
		if took > 10*time.Second {
			t.Errorf("annex took %v to follow the binding's deletion, want a few seconds", took)
		}
	})

	t.Run("param_from_a_configmap", func(t *testing.T) {
		apply(t, k, "vap-param.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: env-limits, namespace: default}
data: {maxReplicas: "3"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [`+admGroup+`, `+crdGroup+`], apiVersions: ["*"], operations: [CREATE], resources: [environments]}
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
    messageExpression: "'replicas must be at most ' + params.data.maxReplicas + ', not ' + string(object.spec.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-replicas-binding}
spec:
  policyName: max-replicas
  validationActions: [Deny]
  paramRef: {name: env-limits, namespace: default, parameterNotFoundAction: Deny}
`)
		i := 0
		waitUntil(t, time.Minute, "the param policy enforced by both", logs, func() bool {
			i++
			_, _, kc, oc := createBoth(t, fmt.Sprintf("big-%d", i), "platform", 5)
			return kc != http.StatusCreated && oc != http.StatusCreated
		})
		kube, ours, kc, oc := createBoth(t, "big-x", "platform", 5)
		t.Logf("kube-apiserver: %d %s", kc, kube)
		if !strings.Contains(kube, "replicas must be at most 3, not 5") {
			t.Errorf("kube-apiserver's denial does not read the param: %d %s", kc, kube)
		}
		if oc != kc || ours != kube {
			t.Errorf("annex's denial differs from kube-apiserver's:\nkube:  %d %s\nannex: %d %s", kc, kube, oc, ours)
		}
		// A new value in the ConfigMap is followed.
		kubectl(t, k, "patch", "configmap", "env-limits", "-n", "default", "--type=merge", "-p", `{"data":{"maxReplicas":"10"}}`)
		i = 0
		waitUntil(t, 30*time.Second, "annex to read the ConfigMap's new value", logs, func() bool {
			i++
			code, _ := call(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, fmt.Sprintf("big-after-%d", i), "platform", 5))
			return code == http.StatusCreated
		})
		kubectl(t, k, "delete", "validatingadmissionpolicybinding", "max-replicas-binding")
	})

	t.Run("param_from_the_servers_own_resource", func(t *testing.T) {
		// The param is an Environment annex serves: annex reads it as any
		// param, from the cluster, which proxies the list and watch back to
		// annex through the aggregator (so its identity needs list and watch
		// on its own resource in the cluster's RBAC, as kube's would).
		apply(t, k, "own-param-rbac.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-adm:own-params"}
rules: [{apiGroups: [`+admGroup+`], resources: [environments], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-adm:own-params"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-adm:own-params"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
`)
		if code, body := send(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, "quota", "platform", 2), "application/json", nil); code != http.StatusCreated {
			t.Fatalf("creating the param object: %d %s", code, body)
		}
		apply(t, k, "vap-own-param.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas-under-quota}
spec:
  paramKind: {apiVersion: `+admGroup+`/v1alpha1, kind: Environment}
  matchConstraints:
    resourceRules:
    - {apiGroups: [`+admGroup+`], apiVersions: ["*"], operations: [CREATE], resources: [environments]}
  validations:
  - expression: "object.spec.replicas <= params.spec.replicas"
    messageExpression: "'replicas must be at most ' + string(params.spec.replicas) + ', the quota of ' + params.metadata.name"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-under-quota-binding}
spec:
  policyName: replicas-under-quota
  validationActions: [Deny]
  paramRef: {name: quota, namespace: default, parameterNotFoundAction: Deny}
`)
		t.Cleanup(func() {
			k.Run("delete", "validatingadmissionpolicybinding", "replicas-under-quota-binding", "--ignore-not-found")
		})
		i := 0
		var code int
		var body string
		waitUntil(t, time.Minute, "annex to deny by its own object as param", logs, func() bool {
			i++
			code, body = send(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, fmt.Sprintf("over-quota-%d", i), "platform", 3), "application/json", nil)
			return code != http.StatusCreated
		})
		want := "ValidatingAdmissionPolicy 'replicas-under-quota' with binding 'replicas-under-quota-binding' denied request: replicas must be at most 2, the quota of quota"
		// A validation with no reason denies with 422 Invalid, as kube's
		// (param_from_a_configmap compares with kube's answer).
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
			t.Errorf("over the quota: %d %s, want 422 %q", code, body, want)
		}
		if code, body := send(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, "under-quota", "platform", 2), "application/json", nil); code != http.StatusCreated {
			t.Errorf("within the quota: %d %s", code, body)
		}
		kubectl(t, k, "delete", "validatingadmissionpolicybinding", "replicas-under-quota-binding")
	})

	t.Run("webhook_gets_the_review_kube_sends", func(t *testing.T) {
		rec := &reviewRecorder{}
		hookURL := startWebhook(t, p, rec)
		apply(t, k, "vwc.yaml", fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: env-checker}
webhooks:
- name: env-checker.e2e.annex.dev
  clientConfig: {url: "%s/validate", caBundle: %s}
  rules:
  - {apiGroups: [%s, %s], apiVersions: ["*"], operations: [CREATE], resources: [environments]}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
`, hookURL, base64.StdEncoding.EncodeToString(p.clusterCA.CertPEM), admGroup, crdGroup))
		i := 0
		waitUntil(t, time.Minute, "the webhook called by both", logs, func() bool {
			i++
			name := fmt.Sprintf("hook-deny-%d", i)
			createBoth(t, name, "platform", 1)
			return rec.review(crdGroup, name) != nil && rec.review(admGroup, name) != nil
		})
		kube, ours, kc, oc := createBoth(t, "hook-deny-x", "platform", 1)
		if kc != http.StatusForbidden || !strings.Contains(kube, `admission webhook \"env-checker.e2e.annex.dev\" denied the request: names starting with hook-deny are refused`) {
			t.Errorf("kube-apiserver's denial is not what the test expects of it: %d %s", kc, kube)
		}
		if oc != kc || ours != kube {
			t.Errorf("annex's denial differs from kube-apiserver's:\nkube:  %d %s\nannex: %d %s", kc, kube, oc, ours)
		}
		_, _, kc, oc = createBoth(t, "hook-ok", "platform", 1)
		if kc != http.StatusCreated || oc != http.StatusCreated {
			t.Fatalf("hook-ok: kube %d, annex %d", kc, oc)
		}
		kubeReview, ourReview := normalizeReview(t, rec.review(crdGroup, "hook-ok")), normalizeReview(t, rec.review(admGroup, "hook-ok"))
		if kubeReview != ourReview {
			t.Errorf("the AdmissionReview annex sends differs from kube-apiserver's:\nkube:  %s\nannex: %s", kubeReview, ourReview)
		}
		kubectl(t, k, "delete", "validatingwebhookconfiguration", "env-checker")
	})

	t.Run("mutating_webhook_by_service_through_the_proxy", func(t *testing.T) {
		// A webhook named by service is reached through the cluster's
		// service proxy: the Service's Endpoints name the webhook, on an
		// address that is not loopback (Endpoints refuse loopback): a test
		// host in a network namespace of its own.
		host := newNetnsHost(t)
		ip := host.IP
		kp, err := p.clusterCA.Issue(certs.Request{CommonName: "env-mutator", DNSNames: []string{"env-mutator.default.svc"}, IPAddresses: []net.IP{ip}})
		if err != nil {
			t.Fatal(err)
		}
		hln := tls.NewListener(host.Listen(t), &tls.Config{Certificates: []tls.Certificate{kp.TLSCertificate()}})
		var calls sync.Map // path -> true
		hook := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Store(r.URL.Path, true)
			var review struct {
				Request struct {
					UID string `json:"uid"`
				} `json:"request"`
			}
			_ = json.NewDecoder(r.Body).Decode(&review)
			patch := base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels","value":{"hooked":"through-the-proxy"}}]`))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true,"patchType":"JSONPatch","patch":%q}}`, review.Request.UID, patch)
		})}
		go func() { _ = hook.Serve(hln) }()
		t.Cleanup(func() { _ = hook.Close() })
		port := hln.Addr().(*net.TCPAddr).Port
		// kube-apiserver proxies only to the addresses of pods: a pod
		// (never scheduled here) that says it has the webhook's address.
		apply(t, k, "hook-pod.yaml", `apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: default}
---
apiVersion: v1
kind: Pod
metadata: {name: env-mutator, namespace: default}
spec: {automountServiceAccountToken: false, containers: [{name: hook, image: example.invalid/hook}]}
`)
		kubectl(t, k, "patch", "pod", "env-mutator", "-n", "default", "--subresource=status", "--type=merge", "-p",
			fmt.Sprintf(`{"status":{"podIP":%q,"podIPs":[{"ip":%q}]}}`, ip, ip))
		apply(t, k, "mwc.yaml", fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: env-mutator, namespace: default}
spec: {ports: [{port: 443, targetPort: %[1]d, protocol: TCP}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: env-mutator, namespace: default}
subsets: [{addresses: [{ip: "%[2]s", targetRef: {kind: Pod, name: env-mutator, namespace: default}}], ports: [{port: %[1]d, protocol: TCP}]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: env-mutator}
webhooks:
- name: env-mutator.e2e.annex.dev
  clientConfig:
    service: {name: env-mutator, namespace: default, path: /mutate, port: 443}
    caBundle: %[3]s
  rules:
  - {apiGroups: [%[4]s], apiVersions: ["*"], operations: [CREATE], resources: [environments]}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
`, port, ip, base64.StdEncoding.EncodeToString(p.clusterCA.CertPEM), admGroup))
		t.Cleanup(func() { k.Run("delete", "mutatingwebhookconfiguration", "env-mutator", "--ignore-not-found") })
		i := 0
		waitUntil(t, time.Minute, "annex to call the webhook through the service proxy", logs, func() bool {
			i++
			code, body := send(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, fmt.Sprintf("proxied-%d", i), "platform", 1), "application/json", nil)
			if i%25 == 1 {
				t.Logf("attempt %d: %d %s", i, code, body)
			}
			return strings.Contains(body, `"hooked":"through-the-proxy"`)
		})
		if _, ok := calls.Load("/mutate"); !ok {
			t.Errorf("the webhook was not called at its path /mutate")
		}
		kubectl(t, k, "delete", "mutatingwebhookconfiguration", "env-mutator")
	})

	t.Run("mutating_policy_mutates", func(t *testing.T) {
		apply(t, k, "map.yaml", `apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicy
metadata: {name: label-envs}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [`+admGroup+`, `+crdGroup+`], apiVersions: ["*"], operations: [CREATE], resources: [environments]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"mutated-by": "cluster-map", "owner": string(object.spec.owner)}}}
---
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicyBinding
metadata: {name: label-envs-binding}
spec: {policyName: label-envs}
`)
		labels := func(body string) string {
			var o struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			_ = json.Unmarshal([]byte(body), &o)
			b, _ := json.Marshal(o.Metadata.Labels)
			return string(b)
		}
		want := `{"mutated-by":"cluster-map","owner":"platform"}`
		i := 0
		var kube, ours string
		waitUntil(t, time.Minute, "the mutating policy applied by both", logs, func() bool {
			i++
			kube, ours, _, _ = createBoth(t, fmt.Sprintf("map-%d", i), "platform", 1)
			return labels(kube) == want && labels(ours) == want
		})
		t.Logf("labels: kube %s, annex %s", labels(kube), labels(ours))
		kubectl(t, k, "delete", "mutatingadmissionpolicybinding", "label-envs-binding")
	})

	t.Run("can_i_list_through_the_aggregator", func(t *testing.T) {
		// authorization.k8s.io is kube-apiserver's own group: kubectl's
		// SelfSubjectRulesReview is answered by the cluster's RBAC, never
		// proxied, and lists the rules the cluster grants on annex's group.
		apply(t, k, "env-reader.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: env-reader}
rules: [{apiGroups: [`+admGroup+`], resources: [environments], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-env-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: env-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`)
		out, ok := k.Run("--as=alice", "auth", "can-i", "--list")
		if !ok {
			t.Fatalf("kubectl auth can-i --list as alice: %s", out)
		}
		wantFields(t, out, "environments."+admGroup, "[]", "[]", "[get", "list]")
	})

	t.Run("admission_metrics_as_kube_names_them", func(t *testing.T) {
		// Both servers ran the same policies and webhooks above: every
		// family of kube's policy and webhook admission metrics that
		// kube-apiserver now exposes, annex exposes too, of the same type
		// and with the same labels.
		_, kubeMetrics := send(t, admin, http.MethodGet, kasURL+"/metrics", "", "", nil)
		_, ourMetrics := send(t, admin, http.MethodGet, srv.URL()+"/metrics", "", "", nil)
		prefixes := []string{"apiserver_validating_admission_policy_", "apiserver_admission_webhook_"}
		kube, ours := metricFamilies(kubeMetrics, prefixes), metricFamilies(ourMetrics, prefixes)
		if len(kube) == 0 {
			t.Fatalf("kube-apiserver exposes no family named %v after the policies and webhooks ran", prefixes)
		}
		for name, want := range kube {
			if got, ok := ours[name]; !ok {
				t.Errorf("annex does not expose %s (kube: %s)", name, want)
			} else if got != want {
				t.Errorf("%s: annex %s, kube %s", name, got, want)
			}
		}
		t.Logf("families compared: %d", len(kube))
	})

	t.Run("cluster_gone_keeps_the_last_policies", func(t *testing.T) {
		apply(t, k, "vap-eve.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-eve}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [`+admGroup+`], apiVersions: ["*"], operations: [CREATE], resources: [environments]}
  validations:
  - {expression: "object.spec.owner != 'eve'", message: eve may not own environments}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-eve-binding}
spec: {policyName: no-eve, validationActions: [Deny]}
`)
		i := 0
		waitUntil(t, time.Minute, "annex to deny eve", logs, func() bool {
			i++
			code, _ := call(t, admin, http.MethodPost, annexEnvs, admEnv(admGroup, fmt.Sprintf("eve-%d", i), "eve", 1))
			return code != http.StatusCreated
		})
		// Straight to annex as the front proxy: the cluster's
		// SubjectAccessReview allowing the admin's creates is cached
		// (AuthorizedTTL), so only admission decides once the cluster is gone.
		direct := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig(p, p.proxyClient)}}
		directEnvs := srv.URL() + "/apis/" + admGroup + "/v1alpha1/namespaces/default/environments"
		asAdmin := http.Header{"X-Remote-User": {"e2e-admin"}, "X-Remote-Group": {"system:masters", "system:authenticated"}}
		if code, body := send(t, direct, http.MethodPost, directEnvs, admEnv(admGroup, "before-stop", "carol", 1), "application/json", asAdmin); code != http.StatusCreated {
			t.Fatalf("direct create before the cluster stops: %d %s", code, body)
		}
		stopKAS()
		if _, err := admin.Get(kasURL + "/readyz"); err == nil {
			t.Fatalf("kube-apiserver still answers after stop")
		}
		code, body := send(t, direct, http.MethodPost, directEnvs, admEnv(admGroup, "eve-gone", "eve", 1), "application/json", asAdmin)
		if code == http.StatusCreated || !strings.Contains(body, "ValidatingAdmissionPolicy 'no-eve' with binding 'no-eve-binding' denied request: eve may not own environments") {
			t.Errorf("eve with the cluster gone: %d %s", code, body)
		}
		if code, body := send(t, direct, http.MethodPost, directEnvs, admEnv(admGroup, "carol-gone", "carol", 1), "application/json", asAdmin); code != http.StatusCreated {
			t.Errorf("carol with the cluster gone: %d %s", code, body)
		}
		waitUntil(t, time.Minute, "annex /readyz to say the cluster does not answer", logs, func() bool {
			_, body := send(t, admin, http.MethodGet, srv.URL()+"/readyz?verbose", "", "", nil)
			return strings.Contains(body, "[+]cluster-admission-configuration ok: the cluster does not answer, the last configuration seen is enforced")
		})
	})

	if t.Failed() {
		t.Logf("annex log tail:\n%s", tail(annexLogs.String(), 6000))
		t.Logf("kube-apiserver log tail:\n%s", tail(kasLogs.String(), 6000))
	}
}

// normalizeReview is an AdmissionReview with what differs between any two
// requests (uid, the object's uid, creation time, managed fields' time)
// left out, as canonical JSON.
func normalizeReview(t *testing.T, review map[string]any) string {
	t.Helper()
	if review == nil {
		return "<none>"
	}
	req, _ := review["request"].(map[string]any)
	delete(req, "uid")
	if obj, ok := req["object"].(map[string]any); ok {
		md, _ := obj["metadata"].(map[string]any)
		delete(md, "uid")
		delete(md, "creationTimestamp")
		if mfs, ok := md["managedFields"].([]any); ok {
			for _, mf := range mfs {
				if m, ok := mf.(map[string]any); ok {
					delete(m, "time")
				}
			}
		}
	}
	b, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return canonical(t, string(b))
}

// TestClusterAdmissionReadiness: behind a kube-apiserver 1.33 as it comes
// (MutatingAdmissionPolicy not served at any version), annex refuses writes
// with kube's 403 until it has listed the cluster's configuration, names
// what it waits for in /readyz, and once it may list it, follows the kinds
// the cluster serves and treats MutatingAdmissionPolicy as empty — saying
// so in /readyz and its log — instead of waiting for it for ever.
func TestClusterAdmissionReadiness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver; not in -short")
	}
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	// Without admReader: the server may not list the configuration yet.
	k.MustRun("apply", "-f", k.WriteFile("setup.yaml", gcBaseSetup))
	admin := p.client(t)
	serving, err := p.clusterCA.Issue(certs.Request{CommonName: "annex-gc", DNSNames: []string{"annex-gc.kube-system.svc", "localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	annexLogs := &lockedBuffer{}
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(annexLogs), zap.InfoLevel))
	kubeconfig := p.kubeconfig(t, "annex-adm", kasURL, p.exampleUser)
	srv := runAnnex(t, annex.Builder{
		Name:      "annex-adm",
		Resources: []rest.Resource{environmentResource(t, admGroup, "v1alpha1")},
		DataDir:   t.TempDir(),
		Serving: annex.Serving{Listener: ln, CertFile: writeFile(t, filepath.Join(p.dir, "annex-adm.crt"), serving.CertPEM),
			KeyFile: writeFile(t, filepath.Join(p.dir, "annex-adm.key"), serving.KeyPEM)},
		Authentication: annex.Authentication{Delegation: &annex.Delegation{AuthenticationKubeconfig: kubeconfig, AuthorizationKubeconfig: kubeconfig}},
		Observability:  annex.Observability{Logger: logger},
	})
	logs := multiLog{kasLogs, annexLogs}
	envs := srv.URL() + "/apis/" + admGroup + "/v1alpha1/namespaces/default/environments"
	waitUntil(t, time.Minute, "annex to serve", logs, func() bool {
		code, _ := call(t, admin, http.MethodGet, envs, "")
		return code == http.StatusOK
	})

	t.Run("not_ready_until_listed", func(t *testing.T) {
		_, body := send(t, admin, http.MethodGet, srv.URL()+"/readyz/cluster-admission-configuration", "", "", nil)
		for _, want := range []string{"not listed from the cluster yet:", "validatingadmissionpolicies.v1", "validatingwebhookconfigurations.v1", "forbidden"} {
			if !strings.Contains(body, want) {
				t.Errorf("/readyz/cluster-admission-configuration does not say %q:\n%s", want, body)
			}
		}
		start := time.Now()
		code, body := send(t, admin, http.MethodPost, envs, admEnv(admGroup, "early", "platform", 1), "application/json", nil)
		took := time.Since(start)
		want := `environments.adm.annex.e2e \"early\" is forbidden: not yet ready to handle request`
		if code != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("a create before the configuration is listed: %d %s, want 403 %s", code, body, want)
		}
		if took < 9*time.Second {
			t.Errorf("refused after %v: kube waits 10s for its informers first", took)
		}
	})

	t.Run("kinds_not_served_are_empty", func(t *testing.T) {
		k.MustRun("apply", "-f", k.WriteFile("reader.yaml", admReader))
		waitUntil(t, time.Minute, "the configuration listed", logs, func() bool {
			code, _ := call(t, admin, http.MethodGet, srv.URL()+"/readyz/cluster-admission-configuration", "")
			return code == http.StatusOK
		})
		_, body := send(t, admin, http.MethodGet, srv.URL()+"/readyz?verbose", "", "", nil)
		want := "[+]cluster-admission-configuration ok: not served by the cluster, followed as empty: mutatingadmissionpolicies, mutatingadmissionpolicybindings\n"
		if !strings.Contains(body, want) {
			t.Errorf("/readyz?verbose does not say %q:\n%s", want, body)
		}
		if !strings.Contains(annexLogs.String(), `"msg":"admission: the cluster does not serve this configuration kind; it is followed as empty","resource":"mutatingadmissionpolicies.admissionregistration.k8s.io"`) {
			t.Errorf("the log does not say MutatingAdmissionPolicy is not served:\n%s", tail(annexLogs.String(), 3000))
		}
		if code, body := send(t, admin, http.MethodPost, envs, admEnv(admGroup, "later", "platform", 1), "application/json", nil); code != http.StatusCreated {
			t.Errorf("a create once listed: %d %s", code, body)
		}
	})
}

// metricFamilies reads a Prometheus text exposition: for each family whose
// name has one of prefixes, its type and the label names of its first
// sample (histograms: of the _bucket series, le left out), as "type
// {labels}".
func metricFamilies(text string, prefixes []string) map[string]string {
	types := map[string]string{}
	labels := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(rest, " "); ok {
				types[name] = typ
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		series, _, _ := strings.Cut(line, " ")
		name, lbls, _ := strings.Cut(series, "{")
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(name, suffix); base != name && types[base] == "histogram" {
				name = base
			}
		}
		if _, seen := labels[name]; seen {
			continue
		}
		var names []string
		for _, kv := range strings.Split(strings.TrimSuffix(lbls, "}"), ",") {
			if k, _, ok := strings.Cut(kv, "="); ok && k != "le" {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		labels[name] = strings.Join(names, ",")
	}
	out := map[string]string{}
	for name, typ := range types {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				out[name] = typ + " {" + labels[name] + "}"
			}
		}
	}
	return out
}
