package conversion_test

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/conversion"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/rest"
	"github.com/annexapi/annex/storage/bbolt"
)

// converter is a conversion webhook as its authors write one: it renames
// spec.owner (v1alpha1) and spec.team (v1beta1). mode changes its answer.
type converter struct {
	mode     atomic.Value // "", "fail", "slow", "rename", "uid"
	requests atomic.Int64
	objects  atomic.Int64
}

func (c *converter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.requests.Add(1)
	var rv struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Request    struct {
			UID               string           `json:"uid"`
			DesiredAPIVersion string           `json:"desiredAPIVersion"`
			Objects           []map[string]any `json:"objects"`
		} `json:"request"`
	}
	if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Kind != "ConversionReview" || rv.APIVersion != "apiextensions.k8s.io/v1" {
		http.Error(w, "bad review", 400)
		return
	}
	c.objects.Add(int64(len(rv.Request.Objects)))
	mode, _ := c.mode.Load().(string)
	result := map[string]any{"status": "Success"}
	out := []map[string]any{}
	for _, o := range rv.Request.Objects {
		spec, _ := o["spec"].(map[string]any)
		if strings.HasSuffix(rv.Request.DesiredAPIVersion, "/v1beta1") {
			if v, ok := spec["owner"]; ok {
				spec["team"] = v
				delete(spec, "owner")
			}
		} else if v, ok := spec["team"]; ok {
			spec["owner"] = v
			delete(spec, "team")
		}
		o["apiVersion"] = rv.Request.DesiredAPIVersion
		md := o["metadata"].(map[string]any)
		if mode == "rename" {
			md["name"] = "other"
		}
		md["labels"] = map[string]any{"converted": "yes"}
		md["generation"] = 99 // not the webhook's to change: restored
		out = append(out, o)
	}
	uid := rv.Request.UID
	switch mode {
	case "fail":
		result = map[string]any{"status": "Failed", "message": "owner ana is not allowed at v1beta1"}
	case "slow":
		time.Sleep(2 * time.Second)
	case "uid":
		uid = "not-the-request"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
		"response": map[string]any{"uid": uid, "convertedObjects": out, "result": result}})
}

func serve(t *testing.T) (*converter, string, *http.Client) {
	t.Helper()
	c := &converter{}
	hook := httptest.NewTLSServer(c)
	t.Cleanup(hook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	wh, err := conversion.NewWebhook(conversion.WebhookConfig{Name: "environments.platform.example.com", URL: hook.URL + "/convert", CABundle: ca, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), bbolt.Options{UnsafeNoSync: true, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	base := rest.Resource{Group: "platform.example.com", Plural: "environments", Kind: "Environment", Namespaced: true, Storage: st}
	alpha, beta := base, base
	alpha.Version, beta.Version = "v1alpha1", "v1beta1"
	beta.StorageVersion, beta.Conversion = true, wh
	h, err := rest.NewHandler(rest.Config{Resources: []rest.Resource{beta, alpha}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(filters.WithRequestInfoResolver(filters.RequestInfoResolver{})(h))
	t.Cleanup(srv.Close)
	return c, srv.URL, srv.Client()
}

func do(t *testing.T, c *http.Client, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

const alphaURL, betaURL = "/apis/platform.example.com/v1alpha1/namespaces/ns/environments", "/apis/platform.example.com/v1beta1/namespaces/ns/environments"

func TestWebhookConverts(t *testing.T) {
	hook, base, client := serve(t)
	code, obj := do(t, client, "POST", base+alphaURL, `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"a"},"spec":{"owner":"ana"}}`)
	if code != 201 {
		t.Fatalf("create at v1alpha1: %d %v", code, obj)
	}
	// Stored at v1beta1 by the webhook, answered at v1alpha1 by it again.
	if obj["apiVersion"] != "platform.example.com/v1alpha1" || obj["spec"].(map[string]any)["owner"] != "ana" {
		t.Fatalf("answer %v", obj)
	}
	md := obj["metadata"].(map[string]any)
	if md["labels"].(map[string]any)["converted"] != "yes" || md["generation"] != float64(1) {
		t.Errorf("metadata after conversion: labels kept, the rest restored; got %v", md)
	}
	_, got := do(t, client, "GET", base+betaURL+"/a", "")
	if got["spec"].(map[string]any)["team"] != "ana" {
		t.Fatalf("at v1beta1: %v", got)
	}
	// A LIST of several objects at the other version is one review.
	for _, n := range []string{"b", "c"} {
		do(t, client, "POST", base+betaURL, `{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"`+n+`"},"spec":{"team":"t"}}`)
	}
	before := hook.requests.Load()
	code, list := do(t, client, "GET", base+alphaURL, "")
	if code != 200 || len(list["items"].([]any)) != 3 {
		t.Fatalf("list: %d %v", code, list)
	}
	if n := hook.requests.Load() - before; n != 1 {
		t.Errorf("a LIST of 3 made %d webhook calls, want 1", n)
	}
}

func TestWebhookFailures(t *testing.T) {
	hook, base, client := serve(t)
	do(t, client, "POST", base+betaURL, `{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"a"},"spec":{"team":"ana"}}`)
	for _, tc := range []struct{ mode, want string }{
		{"fail", "Internal error occurred: conversion webhook for platform.example.com/v1beta1, Kind=Environment failed: owner ana is not allowed at v1beta1"},
		{"slow", "conversion webhook for platform.example.com/v1beta1, Kind=Environment failed: Post \""},
		{"uid", `failed: expected response.uid=`},
		{"rename", "conversion webhook for platform.example.com/v1beta1, Kind=Environment returned invalid converted object at index 0: must have the same name: a != other"},
	} {
		hook.mode.Store(tc.mode)
		start := time.Now()
		code, st := do(t, client, "GET", base+alphaURL+"/a", "")
		msg, _ := st["message"].(string)
		if code != 500 || st["kind"] != "Status" || st["reason"] != string(meta.StatusReasonInternalError) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %v; want 500 with %q", tc.mode, code, st, tc.want)
		}
		if tc.mode == "slow" && (time.Since(start) > 1500*time.Millisecond || !strings.Contains(msg, "deadline exceeded")) {
			t.Errorf("slow webhook: answered after %v: %s", time.Since(start), msg)
		}
	}
	// A failed conversion on a write stores nothing.
	hook.mode.Store("fail")
	if code, _ := do(t, client, "POST", base+alphaURL, `{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"x"},"spec":{"owner":"o"}}`); code != 500 {
		t.Errorf("create through a failing webhook: %d", code)
	}
	hook.mode.Store("")
	if code, _ := do(t, client, "GET", base+betaURL+"/x", ""); code != 404 {
		t.Errorf("the failed create stored an object: %d", code)
	}
}

func TestNewWebhookRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  conversion.WebhookConfig
		want string
	}{
		{conversion.WebhookConfig{}, "exactly one of url or service is required"},
		{conversion.WebhookConfig{URL: "http://x/convert"}, "must be an https URL"},
		{conversion.WebhookConfig{URL: "https://x", ConversionReviewVersions: []string{"v1beta1"}}, "this server speaks only v1"},
		{conversion.WebhookConfig{URL: "https://x", CABundle: []byte("junk")}, "caBundle: no PEM certificates"},
	} {
		if _, err := conversion.NewWebhook(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.cfg, err, tc.want)
		}
	}
}
