package audit_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annexapi/annex/audit"
	"github.com/annexapi/annex/filters"
)

func mustPolicy(t testing.TB, y string) *audit.Policy {
	t.Helper()
	p, err := audit.ParsePolicy([]byte(y))
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	return p
}

func TestParsePolicy_rejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown_field", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verb: [get]\n", `unknown field "verb"`},
		{"unknown_top_field", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrulez: []\nrules:\n- level: None\n", `unknown field "rulez"`},
		{"old_version", "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n", `apiVersion "audit.k8s.io/v1beta1" is not supported`},
		{"wrong_kind", "apiVersion: audit.k8s.io/v1\nkind: Poliy\nrules:\n- level: None\n", `kind "Poliy"`},
		{"no_rules", "apiVersion: audit.k8s.io/v1\nkind: Policy\n", "0 rules"},
		{"empty", "", "empty policy"},
		{"missing_level", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- verbs: [get]\n", "rules[0].level: Required value"},
		{"bad_level", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n", `Unsupported value: "Everything"`},
		{"bad_stage", "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules:\n- level: None\n", `omitStages[0]: Invalid value: "Done"`},
		{"bad_rule_stage", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Started]\n", `rules[0].omitStages[0]`},
		{"url_without_slash", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [healthz]\n", "must begin with a '/'"},
		{"url_inner_star", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: ['/a*/b']\n", "must be the final character"},
		{"group_not_dns", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: 'apps/v1'}]\n", `resources.group: Invalid value: "apps/v1"`},
		{"group_wildcard", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: '*'}]\n", `resources.group: Invalid value: "*"`},
		{"names_without_resources", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{resourceNames: [a]}]\n", "requires at least one resource"},
		{"both_kinds", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  namespaces: [a]\n  nonResourceURLs: ['/x']\n", "both regular resources and non-resource URLs"},
		{"two_documents", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n---\nkind: Policy\n", "more than one YAML document"},
		{"wrong_type", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  users: alice\n", "cannot unmarshal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := audit.ParsePolicy([]byte(c.yaml))
			if err == nil || !errors.Is(err, audit.ErrInvalidPolicy) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalidPolicy containing %q", err, c.want)
			}
		})
	}
}

func TestLoadPolicyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	y := `apiVersion: audit.k8s.io/v1
kind: Policy
metadata:
  name: example
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: RequestResponse
  users: [alice]
  omitManagedFields: false
- level: Metadata
`
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := audit.LoadPolicyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 2 || p.Rules[0].OmitManagedFields == nil || *p.Rules[0].OmitManagedFields || !p.OmitManagedFields {
		t.Fatalf("policy = %+v", p)
	}
	if _, err := audit.LoadPolicyFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, audit.ErrInvalidPolicy) {
		t.Fatalf("missing file: err = %v", err)
	}
}

const matchPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
# 0: a user, any request
- level: None
  users: [system:kube-proxy]
# 1: a group and verbs
- level: RequestResponse
  userGroups: [auditors]
  verbs: [get]
  omitManagedFields: false
# 2: exact resource and names
- level: Request
  resources:
  - group: ""
    resources: [secrets]
    resourceNames: [top]
# 3: subresource forms
- level: Metadata
  omitStages: [ResponseStarted]
  resources:
  - group: example.annex.dev
    resources: ["environments/status", "*/scale", "widgets/*"]
# 4: namespaces only
- level: Request
  namespaces: [kube-system, ""]
# 5: all resources of a group
- level: RequestResponse
  resources:
  - group: apps
# 6: non-resource URLs
- level: Metadata
  nonResourceURLs: [/metrics, "/healthz*"]
# 7: verbs only (matches resource and non-resource requests)
- level: Request
  verbs: [deletecollection, post]
`

func TestEvaluator_matching(t *testing.T) {
	t.Parallel()
	ev, err := audit.NewEvaluator(mustPolicy(t, matchPolicy))
	if err != nil {
		t.Fatal(err)
	}
	alice := &filters.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}}
	auditor := &filters.User{Name: "bob", Groups: []string{"auditors"}}
	proxy := &filters.User{Name: "system:kube-proxy"}
	res := func(verb, group, resource, sub, ns, name string) *filters.RequestInfo {
		return &filters.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	nonRes := func(verb, path string) *filters.RequestInfo {
		return &filters.RequestInfo{Verb: verb, Path: path}
	}
	cases := []struct {
		name      string
		user      *filters.User
		info      *filters.RequestInfo
		level     audit.Level
		omitRR    bool // RequestReceived omitted
		omitRS    bool // ResponseStarted omitted
		omitMF    bool
		omitPanic bool
	}{
		{"user_rule_first", proxy, res("get", "apps", "deployments", "", "ns", "x"), audit.LevelNone, true, false, true, false},
		{"group_and_verb", auditor, res("get", "", "pods", "", "ns", "p"), audit.LevelRequestResponse, true, false, false, false},
		{"group_other_verb_falls_through", auditor, res("list", "", "pods", "", "ns", ""), audit.LevelNone, true, false, true, false},
		{"no_user_no_group_rule", nil, res("get", "", "pods", "", "ns", "p"), audit.LevelNone, true, false, true, false},
		{"resource_name_matches", alice, res("get", "", "secrets", "", "ns", "top"), audit.LevelRequest, true, false, true, false},
		{"resource_name_differs", alice, res("get", "", "secrets", "", "ns", "other"), audit.LevelNone, true, false, true, false},
		{"resource_names_need_name", alice, res("list", "", "secrets", "", "ns", ""), audit.LevelNone, true, false, true, false},
		{"subresource_exact", alice, res("update", "example.annex.dev", "environments", "status", "ns", "e"), audit.LevelMetadata, true, true, true, false},
		{"subresource_form_needs_sub", alice, res("update", "example.annex.dev", "environments", "", "ns", "e"), audit.LevelNone, true, false, true, false},
		{"any_resource_scale", alice, res("update", "example.annex.dev", "environments", "scale", "ns", "e"), audit.LevelMetadata, true, true, true, false},
		{"star_sub_needs_sub", alice, res("get", "example.annex.dev", "scale", "", "ns", "e"), audit.LevelNone, true, false, true, false},
		{"res_star_matches_sub", alice, res("get", "example.annex.dev", "widgets", "status", "ns", "w"), audit.LevelMetadata, true, true, true, false},
		{"res_star_matches_res_itself", alice, res("get", "example.annex.dev", "widgets", "", "ns", "w"), audit.LevelMetadata, true, true, true, false},
		{"group_differs", alice, res("get", "other.dev", "widgets", "", "ns", "w"), audit.LevelNone, true, false, true, false},
		{"namespace_listed", alice, res("get", "", "configmaps", "", "kube-system", "c"), audit.LevelRequest, true, false, true, false},
		{"cluster_scope_is_empty_namespace", alice, res("get", "", "nodes", "", "", "n"), audit.LevelRequest, true, false, true, false},
		{"whole_group", alice, res("delete", "apps", "deployments", "", "ns", "d"), audit.LevelRequestResponse, true, false, true, false},
		{"resource_rule_skips_non_resource", alice, nonRes("get", "/apis/apps"), audit.LevelNone, true, false, true, false},
		{"url_exact", alice, nonRes("get", "/metrics"), audit.LevelMetadata, true, false, true, false},
		{"url_prefix", alice, nonRes("get", "/healthz/ping"), audit.LevelMetadata, true, false, true, false},
		{"url_prefix_no_slash", alice, nonRes("get", "/healthzz"), audit.LevelMetadata, true, false, true, false},
		{"url_other", alice, nonRes("get", "/readyz"), audit.LevelNone, true, false, true, false},
		{"url_rule_skips_resource", alice, res("get", "", "metrics", "", "ns", ""), audit.LevelNone, true, false, true, false},
		{"verbs_only_resource", alice, res("deletecollection", "", "pods", "", "ns", ""), audit.LevelRequest, true, false, true, false},
		{"verbs_only_non_resource", alice, nonRes("post", "/anything"), audit.LevelRequest, true, false, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := ev.Evaluate(c.user, c.info)
			if got.Level != c.level {
				t.Fatalf("level = %s, want %s", got.Level, c.level)
			}
			if got.Omits(audit.StageRequestReceived) != c.omitRR || got.Omits(audit.StageResponseStarted) != c.omitRS ||
				got.Omits(audit.StagePanic) != c.omitPanic || got.Omits(audit.StageResponseComplete) {
				t.Errorf("omits RR=%v RS=%v Panic=%v RC=%v", got.Omits(audit.StageRequestReceived), got.Omits(audit.StageResponseStarted), got.Omits(audit.StagePanic), got.Omits(audit.StageResponseComplete))
			}
			if got.OmitManagedFields != c.omitMF {
				t.Errorf("omitManagedFields = %v, want %v", got.OmitManagedFields, c.omitMF)
			}
		})
	}
}

func TestEvaluator_nil_audits_nothing(t *testing.T) {
	t.Parallel()
	var ev *audit.Evaluator
	if got := ev.Evaluate(nil, &filters.RequestInfo{Verb: "get"}); got.Level != audit.LevelNone {
		t.Fatalf("level = %s", got.Level)
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(matchPolicy))
	f.Add([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None}]"))
	f.Add([]byte(`{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata","resources":[{"resources":["a/*"]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := audit.ParsePolicy(data)
		if err != nil {
			return
		}
		ev, err := audit.NewEvaluator(p)
		if err != nil {
			t.Fatalf("a parsed policy does not compile: %v", err)
		}
		info := &filters.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "a", Subresource: "b", Name: "n"}
		if got := ev.Evaluate(&filters.User{Name: "u"}, info); got.Level.AtLeast(audit.LevelNone) == false {
			t.Fatalf("level %q out of range", got.Level)
		}
	})
}

// TestParsePolicyRefusesAliasBombs: aliases that expand a small file into
// millions of nodes are refused before the document is turned into JSON.
func TestParsePolicyRefusesAliasBombs(t *testing.T) {
	doc := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g"} {
		doc += n + ": &" + n + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = n
	}
	_, err := audit.ParsePolicy([]byte(doc))
	if err == nil || !strings.Contains(err.Error(), "expands to more than 100000 YAML nodes") {
		t.Fatalf("ParsePolicy = %v", err)
	}
}
