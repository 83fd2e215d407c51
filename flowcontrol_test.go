package annex_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/flowcontrol"
	"github.com/annexapi/annex/rest"
)

// oneSeatForX puts user x in a level of one seat that rejects what does not
// fit (with 1 + 1 server seats every limited level gets one).
const oneSeatForX = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: one-seat}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: user-x}
spec:
  priorityLevelConfiguration: {name: one-seat}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: x}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`

// testersPolicy lets the group testers do anything to test.annex.dev.
const testersPolicy = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tester}
rules:
- {apiGroups: [test.annex.dev], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: testers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tester}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: testers}
`

// gate is a computed resource whose LIST in namespace "slow" waits until
// released: a request that holds its seat as long as the test wants.
type gate struct {
	entered, release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) resource() rest.Resource {
	return rest.Resource{Group: "test.annex.dev", Version: "v1", Plural: "gauges", Kind: "Gauge", Namespaced: true,
		Lister: rest.ListerFunc(func(ctx context.Context, ns string, _ rest.ListOptions) ([][]byte, error) {
			if ns == "slow" {
				g.entered <- struct{}{}
				select {
				case <-g.release:
				case <-ctx.Done():
				}
			}
			return nil, nil
		})}
}

// metricValue returns the value of the counter or gauge name whose labels
// include want, summed over the matching series.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestFlowControlThroughTheServer: the Builder's flowcontrol stage, set by
// kube's flags, over HTTPS: user x's level has one seat and rejects, so x's
// second concurrent request is 429 with Retry-After while y, the admin and
// the health paths go on; the rejection is counted as the flowcontrol
// stage's; a watch gives its seat back once its initial events are out; the
// debug dumps are for system:masters only.
func TestFlowControlThroughTheServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens.csv", "x-token,x,x-1,\"testers\"\ny-token,y,y-1,\"testers\"\n")
	policy := writeFile(t, dir, "rbac.yaml", testersPolicy)
	config := writeFile(t, dir, "flowcontrol.yaml", oneSeatForX)
	g := newGate()
	reg := prometheus.NewRegistry()
	// As --token-auth-file, --authorization-policy-file, --max-requests-inflight=1,
	// --max-mutating-requests-inflight=1 and --flowcontrol-config-file give it.
	b := annex.Builder{Resources: []rest.Resource{widgets(), g.resource()}, DataDir: filepath.Join(dir, "data"),
		Authentication: annex.Authentication{TokenAuthFile: tokens}, Authorization: annex.Authorization{PolicyFiles: []string{policy}},
		FlowControl:   flowcontrol.Config{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1, ConfigFiles: []string{config}},
		Observability: annex.Observability{Registerer: reg}}
	srv := startServer(t, b)
	admin, anon, url := srv.Client(), srv.AnonymousClient(), srv.URL
	as := func(token, method, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := anon.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, readAll(t, resp)
	}
	if code, body := do(t, admin, http.MethodPost, url+widgetsPath, `{"metadata":{"name":"w1"}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}

	t.Run("response_headers_name_schema_and_level", func(t *testing.T) {
		resp, body := as("y-token", http.MethodGet, widgetsPath)
		if resp.StatusCode != 200 {
			t.Fatalf("y list: %d %s", resp.StatusCode, body)
		}
		fsUID, plUID := resp.Header.Get(flowcontrol.HeaderFlowSchemaUID), resp.Header.Get(flowcontrol.HeaderPriorityLevelUID)
		if want := flowcontrol.StableUID(flowcontrol.KindFlowSchema, "global-default"); fsUID != want {
			t.Errorf("FlowSchema UID %q, want global-default's %q", fsUID, want)
		}
		if want := flowcontrol.StableUID(flowcontrol.KindPriorityLevelConfiguration, "global-default"); plUID != want {
			t.Errorf("PriorityLevel UID %q, want global-default's %q", plUID, want)
		}
	})

	t.Run("second_concurrent_request_of_x_is_429", func(t *testing.T) {
		slow := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, url+"/apis/test.annex.dev/v1/namespaces/slow/gauges", nil)
			req.Header.Set("Authorization", "Bearer x-token")
			resp, err := anon.Do(req)
			if err != nil {
				slow <- 0
				return
			}
			resp.Body.Close()
			slow <- resp.StatusCode
		}()
		<-g.entered // x's first request holds the level's one seat
		resp, body := as("x-token", http.MethodGet, widgetsPath)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"reason":"TooManyRequests"`) {
			t.Errorf("x's second request: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		if resp, body := as("y-token", http.MethodGet, widgetsPath); resp.StatusCode != 200 {
			t.Errorf("y meanwhile: %d %s", resp.StatusCode, body)
		}
		if code, body := do(t, admin, http.MethodGet, url+widgetsPath, ""); code != 200 {
			t.Errorf("admin (exempt) meanwhile: %d %s", code, body)
		}
		if code, body := do(t, anon, http.MethodGet, url+"/readyz", ""); code != 200 {
			t.Errorf("/readyz meanwhile: %d %s", code, body)
		}
		g.release <- struct{}{}
		if code := <-slow; code != 200 {
			t.Errorf("x's first request: %d", code)
		}
		if n := metricValue(t, reg, "annex_request_rejections_total", map[string]string{"stage": annex.StageFlowControl}); n != 1 {
			t.Errorf("annex_request_rejections_total{stage=flowcontrol} = %v, want 1", n)
		}
		if n := metricValue(t, reg, "apiserver_flowcontrol_rejected_requests_total",
			map[string]string{"priority_level": "one-seat", "flow_schema": "user-x", "reason": "concurrency-limit"}); n != 1 {
			t.Errorf("apiserver_flowcontrol_rejected_requests_total{one-seat,user-x,concurrency-limit} = %v, want 1", n)
		}
	})

	t.Run("watch_gives_its_seat_back_after_initial_events", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+widgetsPath+"?watch=1", nil)
		req.Header.Set("Authorization", "Bearer x-token")
		resp, err := anon.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if resp.StatusCode != 200 || err != nil || !strings.Contains(line, `"type":"ADDED"`) || !strings.Contains(line, `"name":"w1"`) {
			t.Fatalf("watch: %d %v %q", resp.StatusCode, err, line)
		}
		// The seat is released right after the flush the client just read
		// from; wait for it on the level's gauge, not on a clock.
		deadline := time.Now().Add(5 * time.Second)
		for metricValue(t, reg, "apiserver_flowcontrol_current_executing_seats", map[string]string{"priority_level": "one-seat"}) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the watch still holds its seat 5s after its initial events")
			}
			time.Sleep(time.Millisecond) // polling interval
		}
		if resp, body := as("x-token", http.MethodGet, widgetsPath); resp.StatusCode != 200 {
			t.Errorf("x's GET with its watch open: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("debug_dumps_for_masters_only", func(t *testing.T) {
		code, body := do(t, admin, http.MethodGet, url+annex.FlowControlDebugPath+"dump_priority_levels", "")
		if code != 200 || !strings.Contains(body, "PriorityLevelName") || !strings.Contains(body, "one-seat") {
			t.Errorf("admin dump: %d %s", code, body)
		}
		if resp, body := as("y-token", http.MethodGet, annex.FlowControlDebugPath+"dump_priority_levels"); resp.StatusCode != 403 {
			t.Errorf("y dump: %d %s", resp.StatusCode, body)
		}
	})
}

// TestFlowControlFields: Build's first phase names the field, for a setting
// with no effect in the chosen mode and for configuration that does not
// load (package kubeflags names the flags that set them).
func TestFlowControlFields(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	good := writeFile(t, files, "good.yaml", oneSeatForX)
	badObject := writeFile(t, files, "bad.yaml", strings.Replace(oneSeatForX, "nominalConcurrencyShares: 1", "nominalConcurrencyShares: -1", 1))
	unknownField := writeFile(t, files, "unknown.yaml", strings.Replace(oneSeatForX, "matchingPrecedence: 100", "matchingPrecedence: 100\n  color: blue", 1))
	missing := filepath.Join(files, "missing.yaml")
	kubeconfig := writeFile(t, files, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	objs, err := flowcontrol.LoadFiles(good)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		field func(*annex.Builder)
		want  []string
	}{
		{"file_with_apf_off", func(b *annex.Builder) { b.FlowControl.Disabled, b.FlowControl.ConfigFiles = true, []string{good} },
			[]string{"FlowControl.ConfigFiles: has no effect with priority and fairness off (FlowControl.Disabled"}},
		{"objects_with_apf_off", func(b *annex.Builder) { b.FlowControl.Disabled, b.FlowControl.Objects = true, objs },
			[]string{"FlowControl.Objects: has no effect with priority and fairness off (FlowControl.Disabled"}},
		{"file_in_delegated_mode", func(b *annex.Builder) {
			b.Authentication.Delegation = &annex.Delegation{AuthenticationKubeconfig: kubeconfig, AuthorizationKubeconfig: kubeconfig}
			b.FlowControl.ConfigFiles = []string{good}
		}, []string{"FlowControl.ConfigFiles: has no effect when the configuration follows the cluster's"}},
		{"no_seats", func(b *annex.Builder) {
			b.FlowControl.MaxRequestsInFlight, b.FlowControl.MaxMutatingRequestsInFlight = -1, -1
		},
			[]string{"FlowControl.MaxRequestsInFlight and FlowControl.MaxMutatingRequestsInFlight (--max-requests-inflight, --max-mutating-requests-inflight): leave no seats"}},
		{"invalid_object_in_file", func(b *annex.Builder) { b.FlowControl.ConfigFiles = []string{badObject} },
			[]string{"FlowControl.ConfigFiles: ", "nominalConcurrencyShares"}},
		{"unknown_field_in_file", func(b *annex.Builder) { b.FlowControl.ConfigFiles = []string{unknownField} },
			[]string{"FlowControl.ConfigFiles: ", "color"}},
		{"missing_file", func(b *annex.Builder) { b.FlowControl.ConfigFiles = []string{missing} }, []string{"FlowControl.ConfigFiles: ", "missing.yaml"}},
		{"same_object_in_two_files", func(b *annex.Builder) { b.FlowControl.ConfigFiles = []string{good, good} },
			[]string{"FlowControl.ConfigFiles: ", "one-seat"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := annex.Builder{Resources: []rest.Resource{widgets()}, DataDir: filepath.Join(t.TempDir(), "data")}
			tt.field(&b)
			_, err := b.Build()
			if err == nil {
				t.Fatal("Build succeeded")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if _, statErr := os.Stat(b.DataDir); !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("a failed Build made DataDir (%v)", statErr)
			}
		})
	}
}

// TestFlowControlOffWithoutLimits: --enable-priority-and-fairness=false with
// both limits 0 is kube's "no limit at all"; the zero Builder is priority
// and fairness with kube's defaults.
func TestFlowControlOffWithoutLimits(t *testing.T) {
	t.Parallel()
	t.Run("zero_value_is_apf_with_kube_defaults", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t, annex.Builder{})
		resp, err := srv.Client().Get(srv.URL + widgetsPath)
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("list: %d %s", resp.StatusCode, body)
		}
		// The admin is classified, by kube's mandatory FlowSchema exempt.
		if got, want := resp.Header.Get(flowcontrol.HeaderFlowSchemaUID), flowcontrol.StableUID(flowcontrol.KindFlowSchema, "exempt"); got != want {
			t.Errorf("FlowSchema UID %q, want exempt's %q", got, want)
		}
		// Kube's mandatory and suggested priority levels.
		code, dump := do(t, srv.Client(), http.MethodGet, srv.URL+annex.FlowControlDebugPath+"dump_priority_levels", "")
		for _, level := range []string{"exempt", "catch-all", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default"} {
			if code != 200 || !strings.Contains(dump, "\n"+level+",") {
				t.Errorf("the priority levels (%d) lack kube's %s:\n%s", code, level, dump)
			}
		}
		// Kube's 400 + 200 seats: global-default has 20 of the 245 shares of
		// the limited levels, ceil(600 * 20 / 245) seats.
		code, metrics := do(t, srv.Client(), http.MethodGet, srv.URL+"/metrics", "")
		if want := `apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 49`; code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (%d) lacks %s:\n%s", code, want, grepLines(metrics, "nominal_limit_seats"))
		}
	})
	t.Run("off_with_zero_limits_is_unlimited", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		g := newGate()
		// --enable-priority-and-fairness=false --max-requests-inflight=0 --max-mutating-requests-inflight=0
		srv := startServer(t, annex.Builder{Resources: []rest.Resource{widgets(), g.resource()},
			Authentication: annex.Authentication{TokenAuthFile: writeFile(t, dir, "tokens.csv", "y-token,y,y-1,\"testers\"\n")},
			Authorization:  annex.Authorization{PolicyFiles: []string{writeFile(t, dir, "rbac.yaml", testersPolicy)}},
			FlowControl:    flowcontrol.Config{Disabled: true, MaxRequestsInFlight: -1, MaxMutatingRequestsInFlight: -1}})
		var once sync.Once
		release := func() { once.Do(func() { close(g.release) }) }
		t.Cleanup(release) // before the server stops, which waits for them
		resp, err := srv.Client().Get(srv.URL + widgetsPath)
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp); resp.StatusCode != 200 || resp.Header.Get(flowcontrol.HeaderFlowSchemaUID) != "" {
			t.Fatalf("list: %d, FlowSchema UID %q, want 200 and none with priority and fairness off: %s",
				resp.StatusCode, resp.Header.Get(flowcontrol.HeaderFlowSchemaUID), body)
		}
		if code, metrics := do(t, srv.Client(), http.MethodGet, srv.URL+"/metrics", ""); code != 200 || strings.Contains(metrics, "apiserver_flowcontrol_") {
			t.Errorf("/metrics (%d) with priority and fairness off:\n%s", code, grepLines(metrics, "apiserver_flowcontrol_"))
		}
		// More read-only requests of one user at once than kube's default
		// limit (400): every one is served, none refused.
		const n = flowcontrol.DefaultMaxRequestsInFlight + 1
		codes := make(chan int, n)
		for range n {
			go func() {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis/test.annex.dev/v1/namespaces/slow/gauges", nil)
				req.Header.Set("Authorization", "Bearer y-token")
				resp, err := srv.AnonymousClient().Do(req)
				if err != nil {
					codes <- 0
					return
				}
				resp.Body.Close()
				codes <- resp.StatusCode
			}()
		}
		deadline := time.After(30 * time.Second)
		for i := range n {
			select {
			case <-g.entered:
			case code := <-codes:
				t.Fatalf("a request answered %d while %d others were held", code, i)
			case <-deadline:
				t.Fatalf("%d of %d requests reached the handler after 30s", i, n)
			}
		}
		release()
		for range n {
			if code := <-codes; code != 200 {
				t.Errorf("a held request: %d, want 200", code)
			}
		}
	})
}
