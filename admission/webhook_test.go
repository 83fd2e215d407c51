package admission

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/annexapi/annex/meta"
)

// webhookServer is a real HTTPS AdmissionReview server; each path behaves
// differently.
func webhookServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	mux := http.NewServeMux()
	respond := func(w http.ResponseWriter, r *http.Request, resp map[string]any) {
		var review struct {
			Request map[string]any `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		resp["uid"] = review.Request["uid"]
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}
	mux.HandleFunc("/allow", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Query().Get("timeout"), "s") {
			http.Error(w, "no timeout", 400)
			return
		}
		respond(w, r, map[string]any{"allowed": true, "warnings": []string{"careful"}, "auditAnnotations": map[string]string{"k": "v"}})
	})
	mux.HandleFunc("/deny", func(w http.ResponseWriter, r *http.Request) {
		respond(w, r, map[string]any{"allowed": false, "status": map[string]any{"message": "owner must be a team", "code": 403, "reason": "Forbidden"}})
	})
	mux.HandleFunc("/patch", func(w http.ResponseWriter, r *http.Request) {
		respond(w, r, map[string]any{"allowed": true, "patchType": "JSONPatch",
			"patch": []byte(`[{"op":"add","path":"/metadata/labels","value":{"patched":"yes"}}]`)})
	})
	stop := make(chan struct{})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select { // answers only once the caller gave up, or the test ends
		case <-r.Context().Done():
		case <-stop:
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/allow", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/wronguid", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": map[string]any{"uid": "x", "allowed": true}})
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs before srv.Close
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, string(ca)
}

func webhookYAML(kind, url, ca, failurePolicy string) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": "cfg"},
		"webhooks": []any{map[string]any{
			"name": "hook.example.dev", "clientConfig": map[string]any{"url": url, "caBundle": []byte(ca)},
			"rules":         []any{map[string]any{"operations": []string{"CREATE"}, "apiGroups": []string{"*"}, "apiVersions": []string{"*"}, "resources": []string{"environments"}}},
			"failurePolicy": failurePolicy, "sideEffects": "None", "timeoutSeconds": 1, "admissionReviewVersions": []string{"v1"},
		}},
	})
	return b
}

func TestWebhooksE2E(t *testing.T) {
	t.Parallel()
	srv, ca := webhookServer(t)
	cases := []struct {
		name     string
		path     string
		mutating bool
		policy   string
		wantCode int32
		wantMsg  string
		check    func(t *testing.T, a *Attributes, rec *recorder)
	}{
		{name: "allowed", path: "/allow", policy: "Fail", check: func(t *testing.T, a *Attributes, rec *recorder) {
			if len(rec.warnings) != 1 || rec.warnings[0] != "careful" || rec.annotations["hook.example.dev/k"] != "v" {
				t.Fatalf("warnings %v annotations %v", rec.warnings, rec.annotations)
			}
		}},
		{name: "denied_with_message", path: "/deny", policy: "Ignore", wantCode: 403,
			wantMsg: `admission webhook "hook.example.dev" denied the request: owner must be a team`},
		{name: "json_patch_applied", path: "/patch", mutating: true, policy: "Fail", check: func(t *testing.T, a *Attributes, rec *recorder) {
			if labelsOf(a.Object)["patched"] != "yes" {
				t.Fatalf("object = %v", a.Object)
			}
			if !strings.Contains(rec.annotations["patch.webhook.admission.k8s.io/round_0_index_0"], `"patchType":"JSONPatch"`) {
				t.Fatalf("annotations = %v", rec.annotations)
			}
		}},
		{name: "timeout_fail", path: "/slow", policy: "Fail", wantCode: 500, wantMsg: `Internal error occurred: failed calling webhook "hook.example.dev"`},
		{name: "timeout_ignore", path: "/slow", mutating: true, policy: "Ignore", check: func(t *testing.T, a *Attributes, rec *recorder) {
			if rec.annotations["failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"] != "hook.example.dev" {
				t.Fatalf("annotations = %v", rec.annotations)
			}
		}},
		{name: "redirect_refused", path: "/redirect", policy: "Fail", wantCode: 500, wantMsg: "redirect, which is not followed"},
		{name: "uid_mismatch", path: "/wronguid", policy: "Fail", wantCode: 500, wantMsg: "expected response.uid="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kind := "ValidatingWebhookConfiguration"
			if tc.mutating {
				kind = "MutatingWebhookConfiguration"
			}
			cfgs, err := LoadWebhookConfigurations(webhookYAML(kind, srv.URL+tc.path, ca, tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			var c *Chain
			if tc.mutating {
				wh, err := NewMutatingWebhooks(cfgs, WebhookOptions{})
				if err != nil {
					t.Fatal(err)
				}
				c, err = New(Config{Mutators: []Mutator{wh}})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				wh, err := NewValidatingWebhooks(cfgs, WebhookOptions{})
				if err != nil {
					t.Fatal(err)
				}
				c, err = New(Config{Validators: []Validator{wh}})
				if err != nil {
					t.Fatal(err)
				}
			}
			ctx, rec := newRecorderCtx()
			a := envAttrs(Create, `{"metadata":{"name":"e"},"spec":{"owner":"al"}}`)
			err = c.Mutate(ctx, a)
			if err == nil {
				err = c.Validate(ctx, a)
			}
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				tc.check(t, a, rec)
				return
			}
			var st *meta.Status
			if !errors.As(err, &st) || st.Code != tc.wantCode || !strings.Contains(st.Message, tc.wantMsg) {
				t.Fatalf("err = %#v, want %d containing %q", err, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestWebhookDryRunAndRules(t *testing.T) {
	t.Parallel()
	srv, ca := webhookServer(t)
	doc := strings.Replace(string(webhookYAML("ValidatingWebhookConfiguration", srv.URL+"/deny", ca, "Fail")), `"sideEffects":"None"`, `"sideEffects":"Some"`, 1)
	cfgs, err := LoadWebhookConfigurations([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	wh, err := NewValidatingWebhooks(cfgs, WebhookOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := envAttrs(Create, `{"metadata":{"name":"e"}}`)
	a.DryRun = true
	err = wh.Validate(context.Background(), a)
	var st *meta.Status
	if !errors.As(err, &st) || st.Code != 400 || st.Message != `admission webhook "hook.example.dev" does not support dry run` {
		t.Fatalf("dry run: %v", err)
	}
	// Rules: an UPDATE or another resource is not sent.
	for _, b := range []*Attributes{envAttrs(Update, `{}`), {Operation: Create, Resource: "other", Object: map[string]any{}}} {
		if err := wh.Validate(context.Background(), b); err != nil {
			t.Fatalf("unmatched request called the webhook: %v", err)
		}
	}
	// Configuration errors.
	for name, d := range map[string]string{
		"http_url": strings.Replace(doc, "https://", "http://", 1),
		"timeout":  strings.Replace(doc, `"timeoutSeconds":1`, `"timeoutSeconds":31`, 1),
	} {
		cfgs, err := LoadWebhookConfigurations([]byte(d))
		if err == nil {
			_, err = NewValidatingWebhooks(cfgs, WebhookOptions{})
		}
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
