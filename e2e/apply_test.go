package e2e

// Server-side apply against kube-apiserver (issue 17): the same requests
// (creates, updates, merge patches and applies by several managers, to the
// main resource and to status) sent to a CRD with the environments schema
// on a real kube-apiserver and to annex serving the same group, version and
// schema give the same answers: the same managedFields (managers,
// operations, versions, subresources, fieldsV1; times aside) and the same
// conflicts, code, message and causes.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/annexapi/annex/e2e/internal/binaries"
)

// applyStep is one request of the comparison, relative to the collection
// URL (in namespace default).
type applyStep struct {
	method, path, contentType, body string
}

const (
	ctApply = "application/apply-patch+yaml"
	ctMerge = "application/merge-patch+json"
	ctJSON  = "application/json"
)

// envManifest is an Environment with the given metadata extras and spec as
// JSON.
func envManifest(name string, metadata map[string]any, spec map[string]any, status map[string]any) string {
	md := map[string]any{"name": name}
	for k, v := range metadata {
		md[k] = v
	}
	obj := map[string]any{"apiVersion": "platform.example.com/v1alpha1", "kind": "Environment", "metadata": md}
	if spec != nil {
		obj["spec"] = spec
	}
	if status != nil {
		obj["status"] = status
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

func applySteps() []applyStep {
	spec := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	return []applyStep{
		// A create by a named manager records an Update entry.
		{http.MethodPost, "?fieldManager=creator", ctJSON, envManifest("a", map[string]any{"labels": map[string]any{"team": "payments"}}, spec("owner", "payments", "tier", "dev", "replicas", 1), nil)},
		// A second manager's apply of a field the creator set conflicts.
		{http.MethodPatch, "/a?fieldManager=alice", ctApply, envManifest("a", nil, spec("owner", "payments", "replicas", 2), nil)},
		{http.MethodPatch, "/a?fieldManager=alice&force=true", ctApply, envManifest("a", nil, spec("owner", "payments", "replicas", 2), nil)},
		// Two conflicting fields with two managers.
		{http.MethodPatch, "/a?fieldManager=bob", ctApply, envManifest("a", map[string]any{"labels": map[string]any{"team": "search"}}, spec("owner", "search", "replicas", 3), nil)},
		// A merge patch with no fieldManager: the manager comes from the User-Agent.
		{http.MethodPatch, "/a", ctMerge, `{"metadata":{"labels":{"stage":"beta"},"finalizers":["e2e.annex.dev/one"]},"spec":{"tier":"staging"}}`},
		// The same apply again changes nothing.
		{http.MethodPatch, "/a?fieldManager=alice", ctApply, envManifest("a", nil, spec("owner", "payments", "replicas", 2), nil)},
		// alice drops replicas, which she alone owns: it is removed.
		{http.MethodPatch, "/a?fieldManager=alice", ctApply, envManifest("a", map[string]any{"annotations": map[string]any{"note": "x"}}, spec("owner", "payments"), nil)},
		// Status: an update and an apply to the subresource.
		{http.MethodPatch, "/a/status?fieldManager=ctrl", ctMerge, `{"status":{"phase":"Pending"}}`},
		{http.MethodPatch, "/a/status?fieldManager=ctrl-apply", ctApply, envManifest("a", nil, nil, map[string]any{"phase": "Ready"})},
		// A status field applied to the main resource is ignored.
		{http.MethodPatch, "/a?fieldManager=sneaky", ctApply, envManifest("a", nil, nil, map[string]any{"phase": "Failed"})},
		// List fields of metadata: finalizers (a set) and ownerReferences
		// (a map keyed by uid, entries atomic).
		{http.MethodPatch, "/a?fieldManager=fin", ctApply, envManifest("a", map[string]any{"finalizers": []any{"e2e.annex.dev/two"},
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "6b1f0c5e-0000-4000-8000-00000000000a"}}}, nil, nil)},
		{http.MethodPatch, "/a?fieldManager=fin2", ctApply, envManifest("a", map[string]any{"finalizers": []any{"e2e.annex.dev/one", "e2e.annex.dev/three"}}, nil, nil)},
		// An apply that creates, and one with a uid for a missing object.
		{http.MethodPatch, "/b?fieldManager=carol", ctApply, envManifest("b", nil, spec("owner", "carol"), nil)},
		{http.MethodPatch, "/c?fieldManager=carol", ctApply, envManifest("c", map[string]any{"uid": "6b1f0c5e-0000-4000-8000-00000000000b"}, spec("owner", "carol"), nil)},
		// Refusals.
		{http.MethodPatch, "/b?fieldManager=carol", ctApply, `{"apiVersion":"platform.example.com/v1alpha1","kind":"Other","metadata":{"name":"b"}}`},
		{http.MethodPatch, "/b", ctApply, envManifest("b", nil, spec("owner", "carol"), nil)},
		{http.MethodPatch, "/b?fieldManager=carol", ctApply, envManifest("b", map[string]any{"managedFields": []any{map[string]any{"manager": "x"}}}, nil, nil)},
		{http.MethodPatch, "/b?fieldManager=carol&force=true", ctMerge, `{}`},
		// A client-side apply (the annotation, kubectl-client-side-apply's
		// Update) taken over by kubectl's server-side apply without a
		// conflict; the annotation follows.
		{http.MethodPost, "?fieldManager=kubectl-client-side-apply", ctJSON, envManifest("csa", map[string]any{"annotations": map[string]any{
			"kubectl.kubernetes.io/last-applied-configuration": envManifest("csa", map[string]any{"namespace": "default"}, spec("owner", "x", "replicas", 1), nil) + "\n"}},
			spec("owner", "x", "replicas", 1), nil)},
		{http.MethodPatch, "/csa?fieldManager=kubectl", ctApply, envManifest("csa", map[string]any{"namespace": "default"}, spec("owner", "x", "replicas", 4), nil)},
		// The same by another manager conflicts (only kubectl upgrades).
		{http.MethodPost, "?fieldManager=kubectl-client-side-apply", ctJSON, envManifest("csa2", map[string]any{"annotations": map[string]any{
			"kubectl.kubernetes.io/last-applied-configuration": envManifest("csa2", nil, spec("owner", "x", "replicas", 1), nil) + "\n"}},
			spec("owner", "x", "replicas", 1), nil)},
		{http.MethodPatch, "/csa2?fieldManager=helm", ctApply, envManifest("csa2", nil, spec("owner", "x", "replicas", 4), nil)},
		// A PUT by a manager that sends managedFields back unchanged, then one
		// that resets them.
		{http.MethodGet, "/b", "", ""},
		{http.MethodPut, "/b?fieldManager=editor", ctJSON, "EDIT spec.replicas=9"},
		{http.MethodPut, "/b?fieldManager=resetter", ctJSON, "EDIT metadata.managedFields=[]"},
		{http.MethodPut, "/b?fieldManager=resetter", ctJSON, "EDIT metadata.managedFields=[{}]"},
		{http.MethodPatch, "/b?fieldManager=after-reset", ctMerge, `{"spec":{"replicas":10}}`},
		{http.MethodPatch, "/b?fieldManager=applier", ctApply, envManifest("b", nil, map[string]any{"owner": "dave"}, nil)},
		// Many update managers: beyond ten, the oldest merge.
		{http.MethodPatch, "/a?fieldManager=m01", ctMerge, `{"metadata":{"labels":{"m01":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m02", ctMerge, `{"metadata":{"labels":{"m02":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m03", ctMerge, `{"metadata":{"labels":{"m03":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m04", ctMerge, `{"metadata":{"labels":{"m04":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m05", ctMerge, `{"metadata":{"labels":{"m05":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m06", ctMerge, `{"metadata":{"labels":{"m06":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m07", ctMerge, `{"metadata":{"labels":{"m07":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m08", ctMerge, `{"metadata":{"labels":{"m08":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m09", ctMerge, `{"metadata":{"labels":{"m09":"x"}}}`},
		{http.MethodPatch, "/a?fieldManager=m10", ctMerge, `{"metadata":{"labels":{"m10":"x"}}}`},
	}
}

// volatile are the members that differ between any two servers.
var volatile = regexp.MustCompile(`"(uid|resourceVersion|creationTimestamp|time)":"[^"]*"`)

// applyView is the JSON of an answer with volatile members blanked, and
// generation left out (kube counts a CRD's generation on metadata too).
func applyView(raw string) string {
	var o map[string]any
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		return raw
	}
	if md, ok := o["metadata"].(map[string]any); ok {
		delete(md, "generation")
	}
	if o["kind"] == "Status" {
		dedupeCauses(o)
		// kube-apiserver lists conflict causes in map order: compare them
		// sorted.
		if d, ok := o["details"].(map[string]any); ok {
			if causes, ok := d["causes"].([]any); ok {
				slices.SortFunc(causes, func(a, b any) int {
					ab, _ := json.Marshal(a)
					bb, _ := json.Marshal(b)
					return strings.Compare(string(ab), string(bb))
				})
			}
		}
	}
	b, _ := json.Marshal(o)
	return volatile.ReplaceAllString(string(b), `"$1":"-"`)
}

// runApplySteps sends steps to the collection at base and returns each
// answer as "<code> <view>". An "EDIT path=value" body is the previous
// answer with one member set.
func runApplySteps(t *testing.T, c *http.Client, base string) []string {
	t.Helper()
	var out []string
	var prev map[string]any
	for _, s := range applySteps() {
		body := s.body
		if strings.HasPrefix(body, "EDIT ") {
			path, value, _ := strings.Cut(strings.TrimPrefix(body, "EDIT "), "=")
			var v any
			if err := json.Unmarshal([]byte(value), &v); err != nil {
				t.Fatal(err)
			}
			keys := strings.Split(path, ".")
			m := prev
			for _, k := range keys[:len(keys)-1] {
				m = m[k].(map[string]any)
			}
			m[keys[len(keys)-1]] = v
			b, _ := json.Marshal(prev)
			body = string(b)
		}
		h := http.Header{"User-Agent": {"e2e-client/v1.0 (linux/amd64)"}}
		code, raw := send(t, c, s.method, base+s.path, body, s.contentType, h)
		prev = nil
		_ = json.Unmarshal([]byte(raw), &prev)
		out = append(out, fmt.Sprintf("%d %s", code, applyView(raw)))
	}
	return out
}

func TestServerSideApplyMatchesKube(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver; not in -short")
	}
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	kasEnvs, annexEnvs := startMessageServers(t, p, kasURL, kasLogs)
	admin := p.client(t)
	kube := runApplySteps(t, admin, kasEnvs)
	ours := runApplySteps(t, admin, annexEnvs)
	for i, s := range applySteps() {
		if kube[i] != ours[i] {
			t.Errorf("step %d (%s %s %s):\nkube-apiserver: %s\nannex:          %s", i, s.method, s.path, s.contentType, kube[i], ours[i])
		}
	}
}
