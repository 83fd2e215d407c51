package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/internal/kubectltest"
	"github.com/annexapi/annex/rest"
)

// TestKubectlVersions drives both versions with kubectl: the same objects at
// v1alpha1 and v1beta1, an object with two owners read at v1alpha1 and
// written back without losing one, a watch at v1alpha1 seeing an update
// made at v1beta1, and explain at each version.
func TestKubectlVersions(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	const alpha, beta = "environments.v1alpha1.platform.example.com", "environments.v1beta1.platform.example.com"

	manifest, err := os.ReadFile("environment.yaml") // v1alpha1
	if err != nil {
		t.Fatal(err)
	}
	k.MustRun("create", "-f", k.WriteFile("env.yaml", string(manifest)))
	k.MustRun("apply", "-f", k.WriteFile("shared.yaml", `apiVersion: platform.example.com/v1beta1
kind: Environment
metadata: {name: shared, namespace: default}
spec: {owners: [payments-team, search-team], tier: dev}
`))
	a, b := k.MustRun("get", alpha, "-o", "name"), k.MustRun("get", beta, "-o", "name")
	if a != b || !strings.Contains(a, "checkout-staging") || !strings.Contains(a, "shared") {
		t.Fatalf("v1alpha1 lists\n%s\nv1beta1 lists\n%s", a, b)
	}
	kubectltest.WantContains(t, "get at v1alpha1", k.MustRun("get", alpha), "OWNER", "payments-team")
	kubectltest.WantContains(t, "get at v1beta1", k.MustRun("get", beta), "OWNERS", `["payments-team","search-team"]`)

	// v1alpha1 holds one owner; the others ride in an annotation and come
	// back when the object is written at v1alpha1.
	y := k.MustRun("get", alpha, "shared", "-o", "yaml")
	kubectltest.WantContains(t, "shared at v1alpha1", y, "apiVersion: platform.example.com/v1alpha1", "owner: payments-team",
		`platform.example.com/owners: '["payments-team","search-team"]'`)
	edited := strings.Replace(y, "tier: dev", "tier: staging", 1)
	k.MustRun("replace", "-f", k.WriteFile("shared-alpha.yaml", edited))
	if got := k.MustRun("get", beta, "shared", "-o", `jsonpath={.spec.owners} {.spec.tier} {.metadata.annotations.platform\.example\.com/owners}`); got != `["payments-team","search-team"] staging ` {
		t.Errorf("after the v1alpha1 replace, v1beta1 reads %q", got)
	}

	// A watch at v1alpha1 sees an update made at v1beta1.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := k.Command(ctx, "get", alpha, "-w", "--output-watch-events", "-o", "jsonpath={.type} {.object.metadata.name} {.object.spec.owner}{\"\\n\"}")
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = w.Wait() }()
	sc := bufio.NewScanner(stdout)
	want := func(line string) {
		t.Helper()
		for sc.Scan() {
			if sc.Text() == line {
				return
			}
		}
		t.Fatalf("the v1alpha1 watch ended before %q", line)
	}
	want("ADDED checkout-staging payments-team")
	k.MustRun("patch", beta, "checkout-staging", "--type=merge", "-p", `{"spec":{"owners":["platform-team"]}}`)
	want("MODIFIED checkout-staging platform-team")

	// explain at each version.
	kubectltest.WantContains(t, "explain v1beta1", k.MustRun("explain", "environments.spec.owners", "--api-version=platform.example.com/v1beta1"),
		"Owners are the teams accountable")
	kubectltest.WantContains(t, "explain v1alpha1", k.MustRun("explain", "environments.spec.owner", "--api-version=platform.example.com/v1alpha1"),
		"Owner is the team accountable")
}

// TestConversionRoundTrips: every object of a corpus, converted from either
// version to the other and back, is what it was (owners after the first
// survive v1alpha1 in the annotation).
func TestConversionRoundTrips(t *testing.T) {
	ctx := context.Background()
	parse := func(s string) rest.Object {
		var o rest.Object
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	betas := []string{
		`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"a"},"spec":{"owners":["x"],"tier":"dev"}}`,
		`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"b","annotations":{"k":"v"}},"spec":{"owners":["x","y","z"],"tier":"prod","replicas":3}}`,
		`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"c"},"spec":{"tier":"dev"}}`,
		`{"apiVersion":"platform.example.com/v1beta1","kind":"Environment","metadata":{"name":"d"}}`,
	}
	alphas := []string{
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"a"},"spec":{"owner":"x","tier":"dev"}}`,
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"b","annotations":{"k":"v"}},"spec":{"owner":"x"}}`,
		// The kept owners no longer start with the owner (a client changed
		// it at v1alpha1): the owner wins.
		`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"c","annotations":{"platform.example.com/owners":"[\"old\",\"y\"]"}},"spec":{"owner":"new"}}`,
	}
	conv := conversion()
	round := func(in string, there, back string) {
		t.Helper()
		obj := parse(in)
		orig := parse(in)
		objs := []rest.Object{obj}
		if err := conv.Convert(ctx, objs, "platform.example.com/"+there); err != nil {
			t.Fatal(err)
		}
		if err := conv.Convert(ctx, objs, "platform.example.com/"+back); err != nil {
			t.Fatal(err)
		}
		if in == alphas[2] {
			orig = parse(`{"apiVersion":"platform.example.com/v1alpha1","kind":"Environment","metadata":{"name":"c"},"spec":{"owner":"new"}}`)
		}
		if !reflect.DeepEqual(objs[0], orig) {
			got, _ := json.Marshal(objs[0])
			t.Errorf("%s → %s → %s:\n got %s\nwant %s", in, there, back, got, in)
		}
	}
	for _, b := range betas {
		round(b, "v1alpha1", "v1beta1")
	}
	for _, a := range alphas {
		round(a, "v1beta1", "v1alpha1")
	}
}

// v1beta1Policies are admission policies written for v1beta1 only (its
// spec.owners): matchPolicy Equivalent, the default, applies them to
// requests at v1alpha1 too, on the object converted to v1beta1.
const v1beta1Policies = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: owners-are-teams}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [platform.example.com], apiVersions: [v1beta1], operations: [CREATE, UPDATE], resources: [environments]}
  validations:
  - expression: "object.spec.owners.all(o, o.endsWith('-team')) && request.kind.version == 'v1beta1'"
    messageExpression: "'owners must be teams (' + object.spec.owners.join(',') + '), request at ' + request.requestKind.version"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: owners-are-teams}
spec: {policyName: owners-are-teams, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: platform-co-owns}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [platform.example.com], apiVersions: [v1beta1], operations: [CREATE], resources: [environments]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/spec/owners/-', value: 'platform-team'}]"
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: platform-co-owns}
spec: {policyName: platform-co-owns}
`

// TestAdmissionAtTheRuleVersion: policies written for v1beta1 see a
// v1alpha1 request's object at v1beta1 (matchPolicy Equivalent), and a
// mutation made there comes back to the v1alpha1 object.
func TestAdmissionAtTheRuleVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "v1beta1-policies.yaml")
	if err := os.WriteFile(file, []byte(v1beta1Policies), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir, _, _ := startExampleWith(t, filepath.Join(dir, "data"), func(b *annex.Builder) {
		b.Admission.PolicyFiles = []string{file}
	})
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	out, ok := k.Run("apply", "-f", k.WriteFile("bad.yaml", "apiVersion: platform.example.com/v1alpha1\nkind: Environment\n"+
		"metadata: {name: bad, namespace: default}\nspec: {owner: alice, tier: dev}\n"))
	if ok {
		t.Fatalf("a v1alpha1 object the v1beta1 policy denies was created:\n%s", out)
	}
	kubectltest.WantContains(t, "denied at v1alpha1", out, "owners must be teams (alice,platform-team), request at v1alpha1")
	k.MustRun("apply", "-f", k.WriteFile("good.yaml", "apiVersion: platform.example.com/v1alpha1\nkind: Environment\n"+
		"metadata: {name: good, namespace: default}\nspec: {owner: payments-team, tier: dev}\n"))
	if got := k.MustRun("get", "environments.v1beta1.platform.example.com", "good", "-o", "jsonpath={.spec.owners}"); got != `["payments-team","platform-team"]` {
		t.Errorf("the v1beta1 mutation of a v1alpha1 create left owners %s", got)
	}
}

// TestServerSideApplyAcrossVersions: field ownership recorded at one version
// holds at the other: a manager that applied spec.owner at v1alpha1 owns
// spec.owners at v1beta1 (an atomic list whose first item is the owner), so
// another manager's apply there conflicts on .spec.owner, the path at the
// version the first one applied.
func TestServerSideApplyAcrossVersions(t *testing.T) {
	t.Parallel()
	dataDir, _, _ := startExample(t)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	k.MustRun("apply", "--server-side", "--field-manager=alpha-team", "-f", k.WriteFile("a.yaml",
		"apiVersion: platform.example.com/v1alpha1\nkind: Environment\nmetadata: {name: ssa, namespace: default}\nspec: {owner: alice-team, tier: dev}\n"))
	out, ok := k.Run("apply", "--server-side", "--field-manager=beta-team", "-f", k.WriteFile("b.yaml",
		"apiVersion: platform.example.com/v1beta1\nkind: Environment\nmetadata: {name: ssa, namespace: default}\nspec: {owners: [bob-team]}\n"))
	if ok {
		t.Fatalf("the v1beta1 apply took spec.owners from the v1alpha1 manager without a conflict:\n%s", out)
	}
	// kube names an Apply manager without its version (only Update ones get
	// "using <apiVersion>"); the path is at the version it applied.
	kubectltest.WantContains(t, "conflict", out, `conflict with "alpha-team": .spec.owner`)
	k.MustRun("apply", "--server-side", "--force-conflicts", "--field-manager=beta-team", "-f", k.WriteFile("b.yaml",
		"apiVersion: platform.example.com/v1beta1\nkind: Environment\nmetadata: {name: ssa, namespace: default}\nspec: {owners: [bob-team]}\n"))
	if got := k.MustRun("get", "environments.v1alpha1.platform.example.com", "ssa", "-o", "jsonpath={.spec.owner}"); got != "bob-team" {
		t.Errorf("after the forced apply, owner %q", got)
	}
}

// TestStorageMigration: objects stored while v1alpha1 was the storage
// version are read at v1beta1 after the switch, and a no-op update rewrites
// each at v1beta1, as a storage version migration does.
func TestStorageMigration(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	alphaStorage := func(b *annex.Builder) {
		for i := range b.Resources {
			b.Resources[i].StorageVersion = b.Resources[i].Version == "v1alpha1"
		}
	}
	_, _, stop := startExampleWith(t, dataDir, alphaStorage)
	k := kubectltest.New(t, filepath.Join(dataDir, "kubeconfig"))
	k.MustRun("apply", "-f", k.WriteFile("env.yaml", "apiVersion: platform.example.com/v1beta1\nkind: Environment\n"+
		"metadata: {name: migrating, namespace: default}\nspec: {owners: [payments-team, search-team], tier: dev}\n"))
	stop()
	db := filepath.Join(dataDir, "storage.db")
	if v := storedValues(t, db); !containsText(v, `"apiVersion":"platform.example.com/v1alpha1"`) || !containsText(v, `"owner":"payments-team"`) {
		t.Fatalf("stored while v1alpha1 was the storage version: %q", v)
	}

	_, _, stop = startExampleWith(t, dataDir, nil) // v1beta1 stores again
	if got := k.MustRun("get", "environment", "migrating", "-o", "jsonpath={.apiVersion} {.spec.owners}"); got != `platform.example.com/v1beta1 ["payments-team","search-team"]` {
		t.Fatalf("the old object read at v1beta1: %q", got)
	}
	obj := k.MustRun("get", "environment", "migrating", "-o", "json")
	k.MustRun("replace", "-f", k.WriteFile("same.json", obj))
	stop()
	// The store keeps earlier revisions until compaction: the newest is
	// the update's, resourceVersion 3.
	var latest []byte
	for _, v := range storedValues(t, db) {
		if bytes.Contains(v, []byte(`"resourceVersion":"3"`)) {
			latest = v
		}
	}
	if !bytes.Contains(latest, []byte(`{"apiVersion":"platform.example.com/v1beta1"`)) ||
		!bytes.Contains(latest, []byte(`"owners":["payments-team","search-team"]`)) || bytes.Contains(latest, []byte(`"platform.example.com/owners"`)) {
		t.Fatalf("after the no-op update, stored %s", latest)
	}
}
