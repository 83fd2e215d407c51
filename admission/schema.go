// This file holds the schema step: a resource's structural schema compiled
// once into a JSON-schema validator (santhosh-tekuri/jsonschema/v5) plus a
// walk for what JSON schema cannot say (list types, embedded resources,
// x-kubernetes-validations CEL rules), with errors worded exactly as the
// kube-apiserver words them for custom resources.

package admission

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
	"github.com/annexapi/annex/schema"
)

// SchemaOptions tunes schema validation. The zero value is Kubernetes'.
type SchemaOptions struct {
	// PerCallLimit is the CEL cost one rule may spend per evaluation; zero
	// means PerCallLimit (1,000,000).
	PerCallLimit uint64
	// RuntimeBudget is the CEL cost all rules of one object may spend; zero
	// means RuntimeCELCostBudget (10,000,000).
	RuntimeBudget int64
}

// SchemaValidator validates objects against one structural schema. It is
// immutable after NewSchemaValidator and safe for concurrent use.
type SchemaValidator struct {
	gk     meta.GroupKind
	js     *jsonschema.Schema
	status *jsonschema.Schema // of the status alone, when declared
	root   *node
	budget int64
	// hasRules is whether any node has x-kubernetes-validations: only then
	// does a blocking error add RulesNotChecked, as kube's CEL validator is
	// nil without rules.
	hasRules bool
}

// node mirrors a schema node with what the walk needs, compiled.
type node struct {
	p          *schema.Props
	props      map[string]*node
	items      *node
	additional *node
	rules      []*celRule
	work       bool // rules, list types, formats or embedded resources here or below
}

type celRule struct {
	rule      schema.ValidationRule
	prog      *compiled
	msg       *compiled
	usesOld   bool
	fieldPath string
}

// NewSchemaValidator compiles p (the schema of a whole object of kind gk)
// and its CEL rules.
func NewSchemaValidator(p *schema.Props, gk meta.GroupKind, opts SchemaOptions) (*SchemaValidator, error) {
	js, err := compileJSONSchema(toJSONSchema(p, true))
	if err != nil {
		return nil, err
	}
	var status *jsonschema.Schema
	if sp, ok := p.Properties["status"]; ok {
		if status, err = compileJSONSchema(toJSONSchema(&sp, false)); err != nil {
			return nil, err
		}
	}
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	envOpts := append([]cel.EnvOption{cel.CustomTypeProvider(reg), cel.CustomTypeAdapter(jsonAdapter{reg})}, celBaseOptions()...)
	env, err := cel.NewEnv(append(envOpts, cel.Variable("self", cel.DynType), cel.Variable("oldSelf", cel.DynType))...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	perCall := opts.PerCallLimit
	if perCall == 0 {
		perCall = PerCallLimit
	}
	root, err := compileNode(env, p, perCall, "")
	if err != nil {
		return nil, err
	}
	budget := opts.RuntimeBudget
	if budget == 0 {
		budget = RuntimeCELCostBudget
	}
	return &SchemaValidator{gk: gk, js: js, status: status, root: root, budget: budget, hasRules: hasRules(root)}, nil
}

// compileJSONSchema compiles a JSON schema document (toJSONSchema's).
func compileJSONSchema(doc any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft7
	c.AssertFormat = true
	if err := c.AddResource("schema.json", bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	js, err := c.Compile("schema.json")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return js, nil
}

func hasRules(n *node) bool {
	if n == nil {
		return false
	}
	if len(n.rules) > 0 || hasRules(n.items) || hasRules(n.additional) {
		return true
	}
	for _, c := range n.props {
		if hasRules(c) {
			return true
		}
	}
	return false
}

func compileNode(env *cel.Env, p *schema.Props, perCall uint64, path string) (*node, error) {
	if p == nil {
		return nil, nil
	}
	n := &node{p: p}
	for i, r := range p.XValidations {
		prog, err := compileExpr(env, r.Rule, cel.BoolType, perCall)
		if err != nil {
			return nil, fmt.Errorf("%w: %s x-kubernetes-validations[%d].rule: %v", ErrInvalidSchema, pathOrRoot(path), i, err)
		}
		cr := &celRule{rule: r, prog: prog, usesOld: prog.references("oldSelf"), fieldPath: strings.TrimPrefix(r.FieldPath, ".")}
		if r.MessageExpression != "" {
			if cr.msg, err = compileExpr(env, r.MessageExpression, cel.StringType, perCall); err != nil {
				return nil, fmt.Errorf("%w: %s x-kubernetes-validations[%d].messageExpression: %v", ErrInvalidSchema, pathOrRoot(path), i, err)
			}
		}
		n.rules = append(n.rules, cr)
	}
	n.work = len(n.rules) > 0 || p.XEmbeddedResource || (p.XListType != nil && *p.XListType != "atomic") || localFormat(p.Format)
	for k := range p.Properties {
		pp := p.Properties[k]
		c, err := compileNode(env, &pp, perCall, joinPath(path, k))
		if err != nil {
			return nil, err
		}
		if n.props == nil {
			n.props = map[string]*node{}
		}
		n.props[k] = c
		n.work = n.work || c.work
	}
	if p.Items != nil {
		c, err := compileNode(env, p.Items, perCall, path+"[*]")
		if err != nil {
			return nil, err
		}
		n.items = c
		n.work = n.work || c.work
	}
	if p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil {
		c, err := compileNode(env, p.AdditionalProperties.Schema, perCall, joinPath(path, "*"))
		if err != nil {
			return nil, err
		}
		n.additional = c
		n.work = n.work || c.work
	}
	return n, nil
}

func pathOrRoot(p string) string {
	if p == "" {
		return "<root>"
	}
	return p
}

func joinPath(base, child string) string {
	if base == "" {
		return child
	}
	return base + "." + child
}

// Formats kube validates that JSON schema (as compiled here) does not.
func localFormat(f string) bool { return f == "byte" || f == "cidr" || f == "mac" }

// Formats handed to the JSON-schema engine, with kube's names.
var _ = 0 // (no package-level state; see jsonFormat)

func jsonFormat(f string) string {
	switch f {
	case "date-time", "datetime":
		return "date-time"
	case "date", "email", "hostname", "ipv4", "ipv6", "uuid", "uri":
		return f
	}
	return ""
}

// toJSONSchema translates Props into a draft-7 document. The root's metadata
// is left out (ObjectMeta is validated elsewhere), as kube does.
func toJSONSchema(p *schema.Props, root bool) map[string]any {
	d := map[string]any{}
	switch {
	case p.XIntOrString:
		d["type"] = []any{"integer", "string"}
	case p.Type != "" && p.Nullable:
		d["type"] = []any{p.Type, "null"}
	case p.Type != "":
		d["type"] = p.Type
	}
	if f := jsonFormat(p.Format); f != "" {
		d["format"] = f
	}
	if p.Maximum != nil {
		if p.ExclusiveMaximum {
			d["exclusiveMaximum"] = *p.Maximum
		} else {
			d["maximum"] = *p.Maximum
		}
	}
	if p.Minimum != nil {
		if p.ExclusiveMinimum {
			d["exclusiveMinimum"] = *p.Minimum
		} else {
			d["minimum"] = *p.Minimum
		}
	}
	setInt := func(k string, v *int64) {
		if v != nil {
			d[k] = *v
		}
	}
	setInt("maxLength", p.MaxLength)
	setInt("minLength", p.MinLength)
	setInt("maxItems", p.MaxItems)
	setInt("minItems", p.MinItems)
	setInt("maxProperties", p.MaxProperties)
	setInt("minProperties", p.MinProperties)
	if p.Pattern != "" {
		d["pattern"] = p.Pattern
	}
	if p.MultipleOf != nil {
		d["multipleOf"] = *p.MultipleOf
	}
	if p.UniqueItems {
		d["uniqueItems"] = true
	}
	if len(p.Enum) > 0 {
		enum := make([]any, 0, len(p.Enum)+1)
		for _, e := range p.Enum {
			enum = append(enum, json.RawMessage(e))
		}
		if p.Nullable {
			enum = append(enum, nil)
		}
		d["enum"] = enum
	}
	if len(p.Required) > 0 {
		d["required"] = p.Required
	}
	if len(p.Properties) > 0 {
		props := map[string]any{}
		for k := range p.Properties {
			if root && k == "metadata" {
				continue
			}
			pp := p.Properties[k]
			props[k] = toJSONSchema(&pp, false)
		}
		d["properties"] = props
	}
	if p.Items != nil {
		d["items"] = toJSONSchema(p.Items, false)
	}
	if p.AdditionalProperties != nil {
		if p.AdditionalProperties.Schema != nil {
			d["additionalProperties"] = toJSONSchema(p.AdditionalProperties.Schema, false)
		} else {
			d["additionalProperties"] = p.AdditionalProperties.Allows
		}
	}
	for k, list := range map[string][]schema.Props{"allOf": p.AllOf, "anyOf": p.AnyOf, "oneOf": p.OneOf} {
		if len(list) == 0 {
			continue
		}
		out := make([]any, len(list))
		for i := range list {
			out[i] = toJSONSchema(&list[i], false)
		}
		d[k] = out
	}
	if p.Not != nil {
		d["not"] = toJSONSchema(p.Not, false)
	}
	return d
}

// Validate checks obj (old is the stored object on update, else nil) and
// returns a 422 Invalid *meta.Status naming the object, with one cause per
// field error, or nil.
func (v *SchemaValidator) Validate(ctx context.Context, obj, old map[string]any, name string) error {
	causes := v.Causes(ctx, obj, old)
	if len(causes) == 0 {
		return nil
	}
	return meta.NewInvalid(v.gk, name, causes)
}

// Causes is Validate's field errors, without the Status around them.
func (v *SchemaValidator) Causes(ctx context.Context, obj, old map[string]any) []meta.StatusCause {
	return v.check(ctx, obj, old, false, nil)
}

// check is kube's custom resource validation after ObjectMeta: the schema
// (of the whole object, or of its status alone for the status
// subresource, whose causes are named from status but worded relative to
// it), then embedded resources and list types, then the
// x-kubernetes-validations rules of the whole object, which do not run when
// a cause of prior (ObjectMeta's, the scale paths') or of the schema is
// Blocking: RulesNotChecked stands in for them.
func (v *SchemaValidator) check(ctx context.Context, obj, old map[string]any, status bool, prior []meta.StatusCause) []meta.StatusCause {
	var causes []meta.StatusCause
	if status {
		if st, ok := obj["status"].(map[string]any); ok && v.status != nil {
			causes = v.statusSchema(st)
		}
	} else {
		causes = v.schemaCauses(v.js, v.root.p, obj)
	}
	if old != nil {
		causes = ratchet(causes, obj, old)
	}
	blocked := Blocking(prior) || Blocking(causes)
	if len(causes) > 0 && causes[0].Message != "" && strings.HasSuffix(causes[0].Message, outOfRangeMsg) {
		return causes // numbers no decoder reads: nothing else can run
	}
	if v.root.work {
		budget := v.budget
		w := walker{ctx: ctx, budget: &budget, noRules: blocked}
		var c *correlation
		if old != nil {
			c = &correlation{v: obj, old: old, ok: true}
		}
		w.walk(v.root, obj, old, old != nil, "", true, c)
		causes = append(causes, w.causes...)
	}
	if blocked && v.hasRules {
		causes = append(causes, RulesNotChecked())
	}
	return causes
}

// ratchet drops the schema errors of an update that the stored object
// already had (kube's CRD validation ratcheting): an error stays only where
// the value it is about (the object holding a missing required field)
// changed. Values are correlated through objects by key; a list is
// compared whole.
func ratchet(causes []meta.StatusCause, obj, old map[string]any) []meta.StatusCause {
	out := causes[:0]
	for _, c := range causes {
		path := c.Field
		if c.Type == meta.CauseTypeFieldValueRequired {
			if i := strings.LastIndexAny(path, ".["); i >= 0 {
				path = path[:i]
			} else {
				path = ""
			}
		}
		nv, nok := correlated(obj, path)
		ov, ook := correlated(old, path)
		if nok && ook && reflect.DeepEqual(nv, ov) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// correlated is the value at a field path ("spec.a.b[2].c") of v, or the
// first list on the way.
func correlated(v any, path string) (any, bool) {
	for path != "" {
		i := strings.IndexAny(path, ".[")
		key := path
		if i >= 0 {
			key, path = path[:i], strings.TrimPrefix(path[i:], ".")
		} else {
			path = ""
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
		if _, isList := v.([]any); isList || strings.HasPrefix(path, "[") {
			return v, true
		}
	}
	return v, true
}

// schemaCauses runs the JSON schema js (of node p) on obj.
func (v *SchemaValidator) schemaCauses(js *jsonschema.Schema, p *schema.Props, obj map[string]any) []meta.StatusCause {
	causes, err := validateJSON(js, obj, js == v.js)
	if causes != nil || err == nil {
		return causes
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		causes = jsonSchemaCauses(ve, obj, p, nil)
		// The engine visits properties in map order; sort for a stable message.
		sort.SliceStable(causes, func(i, j int) bool { return causes[i].Field < causes[j].Field })
		return causes
	}
	return []meta.StatusCause{invalidCause("", "", err.Error())}
}

// statusSchema validates a status against the status schema alone, as
// kube's status strategy does: a cause's field is under status, its
// message relative to it ("replicas in body ...").
func (v *SchemaValidator) statusSchema(st map[string]any) []meta.StatusCause {
	sp := v.root.p.Properties["status"]
	causes := v.schemaCauses(v.status, &sp, st)
	for i := range causes {
		causes[i].Field = joinPath("status", causes[i].Field)
	}
	return causes
}

// Blocking reports whether causes hold an error that keeps the
// x-kubernetes-validations rules from running (kube's hasBlockingErr): a
// wrong type, a missing required field, a value not in the enum, a string
// or list too long.
func Blocking(causes []meta.StatusCause) bool {
	for _, c := range causes {
		switch c.Type {
		case meta.CauseTypeTypeInvalid, meta.CauseTypeFieldValueRequired, meta.CauseTypeFieldValueNotSupported,
			meta.CauseTypeFieldValueTooLong, meta.CauseTypeFieldValueTooMany:
			return true
		}
	}
	return false
}

// RulesNotChecked is the cause kube adds in place of the rules' own when
// Blocking.
func RulesNotChecked() meta.StatusCause {
	return meta.StatusCause{Type: meta.CauseTypeFieldValueInvalid, Field: "<nil>",
		Message: `Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`}
}

// validateJSON runs the JSON Schema engine js on obj. The engine panics on a
// json.Number that math/big cannot read (beyond about 1e10000000) where
// the schema wants an integer: no decoder of the server makes one (rest
// refuses numbers outside float64's range, as kube's decoder does), but a
// caller of Causes may; each number outside float64's range is then a
// cause of its own.
func validateJSON(js *jsonschema.Schema, obj map[string]any, root bool) (causes []meta.StatusCause, err error) {
	defer func() {
		if p := recover(); p != nil {
			if causes = outOfRange(obj, "", nil); causes == nil {
				panic(p)
			}
		}
	}()
	if !root { // a status: its own "metadata" field, if any, is data
		return nil, js.Validate(obj)
	}
	return nil, js.Validate(stripMetadata(obj))
}

const outOfRangeMsg = "must be a number within the range of a 64-bit float"

// outOfRange appends to causes one for each json.Number under v (at path)
// that does not fit a float64.
func outOfRange(v any, path string, causes []meta.StatusCause) []meta.StatusCause {
	switch v := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			causes = append(causes, invalidCause(path, string(v), outOfRangeMsg))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			causes = outOfRange(v[k], p, causes)
		}
	case []any:
		for i, e := range v {
			causes = outOfRange(e, path+"["+strconv.Itoa(i)+"]", causes)
		}
	}
	return causes
}

func stripMetadata(obj map[string]any) any {
	if _, ok := obj["metadata"]; !ok {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, e := range obj {
		if k != "metadata" {
			out[k] = e
		}
	}
	return out
}

// jsonSchemaCauses turns the leaves of a jsonschema error tree into kube's
// field errors. seen dedupes (the same failure can surface twice).
func jsonSchemaCauses(ve *jsonschema.ValidationError, obj any, root *schema.Props, seen map[string]bool) []meta.StatusCause {
	if seen == nil {
		seen = map[string]bool{}
	}
	kw := ve.KeywordLocation
	last := kw[strings.LastIndex(kw, "/")+1:]
	if len(ve.Causes) > 0 && last != "anyOf" && last != "oneOf" && last != "not" {
		var out []meta.StatusCause
		for _, c := range ve.Causes {
			out = append(out, jsonSchemaCauses(c, obj, root, seen)...)
		}
		return out
	}
	path, val, ok := resolveInstance(obj, ve.InstanceLocation)
	if !ok {
		return nil
	}
	p := resolveKeyword(root, kw)
	if p == nil {
		p = &schema.Props{}
	}
	body := pathOrRoot(path) + " in body"
	var c meta.StatusCause
	switch last {
	case "required":
		var out []meta.StatusCause
		m, _ := val.(map[string]any)
		for _, r := range p.Required {
			if _, ok := m[r]; !ok {
				out = append(out, meta.StatusCause{Type: meta.CauseTypeFieldValueRequired, Field: joinPath(path, r), Message: "Required value"})
			}
		}
		return dedupe(out, seen)
	case "enum":
		return dedupe([]meta.StatusCause{notSupported(path, val, p)}, seen)
	case "type", "anyOf":
		if last == "anyOf" && !p.XIntOrString {
			c = invalidCause(path, badValue(val), body+" must validate at least one schema (anyOf)")
			break
		}
		want := p.Type
		if p.XIntOrString {
			want = "integer,string"
		}
		actual := jsonTypeName(val)
		out := []meta.StatusCause{{Type: meta.CauseTypeTypeInvalid, Field: path,
			Message: fmt.Sprintf("Invalid value: %q: %s must be of type %s: %q", actual, body, want, actual)}}
		// kube's validator checks the enum of a mistyped value too.
		if len(p.Enum) > 0 && !inEnum(val, p.Enum) {
			out = append(out, notSupported(path, val, p))
		}
		return dedupe(out, seen)
	case "format":
		c = invalidCause(path, badValue(val), fmt.Sprintf("%s must be of type %s: %q", body, p.Format, fmt.Sprint(val)))
	case "maxLength":
		c = meta.StatusCause{Type: meta.CauseTypeFieldValueTooLong, Field: path, Message: fmt.Sprintf("Too long: may not be more than %d bytes", deref(p.MaxLength))}
	case "maxItems":
		l, _ := val.([]any)
		c = meta.StatusCause{Type: meta.CauseTypeFieldValueTooMany, Field: path, Message: fmt.Sprintf("Too many: %d: must have at most %d items", len(l), deref(p.MaxItems))}
	case "maxProperties":
		m, _ := val.(map[string]any)
		c = meta.StatusCause{Type: meta.CauseTypeFieldValueTooMany, Field: path, Message: fmt.Sprintf("Too many: %d: must have at most %d items", len(m), deref(p.MaxProperties))}
	case "minimum", "exclusiveMinimum":
		op := "greater than or equal to"
		if p.ExclusiveMinimum {
			op = "greater than"
		}
		c = invalidCause(path, badValue(val), fmt.Sprintf("%s should be %s %v", body, op, derefF(p.Minimum)))
	case "maximum", "exclusiveMaximum":
		op := "less than or equal to"
		if p.ExclusiveMaximum {
			op = "less than"
		}
		c = invalidCause(path, badValue(val), fmt.Sprintf("%s should be %s %v", body, op, derefF(p.Maximum)))
	case "minLength":
		c = invalidCause(path, badValue(val), fmt.Sprintf("%s should be at least %d chars long", body, deref(p.MinLength)))
	case "pattern":
		c = invalidCause(path, badValue(val), fmt.Sprintf("%s should match '%s'", body, p.Pattern))
	case "minItems":
		l, _ := val.([]any) // kube's TooFewItems carries the length as the value
		c = invalidCause(path, strconv.Itoa(len(l)), fmt.Sprintf("%s should have at least %d items", body, deref(p.MinItems)))
	case "minProperties":
		c = invalidCause(path, badValue(val), fmt.Sprintf("%s should have at least %d properties", body, deref(p.MinProperties)))
	case "multipleOf":
		c = invalidCause(path, badValue(val), fmt.Sprintf("%s should be a multiple of %v", body, derefF(p.MultipleOf)))
	case "uniqueItems":
		c = invalidCause(path, badValue(val), body+" shouldn't contain duplicates")
	case "oneOf":
		c = invalidCause(path, badValue(val), body+" must validate one and only one schema (oneOf)")
	case "not":
		c = invalidCause(path, badValue(val), body+" must not validate the schema (not)")
	case "additionalProperties", "false":
		c = meta.StatusCause{Type: meta.CauseTypeFieldValueForbidden, Field: path, Message: "Forbidden: " + body + " is a forbidden property"}
	default:
		c = invalidCause(path, badValue(val), ve.Message)
	}
	return dedupe([]meta.StatusCause{c}, seen)
}

// notSupported is kube's enum error: the value and the supported values,
// strings unquoted in the list and anything else as its JSON.
func notSupported(path string, val any, p *schema.Props) meta.StatusCause {
	quoted := make([]string, 0, len(p.Enum))
	for _, e := range p.Enum {
		var x any
		_ = json.Unmarshal(e, &x)
		if s, ok := x.(string); ok {
			quoted = append(quoted, strconv.Quote(s))
		} else {
			quoted = append(quoted, strconv.Quote(string(e)))
		}
	}
	msg := "Unsupported value: " + badValue(val)
	if len(quoted) > 0 {
		msg += ": supported values: " + strings.Join(quoted, ", ")
	}
	return meta.StatusCause{Type: meta.CauseTypeFieldValueNotSupported, Field: path, Message: msg}
}

// inEnum reports whether val is one of enum's values.
func inEnum(val any, enum []json.RawMessage) bool {
	for _, e := range enum {
		var x any
		d := json.NewDecoder(bytes.NewReader(e))
		d.UseNumber()
		if d.Decode(&x) == nil && reflect.DeepEqual(celValue(x), celValue(val)) {
			return true
		}
	}
	return false
}

func dedupe(cs []meta.StatusCause, seen map[string]bool) []meta.StatusCause {
	out := cs[:0]
	for _, c := range cs {
		k := c.Field + "\x00" + c.Message
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func derefF(p *float64) any {
	if p == nil {
		return 0
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

// invalidCause is field.Invalid: `Invalid value: <v>: detail`.
func invalidCause(field, value, detail string) meta.StatusCause {
	msg := "Invalid value: " + value
	if value == "" {
		msg = `Invalid value: ""`
	}
	if detail != "" {
		msg += ": " + detail
	}
	return meta.StatusCause{Type: meta.CauseTypeFieldValueInvalid, Field: field, Message: msg}
}

// badValue prints a value as field.Error does: strings quoted, numbers and
// bools plain, "null" for nil, anything else with %#v.
func badValue(v any) string {
	switch t := v.(type) {
	case nil:
		return `"null"`
	case string:
		return strconv.Quote(t)
	case json.Number:
		return t.String()
	case int64, int, float64, bool:
		return fmt.Sprint(t)
	}
	return fmt.Sprintf("%#v", v)
}

func jsonTypeName(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := t.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case int64, int:
		return "integer"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// resolveInstance follows a JSON pointer into obj and renders it as a kube
// field path (spec.items[0].name).
func resolveInstance(obj any, ptr string) (string, any, bool) {
	if ptr == "" || ptr == "/" {
		return "", obj, true
	}
	var path strings.Builder
	cur := obj
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			if path.Len() > 0 {
				path.WriteByte('.')
			}
			path.WriteString(seg)
			cur = t[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return "", nil, false
			}
			fmt.Fprintf(&path, "[%d]", i)
			cur = t[i]
		default:
			return "", nil, false
		}
	}
	return path.String(), cur, true
}

// resolveKeyword finds the schema node a keyword location points into (the
// node holding the failing keyword).
func resolveKeyword(root *schema.Props, kw string) *schema.Props {
	segs := strings.Split(strings.TrimPrefix(kw, "/"), "/")
	if len(segs) > 0 {
		segs = segs[:len(segs)-1] // the keyword itself
	}
	cur := root
	for i := 0; i < len(segs) && cur != nil; i++ {
		switch segs[i] {
		case "properties":
			if i+1 >= len(segs) {
				return cur
			}
			i++
			p, ok := cur.Properties[segs[i]]
			if !ok {
				return nil
			}
			cur = &p
		case "items":
			cur = cur.Items
		case "additionalProperties":
			if cur.AdditionalProperties == nil {
				return nil
			}
			cur = cur.AdditionalProperties.Schema
		case "allOf", "anyOf", "oneOf":
			list := map[string][]schema.Props{"allOf": cur.AllOf, "anyOf": cur.AnyOf, "oneOf": cur.OneOf}[segs[i]]
			if i+1 >= len(segs) {
				return cur
			}
			i++
			n, err := strconv.Atoi(segs[i])
			if err != nil || n >= len(list) {
				return nil
			}
			cur = &list[n]
		case "not":
			cur = cur.Not
		}
	}
	return cur
}

// walker runs what JSON schema cannot: CEL rules (with oldSelf where the
// old value correlates), list-type uniqueness, embedded resources, and kube's
// byte/cidr/mac formats.
type walker struct {
	ctx     context.Context
	budget  *int64
	causes  []meta.StatusCause
	out     bool // budget exhausted: stop
	noRules bool // a blocking error: the CEL rules do not run
}

func (w *walker) add(c meta.StatusCause) { w.causes = append(w.causes, c) }

// correlation is kube's CorrelatedObject for validation ratcheting (GA in
// 1.33): a value of an update and the old value it correlates with (through
// objects by key, map lists by their keys, set lists by value; an atomic
// list's items correlate with nothing), or, when it correlates with none,
// its nearest ancestor that does. A rule that does not read oldSelf and
// fails on a value left as it was (its own, or its nearest correlated
// ancestor's, deeply equal) is a warning, not an error.
type correlation struct {
	v, old any
	ok     bool         // v correlates with old
	parent *correlation // the nearest ancestor, for one that does not
	eq     int8         // 0 not compared yet, 1 equal, 2 different
}

// unchanged reports whether the nearest correlated value is as it was.
func (c *correlation) unchanged() bool {
	for ; c != nil; c = c.parent {
		if !c.ok {
			continue
		}
		if c.eq == 0 {
			c.eq = 2
			if reflect.DeepEqual(c.v, c.old) {
				c.eq = 1
			}
		}
		return c.eq == 1
	}
	return false
}

// child is the correlation of a value under c: correlated with old when ok.
func (c *correlation) child(v, old any, ok bool) *correlation {
	if c == nil {
		return nil
	}
	parent := c
	if !c.ok {
		parent = c.parent
	}
	return &correlation{v: v, old: old, ok: ok, parent: parent}
}

func (w *walker) walk(n *node, v, old any, hasOld bool, path string, root bool, c *correlation) {
	if n == nil || !n.work || w.out || v == nil {
		return
	}
	p := n.p
	if s, ok := v.(string); ok && localFormat(p.Format) && !validLocalFormat(p.Format, s) {
		w.add(invalidCause(path, badValue(v), fmt.Sprintf("%s in body must be of type %s: %q", pathOrRoot(path), p.Format, s)))
	}
	if p.XEmbeddedResource {
		if m, ok := v.(map[string]any); ok {
			for _, k := range []string{"apiVersion", "kind"} {
				if s, _ := m[k].(string); s == "" {
					w.add(meta.StatusCause{Type: meta.CauseTypeFieldValueRequired, Field: joinPath(path, k), Message: "Required value: must not be empty"})
				}
			}
		}
	}
	if len(n.rules) > 0 && !w.noRules {
		w.rules(n, v, old, hasOld, path, root, c)
		if w.out {
			return
		}
	}
	switch t := v.(type) {
	case map[string]any:
		om, _ := old.(map[string]any)
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := n.props[k]
			if child == nil {
				child = n.additional
			}
			if child == nil || (root && k == "metadata") {
				continue
			}
			ov, ok := om[k]
			var kc *correlation
			switch {
			case c == nil:
			case root && (k == "apiVersion" || k == "kind"):
				kc = &correlation{} // not visible to compare: never ratcheted
			default:
				_, inOld := omap(c.old)[k]
				kc = c.child(t[k], omap(c.old)[k], c.ok && inOld)
			}
			w.walk(child, t[k], ov, hasOld && ok, joinPath(path, k), false, kc)
		}
	case []any:
		lt := ""
		if p.XListType != nil {
			lt = *p.XListType
		}
		ol, _ := old.([]any)
		switch lt {
		case "set":
			for i := range t {
				for j := 0; j < i; j++ {
					if reflect.DeepEqual(celValue(t[i]), celValue(t[j])) {
						w.add(meta.StatusCause{Type: meta.CauseTypeFieldValueDuplicate, Field: fmt.Sprintf("%s[%d]", path, i), Message: "Duplicate value: " + badValue(t[i])})
						break
					}
				}
			}
		case "map":
			seen := map[string]bool{}
			for i, e := range t {
				k := mapKey(e, p.XListMapKeys)
				if seen[k] {
					w.add(meta.StatusCause{Type: meta.CauseTypeFieldValueDuplicate, Field: fmt.Sprintf("%s[%d]", path, i), Message: "Duplicate value: " + badValue(keyFields(e, p.XListMapKeys))})
				}
				seen[k] = true
			}
		}
		var oldByKey map[string]any
		if lt == "map" && hasOld {
			oldByKey = map[string]any{}
			for _, e := range ol {
				oldByKey[mapKey(e, p.XListMapKeys)] = e
			}
		}
		for i, e := range t {
			var ov any
			ok := false
			if oldByKey != nil {
				ov, ok = oldByKey[mapKey(e, p.XListMapKeys)]
			}
			var ic *correlation
			if c != nil {
				cv, cok := ov, ok && c.ok
				if lt == "set" && c.ok { // a set's items correlate by value
					cv, cok = nil, false
					for _, o := range omapList(c.old) {
						if reflect.DeepEqual(o, e) {
							cv, cok = o, true
							break
						}
					}
				}
				ic = c.child(e, cv, cok)
			}
			w.walk(n.items, e, ov, ok, fmt.Sprintf("%s[%d]", path, i), false, ic)
		}
	}
}

func omap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func omapList(v any) []any {
	l, _ := v.([]any)
	return l
}

func keyFields(e any, keys []string) map[string]any {
	m, _ := e.(map[string]any)
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func mapKey(e any, keys []string) string {
	b, _ := json.Marshal(celValue(keyFields(e, keys)))
	return string(b)
}

func validLocalFormat(f, s string) bool {
	switch f {
	case "byte":
		_, err := base64.StdEncoding.DecodeString(s)
		return err == nil
	case "cidr":
		_, _, err := net.ParseCIDR(s)
		return err == nil
	case "mac":
		_, err := net.ParseMAC(s)
		return err == nil
	}
	return true
}

func (w *walker) rules(n *node, v, old any, hasOld bool, path string, root bool, c *correlation) {
	typ := n.p.Type
	if typ == "" {
		typ = jsonTypeName(v)
	}
	// The environment's jsonAdapter reads the decoded values in place.
	self := v
	var oldSelf any
	if hasOld {
		oldSelf = old
	}
	for _, r := range n.rules {
		optionalOld := r.rule.OptionalOldSelf != nil && *r.rule.OptionalOldSelf
		if r.usesOld && !hasOld && !optionalOld {
			continue // transition rules only run when the old value correlates
		}
		act := map[string]any{"self": self}
		if r.usesOld {
			if hasOld {
				act["oldSelf"] = oldSelf
			} else {
				act["oldSelf"] = nil
			}
		}
		fp := path
		if r.fieldPath != "" {
			fp = joinPath(path, r.fieldPath)
		}
		val, err := r.prog.eval(w.ctx, act, w.budget)
		if errors.Is(err, errOutOfBudget) {
			w.add(invalidCause(fp, strconv.Quote(typ), errOutOfBudget.Error()))
			w.out = true
			return
		}
		if err != nil {
			w.add(invalidCause(fp, strconv.Quote(typ), fmt.Sprintf("rule evaluation error: %v", err)))
			continue
		}
		if val == types.True {
			continue
		}
		// Ratcheting: what the failed rule says, on a value the update
		// left as it was, is only a warning.
		add := w.add
		if !r.usesOld && c.unchanged() {
			add = func(cause meta.StatusCause) { filters.AddWarning(w.ctx, cause.Field+": "+cause.Message) }
		}
		msg := r.rule.Message
		if msg == "" {
			msg = "failed rule: " + ruleErrorString(r.rule.Rule)
		}
		if r.msg != nil {
			mv, err := r.msg.eval(w.ctx, act, w.budget)
			if errors.Is(err, errOutOfBudget) {
				w.add(invalidCause(fp, strconv.Quote(typ), errOutOfBudget.Error()))
				w.out = true
				return
			}
			if err == nil {
				if s, ok := mv.Value().(string); ok {
					s = strings.TrimSpace(s)
					switch {
					case s == "":
						add(invalidCause(fp, strconv.Quote(typ), "messageExpression should evaluate to a non-empty string"))
						continue
					case strings.Contains(s, "\n"):
						add(invalidCause(fp, strconv.Quote(typ), "messageExpression should not contain line breaks"))
						continue
					case len(s) > 5*1024:
						add(invalidCause(fp, strconv.Quote(typ), "messageExpression beyond allowable length of 5120"))
						continue
					}
					msg = s
				}
			}
		}
		add(fieldErrorForReason(fp, typ, msg, r.rule.Reason))
	}
}

// ruleErrorString is the rule as kube prints it in "failed rule: ...":
// trimmed, and with line breaks the message carries no more than one line.
func ruleErrorString(rule string) string {
	return strings.TrimSpace(rule)
}

func fieldErrorForReason(field, typ, detail, reason string) meta.StatusCause {
	switch reason {
	case "FieldValueForbidden":
		return meta.StatusCause{Type: meta.CauseTypeFieldValueForbidden, Field: field, Message: "Forbidden: " + detail}
	case "FieldValueRequired":
		return meta.StatusCause{Type: meta.CauseTypeFieldValueRequired, Field: field, Message: "Required value: " + detail}
	case "FieldValueDuplicate":
		return meta.StatusCause{Type: meta.CauseTypeFieldValueDuplicate, Field: field, Message: "Duplicate value: " + strconv.Quote(typ)}
	}
	return invalidCause(field, strconv.Quote(typ), detail)
}
