package crd_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/annexapi/annex"
	"github.com/annexapi/annex/crd"
	"github.com/annexapi/annex/internal/kubectltest"
	"github.com/annexapi/annex/rest"
)

// TestCertManagerCRDServes declares cert-manager's CertificateRequest from
// its published CRD (testdata, pinned) and drives it with kubectl: apply,
// get with the CRD's printer columns, explain from the CRD's schema.
func TestCertManagerCRDServes(t *testing.T) {
	t.Parallel()
	manifest, err := os.ReadFile("testdata/cert-manager-v1.21.1-certificaterequests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := crd.Resources(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Group != "cert-manager.io" || rs[0].Version != "v1" || rs[0].Plural != "certificaterequests" ||
		!rs[0].Namespaced || !rs[0].StatusSubresource || len(rs[0].PrinterColumns) != 7 || strings.Join(rs[0].ShortNames, ",") != "cr,crs" {
		t.Fatalf("resources = %+v", rs)
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := (&annex.Builder{Name: "crd", Resources: rs, DataDir: dir, Serving: annex.Serving{Listener: ln}, Observability: annex.Observability{Logger: zap.NewNop()}}).Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	k := kubectltest.New(t, filepath.Join(dir, "kubeconfig"))
	kubectltest.WantContains(t, "apply", k.MustRun("apply", "-f", k.WriteFile("cr.yaml", `apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: web, namespace: default}
spec:
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K
  issuerRef: {name: letsencrypt, kind: ClusterIssuer}
  usages: [digital signature, key encipherment]
`)), "certificaterequest.cert-manager.io/web created")
	kubectltest.WantContains(t, "get", k.MustRun("get", "cr"), "NAME", "APPROVED", "ISSUER", "REQUESTER", "web", "letsencrypt")
	// Printer columns with JSONPath filters, from the conditions (Denied and
	// Requester are empty: kubectl prints nothing there).
	k.MustRun("patch", "certificaterequest", "web", "--subresource=status", "--type=merge", "-p",
		`{"status":{"conditions":[{"type":"Approved","status":"True"},{"type":"Ready","status":"False","message":"pending"}]}}`)
	if got := strings.Fields(k.MustRun("get", "cr", "web", "--no-headers", "-o", "wide")); len(got) < 5 || got[1] != "True" || got[2] != "False" || !strings.Contains(strings.Join(got, " "), "pending") {
		t.Errorf("columns from conditions: %q", got)
	}
	kubectltest.WantContains(t, "explain", k.MustRun("explain", "certificaterequest.spec.issuerRef"), "Reference to the issuer responsible", "name", "<string>")
	// A value outside the schema's enum is refused.
	out, ok := k.Run("apply", "-f", k.WriteFile("bad.yaml", `apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: bad, namespace: default}
spec: {request: eA==, issuerRef: {name: x}, usages: [teleportation]}
`))
	if ok || !strings.Contains(out, "spec.usages[0]") {
		t.Errorf("an enum violation was accepted:\n%s", out)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {plural: widgets, kind: Widget}\n  scope: Namespaced\n"
	schema := "    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {replicas: {type: integer}}}}}}\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"two_storage_versions", head + "  versions:\n  - name: v1\n    served: true\n    storage: true\n" + schema + "  - name: v2\n    served: true\n    storage: true\n" + schema, "spec.versions: Invalid value: 2: must have exactly one version marked as storage version"},
		{"unserved_storage", head + "  versions:\n  - name: v1\n    served: false\n    storage: true\n" + schema + "  - name: v2\n    served: true\n    storage: false\n" + schema, "spec.versions[0].served: Invalid value: false: the storage version must be served here"},
		{"warning_not_deprecated", head + "  versions:\n  - name: v1\n    served: true\n    storage: true\n    deprecationWarning: old\n" + schema, "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions"},
		{"unknown_strategy", head + "  conversion: {strategy: Magic}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n" + schema, `spec.conversion.strategy: Unsupported value: "Magic"`},
		{"webhook_without_versions", head + "  conversion: {strategy: Webhook, webhook: {clientConfig: {url: \"https://x/convert\"}}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n" + schema, "spec.conversion.webhook.conversionReviewVersions: Required value"},
		{"webhook_http", head + "  conversion: {strategy: Webhook, webhook: {conversionReviewVersions: [v1], clientConfig: {url: \"http://x/convert\"}}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n" + schema, "must be an https URL"},
		{"scale", head + "  versions:\n  - name: v1\n    served: true\n    storage: true\n" + schema + "    subresources: {scale: {specReplicasPath: .spec.replicas}}\n",
			"spec.versions[0].subresources.scale.statusReplicasPath: Required value"},
		{"webhook_conversion", head + "  conversion: {strategy: Webhook}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n" + schema, "spec.conversion.webhook.clientConfig: Required value"},
		{"unknown_field", head + "  versions:\n  - name: v1\n    served: true\n    storage: true\n    nonsense: 1\n" + schema, `unknown field "nonsense"`},
		{"no_schema", head + "  versions:\n  - {name: v1, served: true, storage: true}\n", "spec.versions[0].schema.openAPIV3Schema: Required value"},
		{"wrong_name", strings.Replace(head, "widgets.example.com", "gadgets.example.com", 1) + "  versions:\n  - name: v1\n    served: true\n    storage: true\n" + schema, "must be spec.names.plural"},
		{"not_a_crd", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "want apiextensions.k8s.io/v1 CustomResourceDefinition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := crd.Resources([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSeveralVersions reads a definition of three versions, one not
// served: the served ones in kube's discovery order, the storage version
// marked and carrying the webhook, the deprecated one with its warning.
func TestSeveralVersions(t *testing.T) {
	const schema = "    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}}}}\n"
	manifest := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, kind: Widget}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        service: {namespace: system, name: converter, path: /convert}
  versions:
  - name: v1alpha1
    served: false
    storage: false
` + schema + `  - name: v1beta1
    served: true
    storage: true
    deprecated: true
    deprecationWarning: use v1
` + schema + `  - name: v1
    served: true
    storage: false
` + schema
	rs, err := crd.Resources([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Version != "v1" || rs[1].Version != "v1beta1" {
		t.Fatalf("versions %v", rs)
	}
	if rs[0].StorageVersion || rs[0].Conversion != nil || rs[0].Deprecated {
		t.Errorf("v1: %+v", rs[0])
	}
	if !rs[1].StorageVersion || rs[1].Conversion == nil || !rs[1].Deprecated || rs[1].DeprecationWarning != "use v1" {
		t.Errorf("v1beta1: %+v", rs[1])
	}
	// Converters from the caller replace the manifest's strategy.
	conv := rest.ConversionFuncs{Funcs: map[string]rest.VersionConversion{}}
	rs, err = crd.Config{Converters: map[string]rest.Converter{"widgets.example.com": conv}}.Resources([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rs[1].Conversion.(rest.ConversionFuncs); !ok {
		t.Errorf("conversion %T, want the caller's ConversionFuncs", rs[1].Conversion)
	}
}

// TestConverterForAnUnknownDefinition: a converter whose name matches no
// definition is refused, not silently unused.
func TestConverterForAnUnknownDefinition(t *testing.T) {
	manifest, err := os.ReadFile("testdata/cert-manager-v1.21.1-certificaterequests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = crd.Config{Converters: map[string]rest.Converter{"certificaterequest.cert-manager.io": rest.ConversionFuncs{}}}.Resources(manifest)
	if err == nil || !strings.Contains(err.Error(), `Converters: no CustomResourceDefinition named "certificaterequest.cert-manager.io"`) {
		t.Fatalf("err = %v", err)
	}
}
