package e2e

// Deletion in a real cluster (issue 21): an annex server registered behind
// kube-aggregator, with a real kube-controller-manager (built from the Go
// module proxy at the kube-apiserver's version) running only the namespace
// controller and the garbage collector. The namespace controller deletes
// every namespaced resource it discovers, annex's included; the garbage
// collector follows ownerReferences across APIs in both directions: an annex
// object owned by a ConfigMap, and a ConfigMap owned by an annex object,
// deleted in the background, in the foreground and orphaned.
//
// The same cluster serves a CRD with the annex resource's schema, and a
// second annex server (reached directly, with the same client certificate)
// serves the same group, version and schema: the deletion-related Status
// messages of both must be the same for the same requests.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"sigs.k8s.io/yaml"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/internal/kubectltest"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/schema"
)

// gcGroup is the group the annex server behind the aggregator serves.
const gcGroup = "gc.annex.e2e"

// gcSetup lets the annex server's identity (the example user's certificate)
// delegate authentication and authorization and read the flowcontrol
// objects, the namespaces (its NamespaceLifecycle admission) and the
// cluster's admission configuration (admReader), and names its Service.
const gcSetup = gcBaseSetup + "---\n" + admReader

// gcBaseSetup is gcSetup without the admission configuration.
const gcBaseSetup = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-gc:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: annex-gc-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-gc:flowcontrol-reader"}
rules:
- {apiGroups: [flowcontrol.apiserver.k8s.io], resources: [flowschemas, prioritylevelconfigurations], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-gc:flowcontrol-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-gc:flowcontrol-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-gc:namespace-reader"}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-gc:namespace-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-gc:namespace-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: v1
kind: Service
metadata: {name: annex-gc, namespace: kube-system}
spec: {type: ExternalName, externalName: localhost}
`

// environmentResource is the environments example's resource (its schema,
// no strategy) in group and version.
func environmentResource(t *testing.T, group, version string) rest.Resource {
	t.Helper()
	props, err := schema.ParseYAML(environmentSchemaYAML(t))
	if err != nil {
		t.Fatal(err)
	}
	return rest.Resource{Group: group, Version: version, Plural: "environments", Singular: "environment",
		Kind: "Environment", ListKind: "EnvironmentList", Namespaced: true, Schema: props, StatusSubresource: true}
}

// environmentSchemaYAML is the v1alpha1 openAPIV3Schema of the
// environments example's CRD manifest, as YAML.
func environmentSchemaYAML(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../examples/environments/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &def); err != nil {
		t.Fatal(err)
	}
	for _, v := range def.Spec.Versions {
		if v.Name == "v1alpha1" {
			out, err := yaml.Marshal(v.Schema.OpenAPIV3Schema)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatal("crd.yaml has no v1alpha1")
	return nil
}

// runAnnex builds b and runs it until the test ends.
func runAnnex(t *testing.T, b annex.Builder) *annex.Server {
	t.Helper()
	srv, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("annex %s: Run: %v", b.Name, err)
		}
	})
	return srv
}

// startGCServer runs the annex server the aggregator proxies gcGroup to, in
// delegated mode, with a serving certificate for annex-gc.kube-system.svc.
func startGCServer(t *testing.T, p *pki, kasURL string) (port int) {
	t.Helper()
	serving, err := p.clusterCA.Issue(certs.Request{CommonName: "annex-gc", DNSNames: []string{"annex-gc.kube-system.svc", "localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := p.kubeconfig(t, "annex-gc", kasURL, p.exampleUser)
	runAnnex(t, annex.Builder{
		Name:      "annex-gc",
		Resources: []rest.Resource{environmentResource(t, gcGroup, "v1")},
		DataDir:   t.TempDir(),
		Serving:   annex.Serving{Listener: ln, CertFile: writeFile(t, filepath.Join(p.dir, "annex-gc.crt"), serving.CertPEM), KeyFile: writeFile(t, filepath.Join(p.dir, "annex-gc.key"), serving.KeyPEM)},
		Authentication: annex.Authentication{Delegation: &annex.Delegation{AuthenticationKubeconfig: kubeconfig, AuthorizationKubeconfig: kubeconfig,
			AuthorizedTTL: time.Minute}},
		Observability: annex.Observability{Logger: zap.NewNop()},
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// startKubeControllerManager runs kube-controller-manager with only the
// namespace controller and the garbage collector, as the cluster admin, and
// waits until the garbage collector has synced its monitors (every
// resource it discovered, annex's included, listed once).
func startKubeControllerManager(t *testing.T, p *pki, kasURL string) *lockedBuffer {
	t.Helper()
	bin := binaries.KubeControllerManager(t)
	logs := &lockedBuffer{}
	process(t, "kube-controller-manager", logs, bin,
		"--kubeconfig="+p.kubeconfig(t, "kube-controller-manager", kasURL, p.admin),
		"--controllers=namespace-controller,garbage-collector-controller",
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--secure-port=0",
		"--namespace-sync-period=10s",
		"--v=2",
	)
	waitUntil(t, 2*time.Minute, "the garbage collector's monitors synced", logs, func() bool {
		return strings.Contains(logs.String(), "all resource monitors have synced")
	})
	return logs
}

// apiObject is a decoded JSON response.
type apiObject map[string]any

// str reads a string at a dotted path ("metadata.uid").
func (o apiObject) str(path string) string {
	v, _ := o.at(path).(string)
	return v
}

func (o apiObject) at(path string) any {
	var cur any = map[string]any(o)
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// strings reads a list of strings at a dotted path.
func (o apiObject) strings(path string) []string {
	l, _ := o.at(path).([]any)
	out := make([]string, 0, len(l))
	for _, v := range l {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// call sends a JSON request and decodes the JSON answer (nil when the body
// is not a JSON object).
func call(t *testing.T, c *http.Client, method, url, body string) (int, apiObject) {
	t.Helper()
	code, raw := send(t, c, method, url, body, contentType(method, body), nil)
	var obj apiObject
	_ = json.Unmarshal([]byte(raw), &obj)
	return code, obj
}

// mustCall is call that fails the test unless the status is want.
func mustCall(t *testing.T, c *http.Client, want int, method, url, body string) apiObject {
	t.Helper()
	code, obj := call(t, c, method, url, body)
	if code != want {
		b, _ := json.Marshal(obj)
		t.Fatalf("%s %s: %d, want %d: %s", method, url, code, want, b)
	}
	return obj
}

// gcEnv is an Environment of gcGroup with optional metadata fields.
func gcEnv(name string, metadata map[string]any) string {
	md := map[string]any{"name": name}
	for k, v := range metadata {
		md[k] = v
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": gcGroup + "/v1", "kind": "Environment", "metadata": md,
		"spec": map[string]any{"owner": "platform", "tier": "dev"}})
	return string(b)
}

// configMap is a ConfigMap with optional metadata fields.
func configMap(name string, metadata map[string]any) string {
	md := map[string]any{"name": name}
	for k, v := range metadata {
		md[k] = v
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]string{"k": "v"}})
	return string(b)
}

// ownerRef is an ownerReferences list naming one owner.
func ownerRef(apiVersion, kind string, owner apiObject, block bool) []any {
	ref := map[string]any{"apiVersion": apiVersion, "kind": kind, "name": owner.str("metadata.name"), "uid": owner.str("metadata.uid")}
	if block {
		ref["blockOwnerDeletion"] = true
	}
	return []any{ref}
}

// gone polls url until it answers 404.
func gone(t *testing.T, c *http.Client, d time.Duration, what, url string, logs fmt.Stringer) {
	t.Helper()
	waitUntil(t, d, what, logs, func() bool {
		code, _ := call(t, c, http.MethodGet, url, "")
		return code == http.StatusNotFound
	})
}

func TestDeletionInACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver and kube-controller-manager; not in -short")
	}
	// Build kube-controller-manager (cached) before starting anything that
	// would wait for it.
	binaries.KubeControllerManager(t)
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	k.MustRun("apply", "-f", k.WriteFile("gc-setup.yaml", gcSetup))

	port := startGCServer(t, p, kasURL)
	k.MustRun("apply", "-f", k.WriteFile("apiservice.yaml", fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.%[1]s}
spec:
  group: %[1]s
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {name: annex-gc, namespace: kube-system, port: %[2]d}
  caBundle: %[3]s
`, gcGroup, port, base64.StdEncoding.EncodeToString(p.clusterCA.CertPEM))))
	waitUntil(t, 2*time.Minute, "APIService Available=True", kasLogs, func() bool {
		out, _ := k.Run("get", "apiservice", "v1."+gcGroup, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return out == "True"
	})
	// The controllers start once the annex API is in the cluster's
	// aggregated discovery (what their discovery clients read), so that
	// their first discovery finds it rather than one 30s later.
	discovery := http.Header{"Accept": {"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}}
	waitUntil(t, time.Minute, "the annex group in aggregated discovery", kasLogs, func() bool {
		code, body := send(t, p.client(t), http.MethodGet, kasURL+"/apis", "", "", discovery)
		return code == http.StatusOK && strings.Contains(body, `"name":"`+gcGroup+`"`) && strings.Contains(body, `"resource":"environments"`)
	})
	kcmLogs := startKubeControllerManager(t, p, kasURL)
	logs := multiLog{kasLogs, kcmLogs}

	admin := p.client(t)
	envs := func(ns string) string { return kasURL + "/apis/" + gcGroup + "/v1/namespaces/" + ns + "/environments" }
	cms := func(ns string) string { return kasURL + "/api/v1/namespaces/" + ns + "/configmaps" }
	mustCall(t, admin, http.StatusCreated, http.MethodPost, kasURL+"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"gc"}}`)

	t.Run("namespace_deletion_deletes_annex_objects", func(t *testing.T) {
		const ns = "doomed"
		mustCall(t, admin, http.StatusCreated, http.MethodPost, kasURL+"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"doomed"}}`)
		for _, name := range []string{"plain-1", "plain-2"} {
			mustCall(t, admin, http.StatusCreated, http.MethodPost, envs(ns), gcEnv(name, nil))
		}
		mustCall(t, admin, http.StatusOK, http.MethodDelete, kasURL+"/api/v1/namespaces/"+ns, "")
		for _, name := range []string{"plain-1", "plain-2"} {
			gone(t, admin, time.Minute, "the namespace controller to delete "+name, envs(ns)+"/"+name, logs)
		}
		gone(t, admin, time.Minute, "namespace doomed to go", kasURL+"/api/v1/namespaces/"+ns, logs)
	})

	t.Run("annex_object_owned_by_configmap_is_collected", func(t *testing.T) {
		owner := mustCall(t, admin, http.StatusCreated, http.MethodPost, cms("gc"), configMap("owner-cm", nil))
		mustCall(t, admin, http.StatusCreated, http.MethodPost, envs("gc"),
			gcEnv("owned-by-cm", map[string]any{"ownerReferences": ownerRef("v1", "ConfigMap", owner, false)}))
		mustCall(t, admin, http.StatusOK, http.MethodDelete, cms("gc")+"/owner-cm", "")
		gone(t, admin, time.Minute, "the garbage collector to delete the annex dependent", envs("gc")+"/owned-by-cm", logs)
	})

	t.Run("configmap_owned_by_annex_object_deleted_in_background", func(t *testing.T) {
		owner := mustCall(t, admin, http.StatusCreated, http.MethodPost, envs("gc"), gcEnv("owner-bg", nil))
		mustCall(t, admin, http.StatusCreated, http.MethodPost, cms("gc"),
			configMap("dep-bg", map[string]any{"ownerReferences": ownerRef(gcGroup+"/v1", "Environment", owner, false)}))
		mustCall(t, admin, http.StatusOK, http.MethodDelete, envs("gc")+"/owner-bg", `{"propagationPolicy":"Background"}`)
		if code, _ := call(t, admin, http.MethodGet, envs("gc")+"/owner-bg", ""); code != http.StatusNotFound {
			t.Errorf("the owner after a background delete: %d, want 404 at once", code)
		}
		gone(t, admin, time.Minute, "the garbage collector to delete the ConfigMap", cms("gc")+"/dep-bg", logs)
	})

	t.Run("status_messages_match_a_crd", func(t *testing.T) {
		kasEnvs, annexEnvs := startMessageServers(t, p, kasURL, kasLogs)
		for _, c := range append(deletionMessageCases(), finalizerMessageCases()...) {
			t.Run(c.name, func(t *testing.T) {
				kube := runMessageCase(t, admin, kasEnvs, c)
				ours := runMessageCase(t, admin, annexEnvs, c)
				for i := range c.steps {
					s := c.steps[i]
					if kube[i] != ours[i] {
						t.Errorf("step %d (%s %s):\nkube-apiserver: %s\nannex:          %s", i, s.method, s.path, kube[i], ours[i])
					}
				}
			})
		}
	})

	finalizerSubtests(t, admin, kasURL, k, logs)

	if t.Failed() {
		t.Logf("kube-controller-manager log tail:\n%s", tail(kcmLogs.String(), 6000))
	}
}

// finalizerSubtests are the cluster cases that need annex to keep an object
// with finalizers until they are gone: the namespace controller waiting for
// an annex object's finalizer, and the garbage collector's foreground and
// orphan deletion of an annex owner.
func finalizerSubtests(t *testing.T, admin *http.Client, kasURL string, k *kubectltest.Kubectl, logs fmt.Stringer) {
	envs := func(ns string) string { return kasURL + "/apis/" + gcGroup + "/v1/namespaces/" + ns + "/environments" }
	cms := func(ns string) string { return kasURL + "/api/v1/namespaces/" + ns + "/configmaps" }

	t.Run("namespace_deletion_waits_for_an_annex_finalizer", func(t *testing.T) {
		const ns = "doomed-fin"
		nsURL := kasURL + "/api/v1/namespaces/" + ns
		mustCall(t, admin, http.StatusCreated, http.MethodPost, kasURL+"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"doomed-fin"}}`)
		mustCall(t, admin, http.StatusCreated, http.MethodPost, envs(ns), gcEnv("plain", nil))
		mustCall(t, admin, http.StatusCreated, http.MethodPost, envs(ns),
			gcEnv("finalized", map[string]any{"finalizers": []string{"e2e.annex.dev/cleanup"}}))
		mustCall(t, admin, http.StatusOK, http.MethodDelete, nsURL, "")
		gone(t, admin, time.Minute, "the namespace controller to delete plain", envs(ns)+"/plain", logs)

		// The controller deleted the finalized object too: it stays, being
		// deleted, and the namespace says what it waits for.
		var cond string
		waitUntil(t, time.Minute, "the namespace to report the annex finalizer", logs, func() bool {
			_, nsObj := call(t, admin, http.MethodGet, nsURL, "")
			conds, _ := nsObj.at("status.conditions").([]any)
			for _, c := range conds {
				c, _ := c.(map[string]any)
				if c["type"] == "NamespaceFinalizersRemaining" && c["status"] == "True" {
					cond, _ = c["message"].(string)
				}
			}
			return cond != ""
		})
		if want := "Some content in the namespace has finalizers remaining: e2e.annex.dev/cleanup in 1 resource instances"; cond != want {
			t.Errorf("NamespaceFinalizersRemaining: %q, want %q", cond, want)
		}
		obj := mustCall(t, admin, http.StatusOK, http.MethodGet, envs(ns)+"/finalized", "")
		if obj.str("metadata.deletionTimestamp") == "" {
			t.Fatalf("the finalized object has no deletionTimestamp after the namespace controller's delete: %v", obj["metadata"])
		}
		// annex's namespace lifecycle admission refuses new content.
		if code, st := call(t, admin, http.MethodPost, envs(ns), gcEnv("late", nil)); code != http.StatusForbidden ||
			!strings.Contains(st.str("message"), "because it is being terminated") {
			t.Errorf("create in the terminating namespace: %d %v", code, st["message"])
		}

		// The test's controller finishes its cleanup.
		mustCall(t, admin, http.StatusOK, http.MethodPatch, envs(ns)+"/finalized", dropFinalizers)
		if code, _ := call(t, admin, http.MethodGet, envs(ns)+"/finalized", ""); code != http.StatusNotFound {
			t.Errorf("the object after its last finalizer went: %d, want 404", code)
		}
		gone(t, admin, time.Minute, "namespace doomed-fin to go", nsURL, logs)
	})

	t.Run("configmap_owned_by_annex_object_deleted_in_foreground", func(t *testing.T) {
		owner := mustCall(t, admin, http.StatusCreated, http.MethodPost, envs("gc"), gcEnv("owner-fg", nil))
		mustCall(t, admin, http.StatusCreated, http.MethodPost, cms("gc"),
			configMap("dep-fg", map[string]any{"ownerReferences": ownerRef(gcGroup+"/v1", "Environment", owner, true)}))
		obj := mustCall(t, admin, http.StatusOK, http.MethodDelete, envs("gc")+"/owner-fg", `{"propagationPolicy":"Foreground"}`)
		if obj.str("metadata.deletionTimestamp") == "" || !slices.Contains(obj.strings("metadata.finalizers"), "foregroundDeletion") {
			t.Fatalf("foreground delete answered %v, want deletionTimestamp and the foregroundDeletion finalizer", obj["metadata"])
		}
		// The owner goes only after its blocking dependent: once it is
		// gone, the ConfigMap must already be.
		waitUntil(t, time.Minute, "the garbage collector to finish the foreground deletion", logs, func() bool {
			code, o := call(t, admin, http.MethodGet, envs("gc")+"/owner-fg", "")
			if code == http.StatusOK && !slices.Contains(o.strings("metadata.finalizers"), "foregroundDeletion") {
				t.Fatalf("the owner lost its foregroundDeletion finalizer but is still there: %v", o["metadata"])
			}
			return code == http.StatusNotFound
		})
		if code, _ := call(t, admin, http.MethodGet, cms("gc")+"/dep-fg", ""); code != http.StatusNotFound {
			t.Errorf("the blocking dependent after its foreground owner went: %d, want 404 (deleted first)", code)
		}
	})

	t.Run("kubectl_delete_cascade_orphan_leaves_dependents", func(t *testing.T) {
		owner := mustCall(t, admin, http.StatusCreated, http.MethodPost, envs("gc"), gcEnv("owner-or", nil))
		mustCall(t, admin, http.StatusCreated, http.MethodPost, cms("gc"),
			configMap("dep-or", map[string]any{"ownerReferences": ownerRef(gcGroup+"/v1", "Environment", owner, false)}))
		// kubectl waits until the object is gone: the garbage collector
		// orphans the dependent, then removes the orphan finalizer.
		k.MustRun("delete", "environments."+gcGroup, "owner-or", "-n", "gc", "--cascade=orphan", "--timeout=60s")
		if code, _ := call(t, admin, http.MethodGet, envs("gc")+"/owner-or", ""); code != http.StatusNotFound {
			t.Errorf("the owner after kubectl delete --cascade=orphan returned: %d, want 404", code)
		}
		dep := mustCall(t, admin, http.StatusOK, http.MethodGet, cms("gc")+"/dep-or", "")
		if refs := dep.at("metadata.ownerReferences"); refs != nil {
			t.Errorf("the orphaned ConfigMap still has ownerReferences %v", refs)
		}
	})
}

// startMessageServers creates a CRD with the annex resource's schema in the
// cluster and runs a second annex server (standalone, the cluster's client
// CA) serving the same group, version and schema; it returns the two
// collection URLs in namespace default.
func startMessageServers(t *testing.T, p *pki, kasURL string, kasLogs fmt.Stringer) (kasEnvs, annexEnvs string) {
	t.Helper()
	admin := p.client(t)
	var openAPI map[string]any
	if err := yaml.Unmarshal(environmentSchemaYAML(t), &openAPI); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, admin, kasURL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "environments.platform.example.com"},
		"spec": map[string]any{
			"group": "platform.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "environments", "singular": "environment", "kind": "Environment", "listKind": "EnvironmentList"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": openAPI}, "subresources": map[string]any{"status": map[string]any{}}}},
		},
	})
	kasEnvs = kasURL + "/apis/platform.example.com/v1alpha1/namespaces/default/environments"
	waitUntil(t, 2*time.Minute, "the CRD served", kasLogs, func() bool {
		code, _ := call(t, admin, http.MethodGet, kasEnvs, "")
		return code == http.StatusOK
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := runAnnex(t, annex.Builder{
		Name:           "environments",
		Resources:      []rest.Resource{environmentResource(t, "platform.example.com", "v1alpha1")},
		DataDir:        t.TempDir(),
		Serving:        annex.Serving{Listener: ln, CertFile: p.file("serving.crt"), KeyFile: p.file("serving.key")},
		Authentication: annex.Authentication{ClientCAFile: p.file("cluster-ca.crt")},
		Observability:  annex.Observability{Logger: zap.NewNop()},
	})
	waitUntil(t, time.Minute, "annex /readyz", &lockedBuffer{}, func() bool {
		code, _ := call(t, admin, http.MethodGet, srv.URL()+"/readyz", "")
		return code == http.StatusOK
	})
	return kasEnvs, srv.URL() + "/apis/platform.example.com/v1alpha1/namespaces/default/environments"
}

// messageStep is one request of a message case, relative to the collection
// URL. When edit is set the body is the previous step's answer, edited.
type messageStep struct {
	method, path, body string
	edit               func(prev apiObject)
}

type messageCase struct {
	name  string
	steps []messageStep
}

// A UID no object has.
const strangerUID = "6b1f0c5e-0000-4000-8000-000000000000"

// withMeta is an Environment of platform.example.com with extra metadata.
func withMeta(name string, metadata map[string]any) string {
	md := map[string]any{"name": name}
	for k, v := range metadata {
		md[k] = v
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "platform.example.com/v1alpha1", "kind": "Environment", "metadata": md,
		"spec": map[string]any{"owner": "platform", "tier": "dev", "replicas": 1}})
	return string(b)
}

func keep(name string) string {
	return withMeta(name, map[string]any{"finalizers": []string{"e2e.annex.dev/keep"}})
}

// dropFinalizers is the merge patch a controller sends when it is done.
const dropFinalizers = `{"metadata":{"finalizers":null}}`

// deletionMessageCases are the requests whose answers (status code, Status
// or the deletion-related part of the object) must be the same on
// kube-apiserver serving a CRD and on annex.
func deletionMessageCases() []messageCase {
	return []messageCase{
		{name: "delete_uid_precondition_conflict", steps: []messageStep{
			{method: "POST", body: withMeta("m-uid", nil)},
			{method: "DELETE", path: "/m-uid", body: `{"preconditions":{"uid":"` + strangerUID + `"}}`},
		}},
		{name: "owner_reference_without_uid", steps: []messageStep{
			{method: "POST", body: withMeta("m-own-1", map[string]any{"ownerReferences": []any{
				map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}}})},
		}},
		{name: "owner_reference_without_api_version_kind_name", steps: []messageStep{
			{method: "POST", body: withMeta("m-own-2", map[string]any{"ownerReferences": []any{
				map[string]any{"uid": strangerUID}}})},
		}},
		{name: "delete_unknown_propagation_policy", steps: []messageStep{
			{method: "POST", body: withMeta("m-pp", nil)},
			{method: "DELETE", path: "/m-pp", body: `{"propagationPolicy":"Sideways"}`},
			{method: "DELETE", path: "/m-pp", body: `{"propagationPolicy":"Orphan","orphanDependents":true}`},
		}},
		{name: "orphan_and_foreground_finalizers", steps: []messageStep{
			{method: "POST", body: withMeta("m-both", map[string]any{"finalizers": []string{"orphan", "foregroundDeletion"}})},
		}},
	}
}

// finalizerMessageCases are the cases of objects being deleted: finalizers,
// propagation policies and deletionGracePeriodSeconds (the object stays with
// deletionTimestamp set and generation bumped, no new finalizers after that,
// 202 for orphanDependents=false, deletecollection leaves objects with
// finalizers being deleted), deletionTimestamp set by an update ("field is
// immutable"), two controllers (kube prints the slice with %#v, each element
// named v1.OwnerReference{...}), and an update without resourceVersion
// (kube's Invalid names the qualified resource there).
func finalizerMessageCases() []messageCase {
	setMeta := func(k string, v any) func(apiObject) {
		return func(o apiObject) { o["metadata"].(map[string]any)[k] = v }
	}
	return []messageCase{
		{name: "finalizer_added_after_deletion", steps: []messageStep{
			{method: "POST", body: keep("m-fin")},
			{method: "DELETE", path: "/m-fin"},
			{method: "PATCH", path: "/m-fin", body: `{"metadata":{"finalizers":["e2e.annex.dev/keep","e2e.annex.dev/late"]}}`},
			{method: "PATCH", path: "/m-fin", body: `{"metadata":{"labels":{"still":"editable"}}}`},
			{method: "DELETE", path: "/m-fin"}, // a second delete
			{method: "PATCH", path: "/m-fin", body: dropFinalizers},
			{method: "GET", path: "/m-fin"},
		}},
		{name: "owner_references_with_two_controllers", steps: []messageStep{
			{method: "POST", body: withMeta("m-own-3", map[string]any{"ownerReferences": []any{
				map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": strangerUID, "controller": true},
				map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "b", "uid": "6b1f0c5e-0000-4000-8000-000000000001", "controller": true}}})},
		}},
		{name: "put_without_resource_version", steps: []messageStep{
			{method: "POST", body: withMeta("m-put", nil)},
			{method: "GET", path: "/m-put"},
			{method: "PUT", path: "/m-put", edit: func(o apiObject) { delete(o["metadata"].(map[string]any), "resourceVersion") }},
		}},
		{name: "deletion_timestamp_set_by_update", steps: []messageStep{
			{method: "POST", body: withMeta("m-dt-live", nil)},
			{method: "GET", path: "/m-dt-live"},
			{method: "PUT", path: "/m-dt-live", edit: setMeta("deletionTimestamp", "2001-02-03T04:05:06Z")},
		}},
		{name: "deletion_timestamp_changed_by_update", steps: []messageStep{
			{method: "POST", body: keep("m-dt")},
			{method: "DELETE", path: "/m-dt"},
			{method: "PUT", path: "/m-dt", edit: setMeta("deletionTimestamp", "2001-02-03T04:05:06Z")},
			{method: "GET", path: "/m-dt"},
			{method: "PATCH", path: "/m-dt", body: dropFinalizers},
		}},
		{name: "last_of_two_finalizers", steps: []messageStep{
			{method: "POST", body: withMeta("m-two", map[string]any{"finalizers": []string{"e2e.annex.dev/a", "e2e.annex.dev/b"}})},
			{method: "DELETE", path: "/m-two"},
			{method: "PATCH", path: "/m-two", body: `{"metadata":{"finalizers":["e2e.annex.dev/b"]}}`},
			{method: "PATCH", path: "/m-two", body: `{"metadata":{"finalizers":[]}}`},
			{method: "GET", path: "/m-two"},
		}},
		{name: "deletecollection_with_a_finalizer", steps: []messageStep{
			{method: "POST", body: withMeta("m-dc-1", map[string]any{"labels": map[string]string{"dc": "yes"}})},
			{method: "POST", body: withMeta("m-dc-2", map[string]any{"labels": map[string]string{"dc": "yes"}, "finalizers": []string{"e2e.annex.dev/keep"}})},
			{method: "DELETE", path: "?labelSelector=dc%3Dyes"},
			{method: "GET", path: "?labelSelector=dc%3Dyes"},
			{method: "PATCH", path: "/m-dc-2", body: dropFinalizers},
			{method: "GET", path: "?labelSelector=dc%3Dyes"},
		}},
		{name: "delete_orphan", steps: []messageStep{
			{method: "POST", body: keep("m-orphan")},
			{method: "DELETE", path: "/m-orphan", body: `{"propagationPolicy":"Orphan"}`},
		}},
		{name: "delete_foreground", steps: []messageStep{
			{method: "POST", body: keep("m-fg")},
			{method: "DELETE", path: "/m-fg", body: `{"propagationPolicy":"Foreground"}`},
		}},
		{name: "delete_orphan_dependents_false", steps: []messageStep{
			{method: "POST", body: keep("m-od")},
			{method: "DELETE", path: "/m-od", body: `{"orphanDependents":false}`},
		}},
		{name: "delete_grace_period", steps: []messageStep{
			{method: "POST", body: keep("m-grace")},
			{method: "DELETE", path: "/m-grace", body: `{"gracePeriodSeconds":30}`},
			{method: "PATCH", path: "/m-grace", body: dropFinalizers},
		}},
	}
}

// runMessageCase runs c's steps against the collection at base and returns
// each answer as "<code> <normalized body>": a Status whole, an object as
// the fields deletion touches (see deletionView), with the UIDs of the
// objects the case created replaced by <uid>.
func runMessageCase(t *testing.T, c *http.Client, base string, mc messageCase) []string {
	t.Helper()
	var out []string
	var prev apiObject
	var uids []string
	for _, s := range mc.steps {
		body := s.body
		if s.edit != nil {
			s.edit(prev)
			b, _ := json.Marshal(prev)
			body = string(b)
		}
		code, raw := send(t, c, s.method, base+s.path, body, contentType(s.method, body), nil)
		var obj apiObject
		if err := json.Unmarshal([]byte(raw), &obj); err != nil {
			t.Fatalf("%s %s%s: %d, not a JSON object: %q", s.method, base, s.path, code, raw)
		}
		if uid := obj.str("metadata.uid"); uid != "" && obj["kind"] != "Status" {
			uids = append(uids, uid)
		}
		prev = obj
		view := deletionView(obj)
		for _, uid := range uids {
			view = strings.ReplaceAll(view, uid, "<uid>")
		}
		out = append(out, fmt.Sprintf("%d %s", code, view))
	}
	return out
}

// contentType is the Content-Type of a request body: JSON, or a JSON merge
// patch for PATCH.
func contentType(method, body string) string {
	switch {
	case body == "":
		return ""
	case method == http.MethodPatch:
		return "application/merge-patch+json"
	default:
		return "application/json"
	}
}

// deletionView is the JSON of what the comparison looks at: a Status whole,
// an object's kind and the metadata deletion reads or writes (finalizers,
// ownerReferences, whether deletionTimestamp is set, the grace period,
// generation).
func deletionView(o apiObject) string {
	if o["kind"] == "Status" {
		dedupeCauses(o)
		b, _ := json.Marshal(o)
		return boolPointer.ReplaceAllString(string(b), "(*bool)(<ptr>)")
	}
	if items, ok := o["items"].([]any); ok {
		views := make([]string, 0, len(items))
		for _, it := range items {
			it, _ := it.(map[string]any)
			views = append(views, deletionView(it))
		}
		return fmt.Sprintf("%s [%s]", o["kind"], strings.Join(views, ", "))
	}
	md, _ := o["metadata"].(map[string]any)
	v := map[string]any{"kind": o["kind"]}
	for _, k := range []string{"name", "finalizers", "ownerReferences", "deletionGracePeriodSeconds", "generation"} {
		if x, ok := md[k]; ok {
			v[k] = x
		}
	}
	if _, ok := md["deletionTimestamp"]; ok {
		v["deletionTimestamp"] = "<set>"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// multiLog joins the tails of several logs for failure messages.
type multiLog []fmt.Stringer

func (m multiLog) String() string {
	var b strings.Builder
	for _, l := range m {
		b.WriteString(tail(l.String(), 3000))
		b.WriteString("\n----\n")
	}
	return b.String()
}

// boolPointer matches a *bool printed with %#v inside an Invalid value:
// kube-apiserver prints the pointer's address, which no other process can
// reproduce; annex may print the value instead. nil is printed as such by
// both and compared.
var boolPointer = regexp.MustCompile(`\(\*bool\)\((0x[0-9a-f]+|true|false)\)`)

// dedupeCauses drops repeated causes from a Status: kube-apiserver validates
// ObjectMeta twice on update (the generic BeforeUpdate and the custom
// resource strategy) and lists a failure of that check twice; the message
// names it once.
func dedupeCauses(o apiObject) {
	details, _ := o["details"].(map[string]any)
	causes, _ := details["causes"].([]any)
	if len(causes) < 2 {
		return
	}
	seen := map[string]bool{}
	var out []any
	for _, c := range causes {
		b, _ := json.Marshal(c)
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, c)
		}
	}
	details["causes"] = out
}
