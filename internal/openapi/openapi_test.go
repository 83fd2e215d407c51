package openapi

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/annexapi/annex/schema"
)

func envResource(fieldValidation bool) Resource {
	return Resource{
		Group: "platform.example.com", Version: "v1alpha1", Plural: "environments", Kind: "Environment",
		Namespaced: true, Subresources: []string{"status"}, FieldValidation: fieldValidation,
		PatchTypes: []string{"application/json-patch+json", "application/merge-patch+json"},
		Schema: schema.MustParseYAML(`
type: object
description: An Environment is a place to deploy.
properties:
  spec:
    type: object
    properties:
      tier: {type: string, description: The tier., nullable: true}
      port: {x-kubernetes-int-or-string: true}
      extra: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}
`),
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// dig follows keys through nested maps.
func dig(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

const defName = "com.example.platform.v1alpha1.Environment"

func TestBuild_v3(t *testing.T) {
	d, err := Build(Config{}, []Resource{envResource(true), {Group: "platform.example.com", Version: "v1", Plural: "clusters", Kind: "Cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	root := decode(t, d.V3Root)
	key := "apis/platform.example.com/v1alpha1"
	sum := sha512.Sum512(d.V3[key])
	want := "/openapi/v3/" + key + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))
	if got := dig(root, "paths", key, "serverRelativeURL"); got != want {
		t.Fatalf("serverRelativeURL = %v, want %v", got, want)
	}
	if dig(root, "paths", "apis/platform.example.com/v1", "serverRelativeURL") == nil {
		t.Fatal("second group version missing from the root")
	}
	doc := decode(t, d.V3[key])
	item := "/apis/platform.example.com/v1alpha1/namespaces/{namespace}/environments/{name}"
	cases := []struct {
		name string
		path []string
		want any
	}{
		{"get_gvk_is_object", []string{"paths", item, "get", "x-kubernetes-group-version-kind", "kind"}, "Environment"},
		{"patch_action", []string{"paths", item, "patch", "x-kubernetes-action"}, "patch"},
		{"status_path", []string{"paths", item + "/status", "put", "x-kubernetes-action"}, "put"},
		{"all_namespaces_list", []string{"paths", "/apis/platform.example.com/v1alpha1/environments", "get", "x-kubernetes-action"}, "list"},
		{"description", []string{"components", "schemas", defName, "description"}, "An Environment is a place to deploy."},
		{"nullable_kept_in_v3", []string{"components", "schemas", defName, "properties", "spec", "properties", "tier", "nullable"}, true},
		{"metadata_ref", []string{"components", "schemas", defName, "properties", "metadata", "allOf"}, []any{map[string]any{"$ref": "#/components/schemas/" + defObjectMeta}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := json.Marshal(dig(doc, tc.path...))
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Fatalf("%v = %s, want %s", tc.path, got, want)
			}
		})
	}
	gvks, _ := dig(doc, "components", "schemas", defName, "x-kubernetes-group-version-kind").([]any)
	if len(gvks) != 1 || dig(gvks[0], "version") != "v1alpha1" {
		t.Fatalf("schema GVK = %v, want an array with the GVK", gvks)
	}
	content, _ := dig(doc, "paths", item, "patch", "requestBody", "content").(map[string]any)
	if _, ok := content["application/strategic-merge-patch+json"]; ok || len(content) != 2 {
		t.Fatalf("patch content types = %v", content)
	}
	found := false
	for _, p := range dig(doc, "paths", item, "patch", "parameters").([]any) {
		if dig(p, "name") == "fieldValidation" && dig(p, "in") == "query" {
			found = true
		}
	}
	if !found {
		t.Fatal("fieldValidation not advertised on PATCH")
	}
}

func TestBuild_fieldValidation_off(t *testing.T) {
	d, err := Build(Config{}, []Resource{envResource(false)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d.V2), "fieldValidation") || strings.Contains(string(d.V3["apis/platform.example.com/v1alpha1"]), "fieldValidation") {
		t.Fatal("fieldValidation advertised though not implemented")
	}
}

func TestBuild_hash_changes_with_document(t *testing.T) {
	a, err := Build(Config{}, []Resource{envResource(true)})
	if err != nil {
		t.Fatal(err)
	}
	r := envResource(true)
	r.Schema.Description = "changed"
	b, err := Build(Config{}, []Resource{r})
	if err != nil {
		t.Fatal(err)
	}
	key := "apis/platform.example.com/v1alpha1"
	if a.V3Hash[key] == b.V3Hash[key] || string(a.V3Root) == string(b.V3Root) {
		t.Fatal("hash did not change with the document")
	}
	if a.V2ETag == b.V2ETag {
		t.Fatal("v2 ETag did not change with the document")
	}
}

func TestBuild_v2(t *testing.T) {
	d, err := Build(Config{}, []Resource{envResource(true), {Group: "x.io", Version: "v1", Plural: "things", Kind: "Thing"}})
	if err != nil {
		t.Fatal(err)
	}
	doc := decode(t, d.V2)
	if doc["swagger"] != "2.0" {
		t.Fatalf("swagger = %v", doc["swagger"])
	}
	spec := dig(doc, "definitions", defName, "properties", "spec", "properties")
	if dig(spec, "tier", "nullable") != nil {
		t.Fatal("nullable kept in v2")
	}
	if dig(spec, "port", "format") != "int-or-string" {
		t.Fatalf("int-or-string = %v", dig(spec, "port"))
	}
	if dig(spec, "extra", "properties") != nil || dig(spec, "extra", "type") != nil {
		t.Fatalf("preserve-unknown node kept its shape: %v", dig(spec, "extra"))
	}
	item := "/apis/platform.example.com/v1alpha1/namespaces/{namespace}/environments/{name}"
	if got := dig(doc, "paths", item, "patch", "consumes"); len(got.([]any)) != 2 {
		t.Fatalf("consumes = %v", got)
	}
	if dig(doc, "paths", item, "get", "x-kubernetes-group-version-kind", "group") != "platform.example.com" {
		t.Fatal("v2 get has no GVK")
	}
	// Without a schema the kind still has apiVersion, kind and metadata.
	thing := dig(doc, "definitions", "io.x.v1.Thing", "properties", "metadata", "$ref")
	if thing != "#/definitions/"+defObjectMeta {
		t.Fatalf("schema-less metadata = %v", thing)
	}
	if dig(doc, "paths", "/apis/x.io/v1/things/{name}", "get") == nil {
		t.Fatal("cluster-scoped item path missing")
	}
}

func TestBuild_invalid(t *testing.T) {
	_, err := Build(Config{}, []Resource{{Group: "x.io"}})
	if !errors.Is(err, ErrInvalidResource) {
		t.Fatalf("err = %v, want ErrInvalidResource", err)
	}
}
