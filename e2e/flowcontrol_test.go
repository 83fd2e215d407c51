package e2e

// API priority and fairness behind a real kube-apiserver: a Builder-built
// server, in delegated mode, registered through an APIService and reached
// through kube-aggregator, follows the cluster's FlowSchemas and
// PriorityLevelConfigurations. A level of one seat that rejects, created in
// the cluster for user x, makes x's second concurrent slow request a 429 with
// Retry-After while user y goes on; and client-go, given that 429, waits and
// retries on its own.

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	restclient "k8s.io/client-go/rest"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/internal/kubectltest"
	"github.com/annexapi/annex/rest"
)

const apfGroup = "apf.annex.e2e"

// apfSetup is the cluster side: the server's own identity (the example
// user's certificate) may delegate and read the flowcontrol objects; x and
// y may read slowthings; x has a level of one seat that rejects.
const apfSetup = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-apf:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: annex-apf-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "annex-apf:flowcontrol-reader"}
rules:
- {apiGroups: [flowcontrol.apiserver.k8s.io], resources: [flowschemas, prioritylevelconfigurations], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "annex-apf:flowcontrol-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "annex-apf:flowcontrol-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: annex-metrics-server}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: slowthings-reader}
rules:
- {apiGroups: [apf.annex.e2e], resources: [slowthings], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: slowthings-readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: slowthings-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "x"}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "y"}
---
apiVersion: v1
kind: Service
metadata: {name: annex-apf, namespace: kube-system}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: one-seat}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: user-x}
spec:
  priorityLevelConfiguration: {name: one-seat}
  matchingPrecedence: 100
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: "x"}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`

// slowGate is the slowthings resource: a LIST in namespace "slow" waits
// until released, so a request holds its seat as long as the test wants.
type slowGate struct {
	entered chan struct{}
	release chan struct{}
}

func (g *slowGate) resource() rest.Resource {
	obj := func(ns, name string) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"%s/v1","kind":"SlowThing","metadata":{"name":%q,"namespace":%q,"creationTimestamp":"2025-01-01T00:00:00Z"}}`, apfGroup, name, ns)
	}
	return rest.Resource{Group: apfGroup, Version: "v1", Plural: "slowthings", Kind: "SlowThing", Namespaced: true,
		Getter: rest.GetterFunc(func(_ context.Context, ns, name string) ([]byte, error) { return obj(ns, name), nil }),
		Lister: rest.ListerFunc(func(ctx context.Context, ns string, _ rest.ListOptions) ([][]byte, error) {
			if ns == "slow" {
				g.entered <- struct{}{}
				select {
				case <-g.release:
				case <-ctx.Done():
				}
			}
			return [][]byte{obj(ns, "one")}, nil
		})}
}

// startAPFServer builds and runs the server in delegated mode with a serving
// certificate from the cluster CA for annex-apf.kube-system.svc.
func startAPFServer(t *testing.T, p *pki, kasURL string, g *slowGate) (port int) {
	t.Helper()
	serving, err := p.clusterCA.Issue(certs.Request{CommonName: "annex-apf", DNSNames: []string{"annex-apf.kube-system.svc", "localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := p.kubeconfig(t, "annex-apf", kasURL, p.exampleUser)
	b := annex.Builder{
		Name:        "annex-apf",
		Resources:   []rest.Resource{g.resource()},
		DataDir:     t.TempDir(),
		FlowControl: flowcontrol.Config{MaxRequestsInFlight: 100, MaxMutatingRequestsInFlight: 50},
		Serving:     annex.Serving{Listener: ln, CertFile: writeFile(t, filepath.Join(p.dir, "annex-apf.crt"), serving.CertPEM), KeyFile: writeFile(t, filepath.Join(p.dir, "annex-apf.key"), serving.KeyPEM)},
		Authentication: annex.Authentication{Delegation: &annex.Delegation{AuthenticationKubeconfig: kubeconfig, AuthorizationKubeconfig: kubeconfig,
			AuthorizedTTL: time.Minute}},
		Observability: annex.Observability{Logger: zap.NewNop()},
	}
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
			t.Errorf("Run: %v", err)
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// asUser sends a GET through kube-apiserver as the admin impersonating user.
func asUser(t *testing.T, c *http.Client, url, user string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Impersonate-User", user)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, sb.String()
}

// getInBackground sends a GET as user from another goroutine; the channel
// gets its status (0 when it failed).
func getInBackground(c *http.Client, url, user string) <-chan int {
	code := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Impersonate-User", user)
		resp, err := c.Do(req)
		if err != nil {
			code <- 0
			return
		}
		resp.Body.Close()
		code <- resp.StatusCode
	}()
	return code
}

// throttleCounter counts the 429s a client-go client receives and says when
// the first arrives.
type throttleCounter struct {
	next  http.RoundTripper
	n     atomic.Int64
	first chan struct{}
}

func (c *throttleCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests && c.n.Add(1) == 1 {
		close(c.first)
	}
	return resp, err
}

func TestAggregatedFlowControl(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver; not in -short")
	}
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	k := kubectltest.New(t, p.kubeconfig(t, "admin", kasURL, p.admin))
	k.MustRun("apply", "-f", k.WriteFile("apf-setup.yaml", apfSetup+"---\n"+admReader))

	g := &slowGate{entered: make(chan struct{}, 8), release: make(chan struct{})}
	port := startAPFServer(t, p, kasURL, g)
	k.MustRun("apply", "-f", k.WriteFile("apiservice.yaml", fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.%[1]s}
spec:
  group: %[1]s
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {name: annex-apf, namespace: kube-system, port: %[2]d}
  caBundle: %[3]s
`, apfGroup, port, base64.StdEncoding.EncodeToString(p.clusterCA.CertPEM))))
	waitUntil(t, 2*time.Minute, "APIService Available=True", kasLogs, func() bool {
		out, _ := k.Run("get", "apiservice", "v1."+apfGroup, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return out == "True"
	})

	admin := p.client(t)
	admin.Timeout = time.Minute
	base := kasURL + "/apis/" + apfGroup + "/v1/namespaces/"
	// The server follows the cluster's objects: x's requests name the
	// cluster's FlowSchema (its real UID) once the server has listed them.
	fsUID := k.MustRun("get", "flowschema", "user-x", "-o", "jsonpath={.metadata.uid}")
	plUID := k.MustRun("get", "prioritylevelconfiguration", "one-seat", "-o", "jsonpath={.metadata.uid}")
	waitUntil(t, time.Minute, "x's requests classified by the cluster's FlowSchema user-x", kasLogs, func() bool {
		resp, _ := asUser(t, admin, base+"fast/slowthings", "x")
		return resp.StatusCode == 200 && resp.Header.Get(flowcontrol.HeaderFlowSchemaUID) == fsUID &&
			resp.Header.Get(flowcontrol.HeaderPriorityLevelUID) == plUID
	})

	t.Run("second_concurrent_slow_request_of_x_is_429", func(t *testing.T) {
		first := getInBackground(admin, base+"slow/slowthings", "x")
		<-g.entered // x's first request holds the one seat
		resp, body := asUser(t, admin, base+"slow/slowthings", "x")
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"reason":"TooManyRequests"`) {
			t.Errorf("x's second slow request: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		if resp.Header.Get(flowcontrol.HeaderPriorityLevelUID) != plUID {
			t.Errorf("the 429 names priority level %q, want one-seat's %q", resp.Header.Get(flowcontrol.HeaderPriorityLevelUID), plUID)
		}
		for _, path := range []string{"other/slowthings", "other/slowthings/one"} {
			if resp, body := asUser(t, admin, base+path, "y"); resp.StatusCode != 200 {
				t.Errorf("y's %s while x is throttled: %d %s", path, resp.StatusCode, body)
			}
		}
		g.release <- struct{}{}
		if code := <-first; code != 200 {
			t.Errorf("x's first request: %d", code)
		}
	})

	t.Run("client_go_retries_429_with_retry_after", func(t *testing.T) {
		counter := &throttleCounter{first: make(chan struct{})}
		cfg := &restclient.Config{Host: kasURL, Impersonate: restclient.ImpersonationConfig{UserName: "x"},
			TLSClientConfig: restclient.TLSClientConfig{CAData: p.clusterCA.CertPEM, CertData: p.admin.CertPEM, KeyData: p.admin.KeyPEM},
			WrapTransport:   func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }}
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		held := getInBackground(admin, base+"slow/slowthings", "x")
		<-g.entered // x's seat is taken
		type result struct {
			name string
			err  error
			took time.Duration
		}
		got := make(chan result, 1)
		go func() {
			start := time.Now()
			obj, err := dc.Resource(schema.GroupVersionResource{Group: apfGroup, Version: "v1", Resource: "slowthings"}).
				Namespace("other").Get(context.Background(), "one", v1.GetOptions{})
			r := result{err: err, took: time.Since(start)}
			if err == nil {
				r.name = obj.GetName()
			}
			got <- r
		}()
		select {
		case <-counter.first: // throttled once: now let the retry through
		case r := <-got:
			t.Fatalf("the dynamic client's GET returned before any 429: %+v", r)
		}
		g.release <- struct{}{}
		r := <-got
		if r.err != nil || r.name != "one" {
			t.Fatalf("dynamic GET after a 429: %q %v", r.name, r.err)
		}
		if n := counter.n.Load(); n < 1 {
			t.Errorf("429s seen by client-go: %d, want at least 1", n)
		}
		if code := <-held; code != 200 {
			t.Errorf("x's held request: %d", code)
		}
		t.Logf("client-go: %d×429 with Retry-After, then 200 after %v", counter.n.Load(), r.took.Round(time.Millisecond))
	})

	if t.Failed() {
		t.Logf("kube-apiserver log tail:\n%s", tail(kasLogs.String(), 4000))
	}
}
