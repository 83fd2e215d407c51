// This file holds Build: the declarations, the path and operation layout of a
// Kubernetes resource, and the encoding of the v2 and v3 documents.

package openapi

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/annexapi/annex/schema"
)

// Resource describes one served resource.
type Resource struct {
	// Group, Version, Plural and Kind name the resource; all are required.
	Group, Version, Plural, Kind string
	// ListKind is the kind of lists; empty means Kind+"List".
	ListKind string
	// Namespaced is true for namespaced resources.
	Namespaced bool
	// Schema is the object's structural schema; apiVersion, kind and
	// metadata are added (metadata always refers to ObjectMeta). Nil means an
	// object that keeps any field.
	Schema *schema.Props
	// Subresources are the served subresources of the same kind ("status").
	Subresources []string
	// PatchTypes are the content types PATCH accepts, in the order to list
	// them. Empty means no patch operation.
	PatchTypes []string
	// FieldValidation advertises the fieldValidation query parameter on
	// create, update and patch: set it only when the server implements Strict.
	FieldValidation bool
}

// Config configures Build. Zero values are defaults.
type Config struct {
	// Title and Version fill the v2 document's info. Zero means "Kubernetes"
	// and "unversioned".
	Title, Version string
}

// Documents are the encoded documents.
type Documents struct {
	// V2 is the Swagger 2.0 document and V2ETag its quoted ETag.
	V2     []byte
	V2ETag string
	// V3Root is the document at /openapi/v3.
	V3Root []byte
	// V3 maps a root key ("apis/<group>/<version>") to its document, and
	// V3Hash to its hash (upper-case hex SHA-512 of the document).
	V3     map[string][]byte
	V3Hash map[string]string
}

// ErrInvalidResource is returned by Build for a Resource with a missing name.
var ErrInvalidResource = errors.New("openapi: invalid resource")

// Names of the shared definitions.
const (
	defObjectMeta    = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	defListMeta      = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
	defStatus        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	defPatch         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	defDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	defWatchEvent    = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
)

// DefinitionName is the definition name of a kind: the reversed group, the
// version and the kind, as for CRDs ("com.example.platform.v1alpha1.Environment").
func DefinitionName(group, version, kind string) string {
	parts := strings.Split(group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + version + "." + kind
}

// Build encodes the documents of rs.
func Build(cfg Config, rs []Resource) (*Documents, error) {
	if cfg.Title == "" {
		cfg.Title = "Kubernetes"
	}
	if cfg.Version == "" {
		cfg.Version = "unversioned"
	}
	byGV := map[string][]Resource{}
	var gvs []string
	for _, r := range rs {
		if r.Group == "" || r.Version == "" || r.Plural == "" || r.Kind == "" {
			return nil, fmt.Errorf("%w: group, version, plural and kind are required (%s.%s/%s)", ErrInvalidResource, r.Plural, r.Group, r.Version)
		}
		if r.ListKind == "" {
			r.ListKind = r.Kind + "List"
		}
		gv := r.Group + "/" + r.Version
		if _, ok := byGV[gv]; !ok {
			gvs = append(gvs, gv)
		}
		byGV[gv] = append(byGV[gv], r)
	}
	d := &Documents{V3: map[string][]byte{}, V3Hash: map[string]string{}}

	v2Paths, v2Defs := map[string]any{}, map[string]any{}
	for name, def := range commonDefinitions(false) {
		v2Defs[name] = def
	}
	root := map[string]any{}
	for _, gv := range gvs {
		paths, defs := map[string]any{}, map[string]any{}
		for name, def := range commonDefinitions(true) {
			defs[name] = def
		}
		for _, r := range byGV[gv] {
			addResource(r, false, v2Paths, v2Defs)
			addResource(r, true, paths, defs)
		}
		doc := map[string]any{
			"openapi":    "3.0.0",
			"info":       map[string]any{"title": "Kubernetes", "version": "unversioned"},
			"paths":      paths,
			"components": map[string]any{"schemas": defs},
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		key := "apis/" + gv
		sum := sha512.Sum512(b)
		d.V3[key] = b
		d.V3Hash[key] = strings.ToUpper(hex.EncodeToString(sum[:]))
		root[key] = map[string]any{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + d.V3Hash[key]}
	}
	v2 := map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": cfg.Title, "version": cfg.Version},
		"paths":       v2Paths,
		"definitions": v2Defs,
	}
	b, err := json.Marshal(v2)
	if err != nil {
		return nil, err
	}
	d.V2 = b
	d.V2ETag = fmt.Sprintf(`"%X"`, sha512.Sum512(b))
	if d.V3Root, err = json.Marshal(map[string]any{"paths": root}); err != nil {
		return nil, err
	}
	return d, nil
}

// gvk is the x-kubernetes-group-version-kind value.
func gvk(group, version, kind string) map[string]any {
	return map[string]any{"group": group, "version": version, "kind": kind}
}

// ref is a $ref to a definition, in v2 or v3 spelling.
func ref(v3 bool, name string) map[string]any {
	if v3 {
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{"$ref": "#/definitions/" + name}
}

// camel turns "platform.example.com" and "v1alpha1" into
// "PlatformExampleComV1alpha1", as operation ids spell a group version.
func camel(group, version string) string {
	var b strings.Builder
	for _, p := range append(strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }), version) {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// param is one operation or path parameter.
type param struct {
	name, in, typ, desc string
	required            bool
}

func (p param) encode(v3 bool) map[string]any {
	m := map[string]any{"name": p.name, "in": p.in, "description": p.desc}
	if p.required {
		m["required"] = true
	}
	if v3 {
		m["schema"] = map[string]any{"type": p.typ, "uniqueItems": true}
	} else {
		m["type"], m["uniqueItems"] = p.typ, true
	}
	return m
}

// queryParams are the query parameters of Kubernetes operations, with their
// descriptions; kubeParams returns a fresh set, so callers may append freely.
type queryParams struct {
	pretty, dryRun, fieldManager, fieldValidation, force param
	list, delete                                         []param
}

func kubeParams() queryParams {
	var q queryParams

	q.pretty = param{name: "pretty", in: "query", typ: "string", desc: "If 'true', then the output is pretty printed."}
	q.dryRun = param{name: "dryRun", in: "query", typ: "string", desc: "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"}
	q.fieldManager = param{name: "fieldManager", in: "query", typ: "string", desc: "fieldManager is a name associated with the actor or entity that is making these changes."}
	q.fieldValidation = param{name: "fieldValidation", in: "query", typ: "string", desc: "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"}
	q.force = param{name: "force", in: "query", typ: "boolean", desc: "Force is going to \"force\" Apply requests. It must be unset for non-apply patch requests."}
	q.list = []param{
		{name: "allowWatchBookmarks", in: "query", typ: "boolean", desc: "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."},
		{name: "continue", in: "query", typ: "string", desc: "The continue option should be set when retrieving more results from the server."},
		{name: "fieldSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
		{name: "labelSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
		{name: "limit", in: "query", typ: "integer", desc: "limit is a maximum number of responses to return for a list call."},
		{name: "resourceVersion", in: "query", typ: "string", desc: "resourceVersion sets a constraint on what resource versions a request may be served from."},
		{name: "resourceVersionMatch", in: "query", typ: "string", desc: "resourceVersionMatch determines how resourceVersion is applied to list calls."},
		{name: "sendInitialEvents", in: "query", typ: "boolean", desc: "`sendInitialEvents=true` may be set together with `watch=true`: the stream begins with synthetic events for the current state, then a bookmark annotated \"k8s.io/initial-events-end\"."},
		{name: "timeoutSeconds", in: "query", typ: "integer", desc: "Timeout for the list/watch call."},
		{name: "watch", in: "query", typ: "boolean", desc: "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."},
	}
	q.delete = []param{
		q.dryRun,
		{name: "gracePeriodSeconds", in: "query", typ: "integer", desc: "The duration in seconds before the object should be deleted."},
		{name: "orphanDependents", in: "query", typ: "boolean", desc: "Deprecated: please use the PropagationPolicy."},
		{name: "propagationPolicy", in: "query", typ: "string", desc: "Whether and how garbage collection will be performed."},
	}
	return q
}

// op is one operation before encoding.
type op struct {
	method, action, id, desc string
	params                   []param
	bodyTypes                []string // request body content types; nil means no body
	bodyRef                  string   // definition of the body
	responses                map[string]string
	responseRef              string
	kind                     string
}

func (o op) encode(v3 bool, g, v string) map[string]any {
	m := map[string]any{
		"operationId":                     o.id,
		"description":                     o.desc,
		"tags":                            []string{tag(g, v)},
		"x-kubernetes-action":             o.action,
		"x-kubernetes-group-version-kind": gvk(g, v, o.kind),
	}
	params := []any{}
	for _, p := range o.params {
		params = append(params, p.encode(v3))
	}
	produces := []string{"application/json", "application/yaml"}
	if o.action == "list" || o.action == "watch" {
		produces = append(produces, "application/json;stream=watch")
	}
	responses := map[string]any{}
	for code, desc := range o.responses {
		if v3 {
			content := map[string]any{}
			for _, t := range produces {
				content[t] = map[string]any{"schema": ref(true, o.responseRef)}
			}
			responses[code] = map[string]any{"description": desc, "content": content}
		} else {
			responses[code] = map[string]any{"description": desc, "schema": ref(false, o.responseRef)}
		}
	}
	responses["401"] = map[string]any{"description": "Unauthorized"}
	m["responses"] = responses
	if o.bodyTypes != nil {
		if v3 {
			content := map[string]any{}
			for _, t := range o.bodyTypes {
				content[t] = map[string]any{"schema": ref(true, o.bodyRef)}
			}
			m["requestBody"] = map[string]any{"required": o.method != "delete", "content": content}
		} else {
			body := map[string]any{"name": "body", "in": "body", "schema": ref(false, o.bodyRef)}
			if o.method != "delete" {
				body["required"] = true
			}
			params = append([]any{body}, params...)
			m["consumes"] = o.bodyTypes
		}
	}
	if !v3 {
		m["produces"] = produces
		m["schemes"] = []string{"https"}
	}
	if len(params) > 0 {
		m["parameters"] = params
	}
	return m
}

// addResource adds r's paths and definitions.
func addResource(r Resource, v3 bool, paths, defs map[string]any) {
	qp := kubeParams()
	g, v := r.Group, r.Version
	def, listDef := DefinitionName(g, v, r.Kind), DefinitionName(g, v, r.ListKind)
	defs[def] = objectSchema(r, v3)
	defs[listDef] = listSchema(r, v3, def)

	gv := camel(g, v)
	scope, base := "", "/apis/"+g+"/"+v+"/"
	pathParams := []param{}
	if r.Namespaced {
		scope = "Namespaced"
		base += "namespaces/{namespace}/"
		pathParams = append(pathParams, param{name: "namespace", in: "path", typ: "string", required: true, desc: "object name and auth scope, such as for teams and projects"})
	}
	write := []param{qp.dryRun, qp.fieldManager}
	if r.FieldValidation {
		write = append(write, qp.fieldValidation)
	}
	ok := map[string]string{"200": "OK"}
	created := map[string]string{"200": "OK", "201": "Created", "202": "Accepted"}
	coll := map[string]any{"parameters": encodeParams(v3, append(slices.Clip(pathParams), qp.pretty))}
	coll["get"] = op{method: "get", action: "list", id: "list" + gv + scope + r.Kind, desc: "list or watch objects of kind " + r.Kind,
		params: qp.list, responses: ok, responseRef: listDef, kind: r.Kind}.encode(v3, g, v)
	coll["post"] = op{method: "post", action: "post", id: "create" + gv + scope + r.Kind, desc: "create " + article(r.Kind),
		params: write, bodyTypes: []string{"application/json", "application/yaml"}, bodyRef: def,
		responses: created, responseRef: def, kind: r.Kind}.encode(v3, g, v)
	coll["delete"] = op{method: "delete", action: "deletecollection", id: "deletecollection" + gv + scope + r.Kind, desc: "delete collection of " + r.Kind,
		params: append(append([]param{}, qp.delete...), qp.list...), bodyTypes: []string{"application/json", "application/yaml"}, bodyRef: defDeleteOptions,
		responses: ok, responseRef: defStatus, kind: r.Kind}.encode(v3, g, v)
	paths[base+r.Plural] = coll

	named := append(append([]param{}, pathParams...), param{name: "name", in: "path", typ: "string", required: true, desc: "name of the " + r.Kind}, qp.pretty)
	item := func(suffix, idSuffix string, withDelete bool) map[string]any {
		p := map[string]any{"parameters": encodeParams(v3, named)}
		p["get"] = op{method: "get", action: "get", id: "read" + gv + scope + r.Kind + idSuffix, desc: "read the specified " + r.Kind,
			responses: ok, responseRef: def, kind: r.Kind}.encode(v3, g, v)
		p["put"] = op{method: "put", action: "put", id: "replace" + gv + scope + r.Kind + idSuffix, desc: "replace the specified " + r.Kind,
			params: write, bodyTypes: []string{"application/json", "application/yaml"}, bodyRef: def,
			responses: map[string]string{"200": "OK", "201": "Created"}, responseRef: def, kind: r.Kind}.encode(v3, g, v)
		if len(r.PatchTypes) > 0 {
			p["patch"] = op{method: "patch", action: "patch", id: "patch" + gv + scope + r.Kind + idSuffix, desc: "partially update the specified " + r.Kind,
				params: append(append([]param{}, write...), qp.force), bodyTypes: r.PatchTypes, bodyRef: defPatch,
				responses: map[string]string{"200": "OK", "201": "Created"}, responseRef: def, kind: r.Kind}.encode(v3, g, v)
		}
		if withDelete {
			p["delete"] = op{method: "delete", action: "delete", id: "delete" + gv + scope + r.Kind, desc: "delete " + article(r.Kind),
				params: qp.delete, bodyTypes: []string{"application/json", "application/yaml"}, bodyRef: defDeleteOptions,
				responses: map[string]string{"200": "OK", "202": "Accepted"}, responseRef: def, kind: r.Kind}.encode(v3, g, v)
		}
		return p
	}
	paths[base+r.Plural+"/{name}"] = item("", "", true)
	for _, sub := range r.Subresources {
		paths[base+r.Plural+"/{name}/"+sub] = item(sub, strings.ToUpper(sub[:1])+sub[1:], false)
	}
	if r.Namespaced {
		all := map[string]any{"parameters": encodeParams(v3, []param{qp.pretty})}
		all["get"] = op{method: "get", action: "list", id: "list" + gv + r.Kind + "ForAllNamespaces", desc: "list or watch objects of kind " + r.Kind,
			params: qp.list, responses: ok, responseRef: listDef, kind: r.Kind}.encode(v3, g, v)
		paths["/apis/"+g+"/"+v+"/"+r.Plural] = all
	}
}

func encodeParams(v3 bool, ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.encode(v3))
	}
	return out
}

func article(kind string) string {
	if strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// Descriptions of the type fields, as k8s words them.
const (
	descAPIVersion = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	descKind       = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
	descMetadata   = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
	descListMeta   = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

// objectSchema is the definition of r's kind: its schema with apiVersion,
// kind and metadata.
func objectSchema(r Resource, v3 bool) map[string]any {
	var s map[string]any
	if r.Schema != nil {
		s = toMap(r.Schema, v3)
	} else {
		s = map[string]any{"type": "object"}
		if v3 {
			s["x-kubernetes-preserve-unknown-fields"] = true
		}
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	props["apiVersion"] = map[string]any{"type": "string", "description": descAPIVersion}
	props["kind"] = map[string]any{"type": "string", "description": descKind}
	if v3 {
		props["metadata"] = map[string]any{"allOf": []any{ref(true, defObjectMeta)}, "default": map[string]any{}, "description": descMetadata}
	} else {
		props["metadata"] = ref(false, defObjectMeta)
	}
	s["properties"] = props
	s["type"] = "object"
	s["x-kubernetes-group-version-kind"] = []any{gvk(r.Group, r.Version, r.Kind)}
	return s
}

func listSchema(r Resource, v3 bool, itemDef string) map[string]any {
	md := ref(v3, defListMeta)
	if v3 {
		md = map[string]any{"allOf": []any{md}, "default": map[string]any{}, "description": descListMeta}
	}
	return map[string]any{
		"type":        "object",
		"description": r.ListKind + " is a list of " + r.Kind,
		"required":    []string{"items"},
		"properties": map[string]any{
			"apiVersion": map[string]any{"type": "string", "description": descAPIVersion},
			"kind":       map[string]any{"type": "string", "description": descKind},
			"metadata":   md,
			"items":      map[string]any{"type": "array", "description": "List of " + strings.ToLower(r.Kind) + "s.", "items": ref(v3, itemDef)},
		},
		"x-kubernetes-group-version-kind": []any{gvk(r.Group, r.Version, r.ListKind)},
	}
}

// toMap turns a schema into generic JSON; for v2 it drops what Swagger 2.0
// cannot say, as kube-apiserver publishes CRD schemas in v2: nullable,
// oneOf/anyOf/not, CEL rules; int-or-string becomes format int-or-string with
// no type; a node that keeps unknown fields loses its type and properties so
// that client-side validation accepts them.
func toMap(p *schema.Props, v3 bool) map[string]any {
	b, err := json.Marshal(p)
	if err != nil {
		return map[string]any{"type": "object"}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]any{"type": "object"}
	}
	delete(m, "id")
	if props, ok := m["properties"].(map[string]any); ok {
		delete(props, "metadata")
		delete(props, "apiVersion")
		delete(props, "kind")
	}
	if !v3 {
		stripV2(m, true)
	}
	return m
}

func stripV2(m map[string]any, top bool) {
	for _, k := range []string{"nullable", "oneOf", "anyOf", "not", "allOf", "x-kubernetes-validations", "uniqueItems"} {
		delete(m, k)
	}
	if m["x-kubernetes-int-or-string"] == true {
		delete(m, "type")
		m["format"] = "int-or-string"
	}
	if m["x-kubernetes-preserve-unknown-fields"] == true && !top {
		delete(m, "type")
		delete(m, "properties")
		delete(m, "items")
		delete(m, "additionalProperties")
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, c := range props {
			if cm, ok := c.(map[string]any); ok {
				stripV2(cm, false)
			}
		}
	}
	if it, ok := m["items"].(map[string]any); ok {
		stripV2(it, false)
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		stripV2(ap, false)
	}
}

// tag is an operation's tag, as k8s spells it: "platformExampleCom_v1alpha1".
func tag(group, version string) string {
	c := camel(group, "")
	if c == "" {
		return version
	}
	return strings.ToLower(c[:1]) + c[1:] + "_" + version
}
