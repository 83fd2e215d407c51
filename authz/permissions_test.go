package authz_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/annexapi/annex/authz"
	"github.com/annexapi/annex/certs"
	"github.com/annexapi/annex/kubeclient"
)

// ssarStandIn answers SelfSubjectAccessReviews: allowed unless the resource
// is in deny; 503 when down.
func ssarStandIn(t *testing.T, deny map[string]bool, down *atomic.Bool, calls *atomic.Int32) *kubeclient.Client {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != authz.SelfSubjectAccessReviewPath {
			w.WriteHeader(404)
			return
		}
		calls.Add(1)
		if down.Load() {
			w.WriteHeader(503)
			return
		}
		var in struct {
			Kind string
			Spec struct{ ResourceAttributes authz.ResourceAttributes }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Kind != "SelfSubjectAccessReview" {
			w.WriteHeader(400)
			return
		}
		allowed := !deny[in.Spec.ResourceAttributes.Resource]
		w.WriteHeader(201)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": map[string]any{"allowed": allowed}})
	}))
	t.Cleanup(srv.Close)
	c, err := kubeclient.New(kubeclient.Config{Host: srv.URL, CAData: certs.EncodeCert(srv.Certificate()),
		Backoff: kubeclient.Backoff{Initial: time.Millisecond, Factor: 1, Jitter: -1, Steps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPermissionCheck_names_the_missing_permission(t *testing.T) {
	cases := []struct {
		name  string
		deny  map[string]bool
		wants []string // substrings of the error; none means ready
	}{
		{name: "all_granted"},
		{name: "no_auth_delegator", deny: map[string]bool{"tokenreviews": true, "subjectaccessreviews": true},
			wants: []string{"may not create tokenreviews.authentication.k8s.io", "may not create subjectaccessreviews.authorization.k8s.io", "system:auth-delegator"}},
		{name: "no_configmap_reader", deny: map[string]bool{"configmaps": true},
			wants: []string{"may not get configmaps extension-apiserver-authentication in namespace kube-system", "extension-apiserver-authentication-reader"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var down atomic.Bool
			var calls atomic.Int32
			pc, err := authz.NewPermissionCheck(authz.PermissionCheckConfig{Client: ssarStandIn(t, c.deny, &down, &calls)})
			if err != nil {
				t.Fatal(err)
			}
			err = pc.Ready(context.Background())
			if len(c.wants) == 0 {
				if err != nil {
					t.Fatalf("Ready: %v", err)
				}
				return
			}
			if !errors.Is(err, authz.ErrPermissionMissing) {
				t.Fatalf("Ready = %v, want ErrPermissionMissing", err)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func TestPermissionCheck_caches_answers_not_failures(t *testing.T) {
	var down atomic.Bool
	var calls atomic.Int32
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	pc, err := authz.NewPermissionCheck(authz.PermissionCheckConfig{Client: ssarStandIn(t, nil, &down, &calls), Interval: time.Minute, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := pc.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pc.Ready(ctx); err != nil || calls.Load() != 3 {
		t.Fatalf("second Ready within the interval: err %v, %d reviews (want 3: cached)", err, calls.Load())
	}
	now = now.Add(2 * time.Minute)
	down.Store(true)
	if err := pc.Ready(ctx); err == nil || errors.Is(err, authz.ErrPermissionMissing) {
		t.Fatalf("Ready with the cluster down = %v, want an error of asking", err)
	}
	down.Store(false)
	if err := pc.Ready(ctx); err != nil {
		t.Fatalf("Ready after recovery: %v (a failure must not be cached)", err)
	}
}
