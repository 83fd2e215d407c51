package e2e

// Validation against kube-apiserver (issue 31): the environments example's
// CustomResourceDefinition (examples/environments/crd.yaml, both versions,
// conversion None) is installed in a real kube-apiserver and served by annex
// from the same manifest (crd.Resources). Every write of the corpus below
// (creates, updates, merge and JSON patches, server-side apply, status and
// scale, strict and warn field validation, duplicate fields, nulls and
// defaults, metadata errors, several errors at once, CEL rules with and
// without blocking errors) is sent to both, in the same order; the status
// code, reason, message, the set of causes, the warnings and, for an
// object, its content must be the same. Where annex says more than kube
// with the same code and reason, the case says so (intended) and only the
// code and reason are compared.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"sigs.k8s.io/yaml"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/crd"
	"github.com/annexapi/annex/e2e/internal/binaries"
)

// vstep is one request, relative to the collection URL of its case's
// version in the namespace named after the version ("" is the collection itself).
type vstep struct {
	method, path, contentType, body string
	// intended, when set, says why annex's message differs from kube's on
	// purpose: only the code and reason of the answer are compared (only
	// that both refuse the request, when kubeFails: kube answers with an
	// internal error what is the client's mistake).
	intended  string
	kubeFails bool
}

// vcase is a sequence of requests at one version; every answer is compared.
type vcase struct {
	name, version string
	steps         []vstep
}

const ctJSONPatch = "application/json-patch+json"

// envBody is an Environment of the case's version: spec is JSON (or "" for
// none), extra are more top-level members as JSON ("status": {...}).
func envBody(version, name, spec string, extra ...string) string {
	md := `{"name":"` + name + `"}`
	if name == "" {
		md = `{}`
	}
	b := `{"apiVersion":"platform.example.com/` + version + `","kind":"Environment","metadata":` + md
	if spec != "" {
		b += `,"spec":` + spec
	}
	for _, e := range extra {
		b += "," + e
	}
	return b + "}"
}

// owners is the version's owner field with one team: v1beta1 has a list of
// owners, v1alpha1 one owner.
func owners(version, team string) string {
	if version == "v1beta1" {
		return `"owners":["` + team + `"]`
	}
	return `"owner":"` + team + `"`
}

func post(body string) vstep { return vstep{method: http.MethodPost, contentType: ctJSON, body: body} }
func postQ(query, body string) vstep {
	return vstep{method: http.MethodPost, path: "?" + query, contentType: ctJSON, body: body}
}
func merge(path, body string) vstep {
	return vstep{method: http.MethodPatch, path: path, contentType: ctMerge, body: body}
}
func jsonPatch(path, body string) vstep {
	return vstep{method: http.MethodPatch, path: path, contentType: ctJSONPatch, body: body}
}
func get(path string) vstep { return vstep{method: http.MethodGet, path: path} }

// validationCases is the corpus, for one version.
func validationCases(v string) []vcase {
	o := owners(v, "payments")
	n := 0
	c := func(name string, steps ...vstep) vcase {
		n++
		return vcase{name: fmt.Sprintf("%s/%02d_%s", v, n, name), version: v, steps: steps}
	}
	env := func(name, spec string, extra ...string) string { return envBody(v, name, spec, extra...) }
	var cases []vcase
	cases = append(cases,
		// Valid writes, with defaults.
		c("create_minimal", post(env("c1", `{`+o+`,"tier":"dev"}`))),
		c("create_defaults_tier_and_replicas", post(env("c2", `{`+o+`}`))),
		c("create_without_spec", post(env("c3", ""))),
		c("create_empty_spec", post(env("c4", `{}`))),
		c("create_null_spec", post(env("c5", `null`))),
		c("create_null_replicas_defaulted", post(env("c6", `{`+o+`,"replicas":null}`))),
		c("create_null_tier_defaulted", post(env("c7", `{`+o+`,"tier":null}`))),
		c("create_zero_replicas", post(env("c8", `{`+o+`,"replicas":0}`))),
		c("create_generate_name", post(strings.Replace(env("", `{`+o+`}`), `"metadata":{}`, `"metadata":{"generateName":"gen-"}`, 1))),
		c("create_prod_two_replicas", post(env("c9", `{`+o+`,"tier":"prod","replicas":2}`))),
		// Schema errors.
		c("tier_not_supported", post(env("e1", `{`+o+`,"tier":"qa"}`))),
		c("replicas_negative", post(env("e2", `{`+o+`,"replicas":-1}`))),
		c("replicas_string", post(env("e3", `{`+o+`,"replicas":"three"}`))),
		c("replicas_float", post(env("e4", `{`+o+`,"replicas":1.5}`))),
		c("replicas_over_int32_scale_path", post(env("e5", `{`+o+`,"replicas":4294967296}`))),
		c("tier_number", post(env("e6", `{`+o+`,"tier":3}`))),
		c("spec_string", post(env("e7", `"big"`))),
		c("spec_list", post(env("e8", `[1,2]`))),
		c("status_string_dropped", post(env("e9", `{`+o+`}`, `"status":"bad"`))),
		c("owners_too_few", post(env("e12", map[string]string{"v1beta1": `{"owners":[],"tier":"dev"}`, "v1alpha1": `{"owner":"","tier":"dev"}`}[v]))),
		c("owner_empty", post(env("e13", map[string]string{"v1beta1": `{"owners":["a",""],"tier":"dev"}`, "v1alpha1": `{"owner":"","tier":"prod","replicas":1}`}[v]))),
		c("missing_required_owner", post(env("e10", `{"tier":"dev"}`))),
		c("null_owner_required", post(env("e11", `{`+owners(v, "x")[:strings.Index(owners(v, "x"), ":")+1]+`null}`))),
		// CEL, with and without blocking errors.
		c("cel_prod_one_replica", post(env("r1", `{`+o+`,"tier":"prod","replicas":1}`))),
		c("cel_prod_defaulted_replicas", post(env("r2", `{`+o+`,"tier":"prod"}`))),
		c("cel_skipped_type_error", post(env("r3", `{`+o+`,"tier":"prod","replicas":"x"}`))),
		c("cel_skipped_required", post(env("r4", `{"tier":"prod","replicas":1}`))),
		c("cel_skipped_not_supported", post(env("r5", `{`+o+`,"tier":"gold","replicas":1}`))),
		c("cel_with_minimum_error", post(env("r6", `{`+o+`,"tier":"prod","replicas":-3}`))),
		c("several_errors", post(env("r7", `{"tier":"qa","replicas":-1}`))),
		// Field validation: unknown and duplicate fields.
		c("unknown_field_strict", postQ("fieldValidation=Strict", env("f1", `{`+o+`,"color":"red"}`))),
		c("unknown_field_warn", postQ("fieldValidation=Warn", env("f2", `{`+o+`,"color":"red"}`))),
		c("unknown_field_default", post(env("f3", `{`+o+`,"color":"red"}`))),
		c("unknown_field_ignore", postQ("fieldValidation=Ignore", env("f4", `{`+o+`,"color":"red"}`))),
		c("unknown_top_level_strict", postQ("fieldValidation=Strict", env("f5", `{`+o+`}`, `"extra":1`))),
		c("duplicate_field_strict", postQ("fieldValidation=Strict", env("f6", `{`+o+`,"tier":"dev","tier":"prod","replicas":2}`))),
		c("duplicate_field_warn", postQ("fieldValidation=Warn", env("f7", `{`+o+`,"tier":"dev","tier":"staging"}`))),
		c("field_validation_bogus", postQ("fieldValidation=Sometimes", env("f8", `{`+o+`}`))),
		c("unknown_and_invalid_strict", postQ("fieldValidation=Strict", env("f9", `{`+o+`,"color":"red","replicas":-1}`))),
		// Bodies and metadata.
		c("invalid_json", post(`{"apiVersion":`)),
		c("name_invalid", post(env("Bad_Name", `{`+o+`}`))),
		c("name_missing", post(env("", `{`+o+`}`))),
		c("label_invalid", post(strings.Replace(env("m1", `{`+o+`}`), `"name":"m1"`, `"name":"m1","labels":{"bad key!":"x"}`, 1))),
		c("finalizer_invalid", post(strings.Replace(env("m2", `{`+o+`}`), `"name":"m2"`, `"name":"m2","finalizers":["no-slash"]`, 1))),
		c("namespace_mismatch", post(strings.Replace(env("m3", `{`+o+`}`), `"name":"m3"`, `"name":"m3","namespace":"other"`, 1))),
		c("kind_mismatch", vstep{method: http.MethodPost, contentType: ctJSON, body: strings.Replace(env("m4", `{`+o+`}`), `"kind":"Environment"`, `"kind":"Place"`, 1),
			intended: "kube does not default an object of another kind, then runs the CEL rules on it (no such key: tier) and names the Status after the wrong kind; annex refuses the kind alone"}),
		c("metadata_and_spec_errors", post(env("Bad_Name2", `{`+o+`,"replicas":-1}`))),
		c("already_exists", post(env("m5", `{`+o+`}`)), post(env("m5", `{`+o+`}`))),
		c("dry_run_invalid", postQ("dryRun=All", env("m6", `{`+o+`,"replicas":-1}`))),
		c("dry_run_bogus", postQ("dryRun=Some", env("m7", `{`+o+`}`))),
		c("generate_name_invalid", post(strings.Replace(env("", `{`+o+`}`), `"metadata":{}`, `"metadata":{"generateName":"Bad_"}`, 1))),
		// Updates.
		c("update_without_resource_version", post(env("u1", `{`+o+`}`)),
			vstep{method: http.MethodPut, path: "/u1", contentType: ctJSON, body: env("u1", `{`+o+`,"replicas":3}`)}),
		c("update_stale_resource_version", post(env("u2", `{`+o+`}`)),
			vstep{method: http.MethodPut, path: "/u2", contentType: ctJSON, body: strings.Replace(env("u2", `{`+o+`,"replicas":3}`), `"name":"u2"`, `"name":"u2","resourceVersion":"1"`, 1)}),
		c("update_name_mismatch", post(env("u3", `{`+o+`}`)),
			vstep{method: http.MethodPut, path: "/u3", contentType: ctJSON, body: env("u3x", `{`+o+`}`)}),
		// Merge patches.
		c("merge_valid", post(env("p1", `{`+o+`}`)), merge("/p1", `{"spec":{"replicas":4}}`)),
		c("merge_negative_replicas", post(env("p2", `{`+o+`}`)), merge("/p2", `{"spec":{"replicas":-1}}`)),
		c("merge_null_tier_defaulted", post(env("p3", `{`+o+`,"tier":"staging"}`)), merge("/p3", `{"spec":{"tier":null}}`)),
		c("merge_cel", post(env("p4", `{`+o+`}`)), merge("/p4", `{"spec":{"tier":"prod"}}`)),
		c("merge_invalid_json", post(env("p5", `{`+o+`}`)), merge("/p5", `{"spec":`)),
		c("merge_missing_object", merge("/nothere", `{"spec":{"replicas":1}}`)),
		c("merge_unknown_strict", post(env("p6", `{`+o+`}`)), vstep{method: http.MethodPatch, path: "/p6?fieldValidation=Strict", contentType: ctMerge, body: `{"spec":{"size":"xl"}}`,
			intended: "both quote the patched object, whose uid and resourceVersion differ between two servers by nature"}),
		c("strategic_merge_refused", post(env("p7", `{`+o+`}`)), vstep{method: http.MethodPatch, path: "/p7", contentType: "application/strategic-merge-patch+json", body: `{"spec":{"replicas":2}}`}),
		// JSON patches.
		c("jsonpatch_replace", post(env("j1", `{`+o+`}`)), jsonPatch("/j1", `[{"op":"replace","path":"/spec/replicas","value":5}]`)),
		c("jsonpatch_negative", post(env("j2", `{`+o+`}`)), jsonPatch("/j2", `[{"op":"replace","path":"/spec/replicas","value":-2}]`)),
		c("jsonpatch_remove_missing", post(env("j3", `{`+o+`}`)), vstep{method: http.MethodPatch, path: "/j3", contentType: ctJSONPatch, body: `[{"op":"remove","path":"/spec/nothing"}]`,
			intended: "annex names the operation and path that did not apply; kube says only that the server rejected the request"}),
		c("jsonpatch_test_fails", post(env("j4", `{`+o+`}`)),
			vstep{method: http.MethodPatch, path: "/j4", contentType: ctJSONPatch, body: `[{"op":"test","path":"/spec/tier","value":"prod"}]`,
				intended: "annex names the path and values of a failed test op; kube says only that the server rejected the request"}),
		c("jsonpatch_not_a_list", post(env("j5", `{`+o+`}`)), jsonPatch("/j5", `{"op":"add"}`)),
		c("jsonpatch_remove_required", post(env("j6", `{`+o+`}`)), jsonPatch("/j6", `[{"op":"remove","path":"/spec/tier"}]`)),
		// Status.
		c("status_merge", post(env("s1", `{`+o+`}`)), merge("/s1/status", `{"status":{"phase":"Ready","replicas":1}}`)),
		c("status_wrong_type", post(env("s2", `{`+o+`}`)), merge("/s2/status", `{"status":{"replicas":"one"}}`)),
		c("status_negative_replicas", post(env("s4", `{`+o+`}`)), merge("/s4/status", `{"status":{"replicas":-4}}`)),
		c("status_ignores_spec", post(env("s3", `{`+o+`}`)), merge("/s3/status", `{"spec":{"replicas":9},"status":{"phase":"Ready"}}`)),
		// Scale.
		c("scale_get", post(env("k1", `{`+o+`,"replicas":2}`)), get("/k1/scale")),
		c("scale_patch_negative", post(env("k2", `{`+o+`}`)), merge("/k2/scale", `{"spec":{"replicas":-1}}`)),
		c("scale_patch", post(env("k3", `{`+o+`}`)), merge("/k3/scale", `{"spec":{"replicas":3}}`), get("/k3")),
		c("scale_patch_string", post(env("k4", `{`+o+`}`)), vstep{method: http.MethodPatch, path: "/k4/scale", contentType: ctMerge, body: `{"spec":{"replicas":"two"}}`,
			intended: "both quote the patched Scale, whose uid and resourceVersion differ between two servers by nature, and kube's has managedFields"}),
		c("scale_patch_cel", post(env("k5", `{`+o+`,"tier":"prod","replicas":2}`)), merge("/k5/scale", `{"spec":{"replicas":1}}`)),
		c("scale_too_large_via_patch", post(env("k6", `{`+o+`}`)), merge("/k6", `{"spec":{"replicas":2147483648}}`)),
		// Server-side apply.
		c("apply_invalid", vstep{method: http.MethodPatch, path: "/a1?fieldManager=e2e", contentType: ctApply, body: env("a1", `{`+o+`,"tier":"qa"}`)}),
		c("apply_unknown_strict", vstep{method: http.MethodPatch, path: "/a2?fieldManager=e2e&fieldValidation=Strict", contentType: ctApply, body: env("a2", `{`+o+`,"color":"red"}`),
			intended: "kube answers 500 (failed to create typed patch object) for a field the schema does not declare; annex answers the same message as a 400 BadRequest", kubeFails: true}),
	)
	return cases
}

// startValidationServers installs the environments CRD in kube-apiserver
// and runs annex serving crd.Resources of the same manifest; it returns the
// namespace URL prefix of each (…/apis/platform.example.com/).
func startValidationServers(t *testing.T, p *pki, kasURL string, kasLogs fmt.Stringer) (kube, ours string) {
	t.Helper()
	manifest, err := os.ReadFile("../examples/environments/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var def map[string]any
	if err := yaml.Unmarshal(manifest, &def); err != nil {
		t.Fatal(err)
	}
	admin := p.client(t)
	for _, ns := range []string{"v1beta1", "v1alpha1"} {
		mustCreate(t, admin, kasURL+"/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	mustCreate(t, admin, kasURL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", def)
	kube = kasURL + "/apis/platform.example.com/"
	waitUntil(t, 2*time.Minute, "the CRD served at both versions", kasLogs, func() bool {
		for _, v := range []string{"v1beta1", "v1alpha1"} {
			if code, _ := call(t, admin, http.MethodGet, kube+v+"/namespaces/default/environments", ""); code != http.StatusOK {
				return false
			}
		}
		return true
	})
	rs, err := crd.Resources(manifest)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := runAnnex(t, annex.Builder{
		Name:           "environments",
		Resources:      rs,
		DataDir:        t.TempDir(),
		Serving:        annex.Serving{Listener: ln, CertFile: p.file("serving.crt"), KeyFile: p.file("serving.key")},
		Authentication: annex.Authentication{ClientCAFile: p.file("cluster-ca.crt")},
		Observability:  annex.Observability{Logger: zap.NewNop()},
	})
	waitUntil(t, time.Minute, "annex /readyz", &lockedBuffer{}, func() bool {
		code, _ := call(t, admin, http.MethodGet, srv.URL()+"/readyz", "")
		return code == http.StatusOK
	})
	return kube, srv.URL() + "/apis/platform.example.com/"
}

// generated matches a name generated from generateName "gen-" (or the
// invalid "Bad_"): five random characters.
var generated = regexp.MustCompile(`\b(gen-|Bad_)[a-z0-9]{5}\b`)

// answer is what the comparison looks at in one response.
type answer struct {
	Code     int      `json:"code"`
	Warnings []string `json:"warnings,omitempty"`
	// Status, for a Status answer: reason, message and the causes as a
	// sorted set.
	Reason  string   `json:"reason,omitempty"`
	Message string   `json:"message,omitempty"`
	Causes  []string `json:"causes,omitempty"`
	Details string   `json:"details,omitempty"`
	// Object, for anything else: the object without what differs between
	// two servers by nature (uid, times, resourceVersion, managedFields).
	Object map[string]any `json:"object,omitempty"`
}

func (a answer) String() string {
	b, _ := json.Marshal(a)
	return string(b)
}

// exchange sends s to base (a collection URL) with kubectl's headers and
// reads the answer.
func exchange(t *testing.T, c *http.Client, base string, s vstep) answer {
	t.Helper()
	req, err := http.NewRequest(s.method, base+s.path, strings.NewReader(s.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "kubectl/v1.33.0 (linux/amd64) kubernetes/e2e")
	if s.contentType != "" {
		req.Header.Set("Content-Type", s.contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", s.method, base+s.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{Code: resp.StatusCode}
	for _, w := range resp.Header.Values("Warning") {
		a.Warnings = append(a.Warnings, w)
	}
	slices.Sort(a.Warnings)
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		a.Message = "not JSON: " + string(raw)
		return a
	}
	if obj["kind"] == "Status" {
		a.Reason, _ = obj["reason"].(string)
		a.Message, _ = obj["message"].(string)
		if d, ok := obj["details"].(map[string]any); ok {
			causes, _ := d["causes"].([]any)
			var listed []string // as the message lists them
			for _, x := range causes {
				cm := x.(map[string]any)
				a.Causes = append(a.Causes, fmt.Sprintf("%v|%v|%v", cm["reason"], cm["field"], cm["message"]))
				f, _ := cm["field"].(string)
				if f == "" {
					f = "<nil>"
				}
				listed = append(listed, fmt.Sprintf("%s: %v", f, cm["message"]))
			}
			// kube lists the errors of one object's properties in map
			// order: the message is compared with its list of causes
			// replaced, when it is exactly that list, and the causes as a
			// set.
			if all := strings.Join(listed, ", "); len(listed) > 1 && strings.HasSuffix(a.Message, "["+all+"]") {
				a.Message = strings.TrimSuffix(a.Message, "["+all+"]") + "[<causes>]"
			} else if len(listed) == 1 && strings.HasSuffix(a.Message, ": "+all) {
				a.Message = strings.TrimSuffix(a.Message, all) + "<causes>"
			}
			slices.Sort(a.Causes)
			a.Details = fmt.Sprintf("%v/%v/%v", d["group"], d["kind"], d["name"])
		}
		a.Message = generated.ReplaceAllString(a.Message, "${1}<random>")
		a.Details = generated.ReplaceAllString(a.Details, "${1}<random>")
		for i := range a.Causes {
			a.Causes[i] = generated.ReplaceAllString(a.Causes[i], "${1}<random>")
		}
		return a
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields"} {
			delete(md, k)
		}
		if n, _ := md["name"].(string); md["generateName"] != nil && n != "" {
			md["name"] = "<generated>"
		}
	}
	a.Object = obj
	return a
}

func TestValidationMatchesKube(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver; not in -short")
	}
	p := newPKI(t)
	kasURL, kasLogs := startKubeAPIServer(t, p, binaries.Etcd(t))
	kube, ours := startValidationServers(t, p, kasURL, kasLogs)
	admin := p.client(t)
	var cases []vcase
	for _, v := range []string{"v1beta1", "v1alpha1"} {
		cases = append(cases, validationCases(v)...)
	}
	if len(cases) < 120 {
		t.Fatalf("the corpus has %d cases over two versions, want at least 60 at each", len(cases))
	}
	differ := 0
	for _, vc := range cases {
		// Each version writes in a namespace of its own: with conversion
		// None the objects of both versions are the same objects.
		path := vc.version + "/namespaces/" + vc.version + "/environments"
		for i, s := range vc.steps {
			k := exchange(t, admin, kube+path, s)
			a := exchange(t, admin, ours+path, s)
			if s.intended != "" {
				if s.kubeFails && (k.Code < 400 || a.Code < 400) || !s.kubeFails && (k.Code != a.Code || k.Reason != a.Reason) {
					t.Errorf("%s step %d (%s %s): intended difference (%s), but the code or reason differ:\nkube-apiserver: %s\nannex:          %s", vc.name, i, s.method, s.path, s.intended, k, a)
				}
				continue
			}
			if k.String() != a.String() {
				differ++
				t.Errorf("%s step %d (%s %s %s):\nkube-apiserver: %s\nannex:          %s", vc.name, i, s.method, s.path, s.body, k, a)
			}
		}
	}
	t.Logf("%d cases, %d answers differ", len(cases), differ)
}
