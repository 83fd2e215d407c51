// This file tests, through the public API, the rules of admission webhooks
// against Kubernetes' (k8s.io/apiserver/pkg/admission/plugin/webhook):
// which requests call a webhook (rules, namespaceSelector, objectSelector,
// matchConditions), failurePolicy (default Fail), timeoutSeconds,
// sideEffects under dryRun, and reinvocationPolicy.

package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/meta"
)

// hookServer is an HTTPS AdmissionReview server that records the reviews it
// receives, by path:
//
//	/allow  allows
//	/error  answers 500
//	/slow   answers once the caller gave up
//	/label  allows with a JSONPatch adding the label patched=<n>
type hookServer struct {
	srv *httptest.Server
	ca  []byte

	mu      sync.Mutex
	calls   map[string]int
	reviews []map[string]any // the requests, in order
	queries []string         // their ?timeout=
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{calls: map[string]int{}}
	stop := make(chan struct{})
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request map[string]any `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.calls[r.URL.Path]++
		n := h.calls[r.URL.Path]
		h.reviews = append(h.reviews, review.Request)
		h.queries = append(h.queries, r.URL.Query().Get("timeout"))
		h.mu.Unlock()
		resp := map[string]any{"uid": review.Request["uid"], "allowed": true}
		switch r.URL.Path {
		case "/error":
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		case "/label":
			patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/metadata/labels/patched", "value": strings.Repeat("x", n)}})
			resp["patchType"] = "JSONPatch"
			resp["patch"] = patch
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() { close(stop) }) // runs before srv.Close
	h.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	return h
}

func (h *hookServer) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[path]
}

// hook is a webhook on every CREATE and UPDATE of widgets, calling path.
func (h *hookServer) hook(name, path string) admission.Webhook {
	return admission.Webhook{
		Name:         name,
		ClientConfig: admission.WebhookClientConfig{URL: ptr(h.srv.URL + path), CABundle: h.ca},
		Rules: []admission.Rule{{Operations: []string{"CREATE", "UPDATE"}, APIGroups: []string{"example.annex.dev"},
			APIVersions: []string{"v1"}, Resources: []string{"widgets"}}},
		SideEffects:             ptr("None"),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func TestValidatingWebhookRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		path   string
		edit   func(*admission.Webhook)
		a      func() *admission.Attributes
		called bool
		// wantCode is the Status code of the error, 0 for none; wantMsg a
		// part of its message.
		wantCode int32
		wantMsg  string
	}{
		{name: "rules_match", path: "/allow", called: true},
		{name: "rules_do_not_match_delete", path: "/allow",
			a: func() *admission.Attributes { return request("DELETE", "prod", "w", "", nil) }},
		{name: "rules_do_not_match_subresource", path: "/allow",
			a: func() *admission.Attributes { return request("UPDATE", "prod", "w", "status", nil) }},
		// failurePolicy.
		{name: "failure_policy_default_is_fail", path: "/error", called: true,
			wantCode: 500, wantMsg: `failed calling webhook "hook.example.dev"`},
		{name: "failure_policy_fail", path: "/error", called: true, edit: func(w *admission.Webhook) { w.FailurePolicy = ptr("Fail") },
			wantCode: 500, wantMsg: `failed calling webhook "hook.example.dev"`},
		{name: "failure_policy_ignore", path: "/error", called: true, edit: func(w *admission.Webhook) { w.FailurePolicy = ptr("Ignore") }},
		// timeoutSeconds.
		{name: "timeout_fail", path: "/slow", called: true, edit: func(w *admission.Webhook) { w.TimeoutSeconds = ptr(int32(1)) },
			wantCode: 500, wantMsg: `failed calling webhook "hook.example.dev"`},
		{name: "timeout_ignore", path: "/slow", called: true, edit: func(w *admission.Webhook) {
			w.TimeoutSeconds = ptr(int32(1))
			w.FailurePolicy = ptr("Ignore")
		}},
		// sideEffects under dryRun.
		{name: "dry_run_side_effects_none", path: "/allow", called: true, a: dryRun},
		{name: "dry_run_side_effects_none_on_dry_run", path: "/allow", called: true, a: dryRun,
			edit: func(w *admission.Webhook) { w.SideEffects = ptr("NoneOnDryRun") }},
		{name: "dry_run_side_effects_some", path: "/allow", a: dryRun, edit: func(w *admission.Webhook) { w.SideEffects = ptr("Some") },
			wantCode: 400, wantMsg: `admission webhook "hook.example.dev" does not support dry run`},
		{name: "dry_run_side_effects_unknown_ignore_still_refused", path: "/allow", a: dryRun, edit: func(w *admission.Webhook) {
			w.SideEffects = ptr("Unknown")
			w.FailurePolicy = ptr("Ignore")
		}, wantCode: 400, wantMsg: `admission webhook "hook.example.dev" does not support dry run`},
		{name: "side_effects_some_without_dry_run", path: "/allow", called: true, edit: func(w *admission.Webhook) { w.SideEffects = ptr("Some") }},
		// matchConditions.
		{name: "match_conditions_true", path: "/allow", called: true, edit: func(w *admission.Webhook) {
			w.MatchConditions = []admission.NamedExpression{{Name: "ns", Expression: `request.namespace == "prod"`}, {Name: "obj", Expression: `object.metadata.name == "w"`}}
		}},
		{name: "match_conditions_false", path: "/allow", edit: func(w *admission.Webhook) {
			w.MatchConditions = []admission.NamedExpression{{Name: "ns", Expression: `request.namespace == "dev"`}}
		}},
		{name: "match_conditions_error_fail", path: "/allow", edit: func(w *admission.Webhook) {
			w.MatchConditions = []admission.NamedExpression{{Name: "bad", Expression: `object.spec.x == 1`}}
		}, wantCode: 403, wantMsg: `failed to evaluate match condition "bad"`},
		{name: "match_conditions_error_ignore", path: "/allow", edit: func(w *admission.Webhook) {
			w.MatchConditions = []admission.NamedExpression{{Name: "bad", Expression: `object.spec.x == 1`}}
			w.FailurePolicy = ptr("Ignore")
		}},
		{name: "match_conditions_false_wins_over_error", path: "/allow", edit: func(w *admission.Webhook) {
			w.MatchConditions = []admission.NamedExpression{{Name: "bad", Expression: `object.spec.x == 1`}, {Name: "no", Expression: "false"}}
		}},
		// Selectors.
		{name: "object_selector_matches", path: "/allow", called: true, edit: func(w *admission.Webhook) {
			w.ObjectSelector = &admission.LabelSelector{MatchLabels: map[string]string{"color": "red"}}
		}, a: func() *admission.Attributes {
			return request("CREATE", "prod", "w", "", map[string]any{"color": "red"})
		}},
		{name: "object_selector_does_not_match", path: "/allow", edit: func(w *admission.Webhook) {
			w.ObjectSelector = &admission.LabelSelector{MatchLabels: map[string]string{"color": "red"}}
		}},
		{name: "namespace_selector_matches", path: "/allow", called: true, edit: func(w *admission.Webhook) {
			w.NamespaceSelector = &admission.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}},
		{name: "namespace_selector_does_not_match", path: "/allow", edit: func(w *admission.Webhook) {
			w.NamespaceSelector = &admission.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}, a: func() *admission.Attributes { return request("CREATE", "dev", "w", "", nil) }},
		{name: "namespace_selector_cluster_scoped_always_matches", path: "/allow", called: true, edit: func(w *admission.Webhook) {
			w.NamespaceSelector = &admission.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}, a: func() *admission.Attributes { return request("CREATE", "", "w", "", nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHookServer(t)
			wh := h.hook("hook.example.dev", tt.path)
			if tt.edit != nil {
				tt.edit(&wh)
			}
			hooks, err := admission.NewValidatingWebhooks([]admission.WebhookConfiguration{{Metadata: admission.ObjectMeta{Name: "cfg"},
				Webhooks: []admission.Webhook{wh}}}, admission.WebhookOptions{Namespaces: testNamespaces})
			if err != nil {
				t.Fatalf("NewValidatingWebhooks: %v", err)
			}
			a := request("CREATE", "prod", "w", "", nil)
			if tt.a != nil {
				a = tt.a()
			}
			err = hooks.Validate(context.Background(), a)
			if got := h.count(tt.path) > 0; got != tt.called {
				t.Errorf("webhook called: %v, want %v", got, tt.called)
			}
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			var st *meta.Status
			if !errors.As(err, &st) || st.Code != tt.wantCode || !strings.Contains(st.Message, tt.wantMsg) {
				t.Fatalf("Validate: %v, want a %d Status containing %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func dryRun() *admission.Attributes {
	a := request("CREATE", "prod", "w", "", nil)
	a.DryRun = true
	return a
}

// TestWebhookRequest checks the AdmissionReview request a webhook receives:
// the timeout it is told, dryRun, and what identifies the write.
func TestWebhookRequest(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	wh := h.hook("hook.example.dev", "/allow")
	wh.TimeoutSeconds = ptr(int32(7))
	hooks, err := admission.NewValidatingWebhooks([]admission.WebhookConfiguration{{Metadata: admission.ObjectMeta{Name: "cfg"},
		Webhooks: []admission.Webhook{wh}}}, admission.WebhookOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := dryRun()
	a.OldObject = nil
	if err := hooks.Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.reviews) != 1 {
		t.Fatalf("%d reviews, want 1", len(h.reviews))
	}
	r, q := h.reviews[0], h.queries[0]
	if q != "7s" {
		t.Errorf("?timeout=%q, want 7s (timeoutSeconds)", q)
	}
	checks := []struct {
		field string
		ok    bool
	}{
		{"uid", r["uid"] != nil && r["uid"] != ""},
		{"operation", r["operation"] == "CREATE"},
		{"dryRun", r["dryRun"] == true},
		{"name", r["name"] == "w"},
		{"namespace", r["namespace"] == "prod"},
		{"kind", equalJSON(r["kind"], map[string]any{"group": "example.annex.dev", "version": "v1", "kind": "Widget"})},
		{"resource", equalJSON(r["resource"], map[string]any{"group": "example.annex.dev", "version": "v1", "resource": "widgets"})},
		{"object", r["object"] != nil},
		{"oldObject", r["oldObject"] == nil},
		{"userInfo", equalJSON(r["userInfo"], map[string]any{"username": "alice"})},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("request.%s wrong in %v", c.field, r)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestWebhookTimeoutSecondsRange(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	for _, tt := range []struct {
		name    string
		seconds int32
		wantErr bool
	}{
		{"zero", 0, true}, {"one", 1, false}, {"thirty", 30, false}, {"thirty_one", 31, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wh := h.hook("hook.example.dev", "/allow")
			wh.TimeoutSeconds = ptr(tt.seconds)
			_, err := admission.NewValidatingWebhooks([]admission.WebhookConfiguration{{Metadata: admission.ObjectMeta{Name: "cfg"},
				Webhooks: []admission.Webhook{wh}}}, admission.WebhookOptions{})
			if got := errors.Is(err, admission.ErrInvalidConfig); got != tt.wantErr {
				t.Errorf("timeoutSeconds %d: %v, want ErrInvalidConfig %v", tt.seconds, err, tt.wantErr)
			}
		})
	}
}

// TestMutatingWebhookReinvocation: a webhook with reinvocationPolicy
// IfNeeded is called again when a later one changed the object; with Never
// it is called once.
func TestMutatingWebhookReinvocation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		policy    string
		wantFirst int
	}{
		{name: "if_needed", policy: "IfNeeded", wantFirst: 2},
		{name: "never", policy: "Never", wantFirst: 1},
		{name: "unset_is_never", policy: "", wantFirst: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHookServer(t)
			first := h.hook("first.example.dev", "/allow")
			if tt.policy != "" {
				first.ReinvocationPolicy = ptr(tt.policy)
			}
			second := h.hook("second.example.dev", "/label")
			hooks, err := admission.NewMutatingWebhooks([]admission.WebhookConfiguration{{Metadata: admission.ObjectMeta{Name: "cfg"},
				Webhooks: []admission.Webhook{first, second}}}, admission.WebhookOptions{})
			if err != nil {
				t.Fatal(err)
			}
			chain, err := admission.New(admission.Config{Mutators: []admission.Mutator{hooks}})
			if err != nil {
				t.Fatal(err)
			}
			a := request("CREATE", "prod", "w", "", map[string]any{})
			if err := chain.Mutate(context.Background(), a); err != nil {
				t.Fatalf("Mutate: %v", err)
			}
			if n := h.count("/allow"); n != tt.wantFirst {
				t.Errorf("first webhook called %d times, want %d", n, tt.wantFirst)
			}
			if n := h.count("/label"); n != 1 {
				t.Errorf("second webhook called %d times, want 1 (it is not IfNeeded)", n)
			}
			labels, _ := a.Object["metadata"].(map[string]any)["labels"].(map[string]any)
			if labels["patched"] != "x" {
				t.Errorf("labels %v, want patched=x from the second webhook", labels)
			}
		})
	}
}
