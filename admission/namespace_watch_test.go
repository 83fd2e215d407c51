package admission_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/annexapi/annex/admission"
	"github.com/annexapi/annex/kubeclient"
	"github.com/annexapi/annex/meta"
)

// TestWatchedNamespacesTerminating: with the cluster's namespaces followed
// by a watch, a create in a namespace refuses new content as soon as the
// watch says it is terminating (no cache in between), and a namespace the
// watch has not seen is looked up.
func TestWatchedNamespacesTerminating(t *testing.T) {
	t.Parallel()
	terminate := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/namespaces" && r.URL.Query().Get("watch") != "true":
			fmt.Fprint(w, `{"kind":"NamespaceList","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"gc"},"status":{"phase":"Active"}}]}`)
		case r.URL.Path == "/api/v1/namespaces":
			w.(http.Flusher).Flush()
			select {
			case <-terminate:
				fmt.Fprintln(w, `{"type":"MODIFIED","object":{"metadata":{"name":"gc","resourceVersion":"6"},"status":{"phase":"Terminating"}}}`)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			case <-r.Context().Done():
			}
		case r.URL.Path == "/api/v1/namespaces/fresh":
			fmt.Fprint(w, `{"metadata":{"name":"fresh"},"status":{"phase":"Active"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	defer srv.Close()
	client, err := kubeclient.New(kubeclient.Config{Host: srv.URL, BearerToken: "t",
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})})
	if err != nil {
		t.Fatal(err)
	}
	ns := &admission.WatchedNamespaces{Client: client}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = ns.Run(ctx) }()
	nl, err := admission.NewNamespaceLifecycle(admission.NamespaceLifecycleConfig{Namespaces: ns, TTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	create := func(namespace string) error {
		return nl.Validate(ctx, &admission.Attributes{Operation: admission.Create, Namespace: namespace, Name: "x",
			Group: "platform.example.com", Version: "v1", Resource: "environments"})
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	eventually("the first list", func() bool { o, _ := ns.GetNamespace(ctx, "gc"); return o != nil })
	if err := create("gc"); err != nil {
		t.Fatalf("create in an active namespace: %v", err)
	}
	if err := create("fresh"); err != nil {
		t.Errorf("create in a namespace the watch has not seen yet: %v", err)
	}
	var st *meta.Status
	if err := create("gone"); !errors.As(err, &st) || st.Code != http.StatusNotFound {
		t.Errorf("create in a missing namespace: %v, want 404", err)
	}
	close(terminate)
	eventually("the refusal", func() bool { return create("gc") != nil })
	err = create("gc")
	if !errors.As(err, &st) || st.Code != http.StatusForbidden ||
		st.Message != `environments.platform.example.com "x" is forbidden: unable to create new content in namespace gc because it is being terminated` {
		t.Errorf("create in a terminating namespace: %v", err)
	}
}
