package e2e

// The schemas of the value types objects embed (meta.Time, meta.MicroTime,
// meta.Duration, meta.Condition, typed.Quantity, typed.IntOrString) against
// those a real kube-apiserver publishes for its own types in /openapi/v3
// (issue 31: a meta.Time field must read <string> in kubectl explain).

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/annexapi/annex/e2e/internal/binaries"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
	"github.com/annexapi/annex/typed"
)

// kubeSchemas fetches every document of /openapi/v3 and returns the
// component schemas named, with the document each came from.
func kubeSchemas(t *testing.T, c *http.Client, base string, names []string) (map[string]map[string]any, map[string]string) {
	t.Helper()
	get := func(path string, v any) {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	get("/openapi/v3", &index)
	paths := make([]string, 0, len(index.Paths))
	for p := range index.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths) // api/v1 first: the core types' document
	found := map[string]map[string]any{}
	from := map[string]string{}
	for _, p := range paths {
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		get(index.Paths[p].ServerRelativeURL, &doc)
		for _, n := range names {
			if s, ok := doc.Components.Schemas[n]; ok && found[n] == nil {
				found[n], from[n] = s, p
			}
		}
	}
	return found, from
}

// valueKind is what a schema accepts, as kubectl explain and a validator
// see it: "int-or-string" for a schema that takes a string or a number
// (x-kubernetes-int-or-string, or kube's oneOf of both), else type/format.
func valueKind(s map[string]any) string {
	if s["x-kubernetes-int-or-string"] == true {
		return "int-or-string"
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		alts, _ := s[k].([]any)
		var types []string
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok {
				if ty, ok := m["type"].(string); ok {
					types = append(types, ty)
				}
			}
		}
		if slices.Contains(types, "string") && (slices.Contains(types, "integer") || slices.Contains(types, "number")) {
			return "int-or-string"
		}
	}
	ty, _ := s["type"].(string)
	f, _ := s["format"].(string)
	if ty == "string" && f == "int-or-string" {
		return "int-or-string"
	}
	return ty + "/" + f
}

func asMap(t *testing.T, p *schema.Props) map[string]any {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMetaSchemasMatchKube(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kube-apiserver; not in -short")
	}
	type values struct {
		Time        meta.Time         `json:"time"`
		MicroTime   meta.MicroTime    `json:"microTime"`
		Duration    meta.Duration     `json:"duration"`
		Quantity    typed.Quantity    `json:"quantity"`
		IntOrString typed.IntOrString `json:"intOrString"`
		Condition   meta.Condition    `json:"condition"`
	}
	ours, err := typed.SchemaOf[values]()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ kube, field string }{
		{"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "time"},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", "microTime"},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.Duration", "duration"},
		{"io.k8s.apimachinery.pkg.api.resource.Quantity", "quantity"},
		{"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "intOrString"},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.Condition", "condition"},
	}
	// k8s.io's own types, which a program may use in a typed resource,
	// get the same schemas from their OpenAPI methods.
	type k8sValues struct {
		Time        metav1.Time        `json:"time"`
		MicroTime   metav1.MicroTime   `json:"microTime"`
		Duration    metav1.Duration    `json:"duration"`
		Quantity    resource.Quantity  `json:"quantity"`
		IntOrString intstr.IntOrString `json:"intOrString"`
	}
	theirs, err := typed.SchemaOf[k8sValues]()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range theirs.Properties {
		if a, b := valueKind(asMap(t, new(p))), valueKind(asMap(t, new(ours.Properties[name]))); a != b {
			t.Errorf("%s: typed.SchemaOf gives k8s.io's type %s, annex's %s", name, a, b)
		}
	}
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.kube
	}
	p := newPKI(t)
	kasURL, _ := startKubeAPIServer(t, p, binaries.Etcd(t))
	kube, from := kubeSchemas(t, p.client(t), kasURL, names)
	for _, c := range cases {
		k, ok := kube[c.kube]
		if !ok && c.field == "duration" {
			// No type kube-apiserver serves has a Duration: its schema is
			// what metav1.Duration's own OpenAPI methods say, which
			// kube-openapi publishes for types that have one.
			d := metav1.Duration{}
			k, from[c.kube] = map[string]any{"type": d.OpenAPISchemaType()[0], "format": d.OpenAPISchemaFormat()}, "metav1.Duration's OpenAPI methods"
			ok = true
		}
		if !ok {
			t.Errorf("%s: kube-apiserver %s publishes it in no /openapi/v3 document", c.kube, binaries.KubeVersion)
			continue
		}
		o := asMap(t, new(ours.Properties[c.field]))
		gk, ok_ := valueKind(k), valueKind(o)
		t.Logf("%s (from %s): kube %s, annex %s", c.kube, from[c.kube], gk, ok_)
		if gk != ok_ {
			t.Errorf("%s: kube's schema takes %s, ours %s", c.kube, gk, ok_)
		}
		if c.field != "condition" {
			continue
		}
		// An object: the same members, each of the same kind, and the same
		// required members.
		kp, _ := k["properties"].(map[string]any)
		op, _ := o["properties"].(map[string]any)
		if len(kp) != len(op) {
			t.Errorf("%s: kube's members %v, ours %v", c.kube, keys(kp), keys(op))
		}
		for name, ks := range kp {
			km, _ := ks.(map[string]any)
			if ref, ok := km["allOf"].([]any); ok && len(ref) == 1 { // {"allOf":[{"$ref": ...Time}]}
				r, _ := ref[0].(map[string]any)["$ref"].(string)
				km = kube[strings.TrimPrefix(r, "#/components/schemas/")]
			}
			om, _ := op[name].(map[string]any)
			if km == nil || om == nil || valueKind(km) != valueKind(om) {
				t.Errorf("%s.%s: kube %v, ours %v", c.kube, name, km, om)
			}
		}
		kr := stringsOf(k["required"])
		or := stringsOf(o["required"])
		slices.Sort(kr)
		slices.Sort(or)
		if !reflect.DeepEqual(kr, or) {
			t.Errorf("%s: kube requires %v, ours %v", c.kube, kr, or)
		}
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
