// This file holds CEL admission policies: ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy with their bindings (admissionregistration.k8s.io
// v1 / v1beta1 formats), loaded from YAML or declared in Go, compiled once,
// and evaluated with Kubernetes' budgets and messages.

package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	jsonpatch "github.com/evanphx/json-patch/v5"
	"go.yaml.in/yaml/v3"

	"github.com/annexapi/annex/cellib"
	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// ObjectMeta is the part of metadata policies, bindings and params use.
type ObjectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// MatchResources is matchConstraints / matchResources.
type MatchResources struct {
	NamespaceSelector    *LabelSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector       *LabelSelector `json:"objectSelector,omitempty"`
	ResourceRules        []Rule         `json:"resourceRules,omitempty"`
	ExcludeResourceRules []Rule         `json:"excludeResourceRules,omitempty"`
	MatchPolicy          *string        `json:"matchPolicy,omitempty"`
}

// NamedExpression is a matchCondition or a variable.
type NamedExpression struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// ParamKind names the kind of a policy's params.
type ParamKind struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ParamRef selects a binding's params.
type ParamRef struct {
	Name                    string         `json:"name,omitempty"`
	Namespace               string         `json:"namespace,omitempty"`
	Selector                *LabelSelector `json:"selector,omitempty"`
	ParameterNotFoundAction *string        `json:"parameterNotFoundAction,omitempty"`
}

// Validation is one ValidatingAdmissionPolicy validation.
type Validation struct {
	Expression        string `json:"expression"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
	Reason            string `json:"reason,omitempty"`
}

// AuditAnnotation is one ValidatingAdmissionPolicy auditAnnotation.
type AuditAnnotation struct {
	Key             string `json:"key"`
	ValueExpression string `json:"valueExpression"`
}

// Mutation is one MutatingAdmissionPolicy mutation.
type Mutation struct {
	PatchType          string      `json:"patchType"`
	ApplyConfiguration *Expression `json:"applyConfiguration,omitempty"`
	JSONPatch          *Expression `json:"jsonPatch,omitempty"`
}

// Expression wraps a CEL expression.
type Expression struct {
	Expression string `json:"expression"`
}

// PolicySpec is the spec of both policy kinds (Validations and
// AuditAnnotations are validating-only, Mutations and ReinvocationPolicy
// mutating-only).
type PolicySpec struct {
	ParamKind          *ParamKind        `json:"paramKind,omitempty"`
	MatchConstraints   *MatchResources   `json:"matchConstraints,omitempty"`
	Validations        []Validation      `json:"validations,omitempty"`
	AuditAnnotations   []AuditAnnotation `json:"auditAnnotations,omitempty"`
	Mutations          []Mutation        `json:"mutations,omitempty"`
	FailurePolicy      *string           `json:"failurePolicy,omitempty"`
	MatchConditions    []NamedExpression `json:"matchConditions,omitempty"`
	Variables          []NamedExpression `json:"variables,omitempty"`
	ReinvocationPolicy *string           `json:"reinvocationPolicy,omitempty"`
}

// Policy is a ValidatingAdmissionPolicy or MutatingAdmissionPolicy.
type Policy struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PolicySpec `json:"spec"`
}

// BindingSpec is the spec of both binding kinds.
type BindingSpec struct {
	PolicyName        string          `json:"policyName"`
	ParamRef          *ParamRef       `json:"paramRef,omitempty"`
	MatchResources    *MatchResources `json:"matchResources,omitempty"`
	ValidationActions []string        `json:"validationActions,omitempty"`
}

// Binding is a ValidatingAdmissionPolicyBinding or MutatingAdmissionPolicyBinding.
type Binding struct {
	APIVersion string      `json:"apiVersion,omitempty"`
	Kind       string      `json:"kind,omitempty"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       BindingSpec `json:"spec"`
}

// PolicyOptions configures policy evaluation. The zero value is Kubernetes'.
type PolicyOptions struct {
	// Params are the param objects (decoded JSON with apiVersion, kind,
	// metadata) bindings' paramRefs select from; zero means none.
	Params []map[string]any
	// Namespaces looks namespaces up for namespaceSelector and
	// namespaceObject; nil means namespace selectors see no labels and
	// namespaceObject is null.
	Namespaces NamespaceGetter
	// Budget is the CEL cost one policy evaluation may spend; zero means
	// RuntimeCELCostBudget (10,000,000).
	Budget int64
	// ParamSource lists the param objects of kinds Params does not hold
	// (the cluster's, when following it); nil means Params alone.
	ParamSource ParamSource
	// Authorizer answers the expressions' authorizer checks
	// (authorizer.group('apps').resource('deployments').check('get'),
	// authorizer.requestResource.check(...)) for the request's user; nil
	// means an expression that reads the authorizer fails to evaluate
	// ("no such attribute").
	Authorizer cellib.Authorizer
}

// ParamSource lists the objects of a policy's paramKind. ListParams is
// called concurrently, for every matching binding of every write, so it
// must answer from memory; an error is a configuration error of the
// binding ("failed to configure binding: ...", failurePolicy applies).
type ParamSource interface {
	ListParams(ctx context.Context, kind ParamKind) ([]map[string]any, error)
}

// LoadPolicies reads a multi-document YAML (or JSON) stream of
// ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
// MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding objects; any
// other object is a param. Unknown fields are errors.
func LoadPolicies(data []byte) (policies []Policy, bindings []Binding, params []map[string]any, err error) {
	docs, err := yamlDocs(data)
	if err != nil {
		return nil, nil, nil, err
	}
	for i, b := range docs {
		var tm struct{ Kind string }
		_ = json.Unmarshal(b, &tm)
		strict := func(out any) error {
			d := json.NewDecoder(bytes.NewReader(b))
			d.DisallowUnknownFields()
			if err := d.Decode(out); err != nil {
				return fmt.Errorf("%w: document %d (%s): %v", ErrInvalidConfig, i, tm.Kind, err)
			}
			return nil
		}
		switch tm.Kind {
		case "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy":
			var p Policy
			if err := strict(&p); err != nil {
				return nil, nil, nil, err
			}
			policies = append(policies, p)
		case "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicyBinding":
			var bd Binding
			if err := strict(&bd); err != nil {
				return nil, nil, nil, err
			}
			bindings = append(bindings, bd)
		default:
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var m map[string]any
			if err := d.Decode(&m); err != nil {
				return nil, nil, nil, fmt.Errorf("%w: document %d: %v", ErrInvalidConfig, i, err)
			}
			params = append(params, m)
		}
	}
	return policies, bindings, params, nil
}

// compiledPolicy is a policy with its programs.
type compiledPolicy struct {
	Policy
	bindings    []Binding
	conditions  []*compiled
	condNames   []string
	variables   []*compiled
	varNames    []string
	validations []*compiled
	messages    []*compiled
	audits      []*compiled
	mutations   []*compiled
	failOpen    bool
	// broken is why a policy from the cluster did not compile: it denies
	// what it matches (unless failurePolicy is Ignore) instead of taking
	// the others down with it.
	broken error
	// readsRequest, readsNamespace and readsAuthorizer tell whether any
	// expression reads request, namespaceObject or the authorizer: the
	// activation builds them only then.
	readsRequest, readsNamespace, readsAuthorizer bool
}

// noteReads sets readsRequest, readsNamespace and readsAuthorizer from the
// expressions.
func (cp *compiledPolicy) noteReads() {
	for _, list := range [][]*compiled{cp.conditions, cp.variables, cp.validations, cp.messages, cp.audits, cp.mutations} {
		for _, c := range list {
			if c != nil {
				cp.readsRequest = cp.readsRequest || c.references("request")
				cp.readsNamespace = cp.readsNamespace || c.references("namespaceObject")
				cp.readsAuthorizer = cp.readsAuthorizer || c.references(authorizerVar) || c.references(requestResourceVar)
			}
		}
	}
}

// objectTypes lets MutatingAdmissionPolicy expressions build
// `Object{spec: Object.spec{...}}` and `JSONPatch{op: ..., path: ...}`
// values: every such type is a struct of dyn fields, created as a map. It
// is a registry, so libraries can register their types with it.
type objectTypes struct{ *types.Registry }

func (o objectTypes) isOurs(name string) bool {
	return name == "JSONPatch" || name == "Object" || strings.HasPrefix(name, "Object.")
}

func (o objectTypes) FindStructType(name string) (*types.Type, bool) {
	if o.isOurs(name) {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return o.Registry.FindStructType(name)
}

func (o objectTypes) FindStructFieldNames(name string) ([]string, bool) {
	if o.isOurs(name) {
		return nil, true
	}
	return o.Registry.FindStructFieldNames(name)
}

func (o objectTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if o.isOurs(name) {
		return &types.FieldType{Type: types.DynType}, true
	}
	return o.Registry.FindStructFieldType(name, field)
}

func (o objectTypes) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if o.isOurs(name) {
		m := make(map[ref.Val]ref.Val, len(fields))
		for k, v := range fields {
			m[types.String(k)] = v
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	}
	return o.Registry.NewValue(name, fields)
}

// policyEnv is the environment of policies' and webhooks' expressions:
// Kubernetes' base, the variables, and the authorizer (bound when
// PolicyOptions or WebhookOptions have an Authorizer); a
// MutatingAdmissionPolicy's also has jsonpatch.escapeKey, as in Kubernetes.
func policyEnv(mutating bool) (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	opts := append([]cel.EnvOption{cel.CustomTypeProvider(objectTypes{reg}), cel.CustomTypeAdapter(jsonAdapter{reg})}, celBaseOptions()...)
	opts = append(opts,
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("params", cel.DynType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(authorizerVar, cellib.AuthorizerType),
		cel.Variable(requestResourceVar, cellib.ResourceCheckType))
	if mutating {
		opts = append(opts, cellib.JSONPatch())
	}
	return cel.NewEnv(opts...)
}

// The variables of the authorizer, as Kubernetes names them.
const (
	authorizerVar      = "authorizer"
	requestResourceVar = "authorizer.requestResource"
)

// bindAuthorizer sets the authorizer variables of act for a's user and
// resource, when there is an authorizer to check with.
func bindAuthorizer(ctx context.Context, act map[string]any, az cellib.Authorizer, a *Attributes) {
	if az == nil {
		return
	}
	act[authorizerVar] = cellib.AuthorizerValue(ctx, az, a.User)
	act[requestResourceVar] = cellib.RequestResourceValue(ctx, az, a.User, cellib.RequestResource{
		Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name})
}

func compilePolicies(policies []Policy, bindings []Binding, kind string) ([]*compiledPolicy, error) {
	env, err := policyEnv(kind == "MutatingAdmissionPolicy")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	byName := map[string]*compiledPolicy{}
	var out []*compiledPolicy
	for _, p := range policies {
		if p.Kind != "" && p.Kind != kind {
			continue
		}
		if p.Metadata.Name == "" {
			return nil, fmt.Errorf("%w: %s without metadata.name", ErrInvalidConfig, kind)
		}
		if err := p.Spec.MatchConstraints.validateSelectors("spec.matchConstraints"); err != nil {
			return nil, fmt.Errorf("%w: %s %q: %v", ErrInvalidConfig, kind, p.Metadata.Name, err)
		}
		cp := &compiledPolicy{Policy: p, failOpen: p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == "Ignore"}
		c := func(field, expr string, want *cel.Type) (*compiled, error) {
			prg, err := compileExpr(env, expr, want, PerCallLimit)
			if err != nil {
				return nil, fmt.Errorf("%w: %s %q: %s: %v", ErrInvalidConfig, kind, p.Metadata.Name, field, err)
			}
			return prg, nil
		}
		for i, m := range p.Spec.MatchConditions {
			prg, err := c(fmt.Sprintf("spec.matchConditions[%d].expression", i), m.Expression, cel.BoolType)
			if err != nil {
				return nil, err
			}
			cp.conditions, cp.condNames = append(cp.conditions, prg), append(cp.condNames, m.Name)
		}
		for i, v := range p.Spec.Variables {
			prg, err := c(fmt.Sprintf("spec.variables[%d].expression", i), v.Expression, nil)
			if err != nil {
				return nil, err
			}
			cp.variables, cp.varNames = append(cp.variables, prg), append(cp.varNames, v.Name)
		}
		for i, v := range p.Spec.Validations {
			prg, err := c(fmt.Sprintf("spec.validations[%d].expression", i), v.Expression, cel.BoolType)
			if err != nil {
				return nil, err
			}
			var msg *compiled
			if v.MessageExpression != "" {
				if msg, err = c(fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression, cel.StringType); err != nil {
					return nil, err
				}
			}
			cp.validations, cp.messages = append(cp.validations, prg), append(cp.messages, msg)
		}
		for i, a := range p.Spec.AuditAnnotations {
			prg, err := c(fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), a.ValueExpression, nil)
			if err != nil {
				return nil, err
			}
			cp.audits = append(cp.audits, prg)
		}
		for i, m := range p.Spec.Mutations {
			var e *Expression
			switch m.PatchType {
			case "ApplyConfiguration":
				e = m.ApplyConfiguration
			case "JSONPatch":
				e = m.JSONPatch
			default:
				return nil, fmt.Errorf("%w: %s %q: spec.mutations[%d].patchType: Unsupported value: %q", ErrInvalidConfig, kind, p.Metadata.Name, i, m.PatchType)
			}
			if e == nil {
				return nil, fmt.Errorf("%w: %s %q: spec.mutations[%d]: missing expression", ErrInvalidConfig, kind, p.Metadata.Name, i)
			}
			prg, err := c(fmt.Sprintf("spec.mutations[%d]", i), e.Expression, nil)
			if err != nil {
				return nil, err
			}
			cp.mutations = append(cp.mutations, prg)
		}
		cp.noteReads()
		byName[p.Metadata.Name] = cp
		out = append(out, cp)
	}
	for _, b := range bindings {
		bk := kind + "Binding"
		if b.Kind != "" && b.Kind != bk {
			continue
		}
		cp := byName[b.Spec.PolicyName]
		if cp == nil {
			return nil, fmt.Errorf("%w: %s %q: policy %q not found", ErrInvalidConfig, bk, b.Metadata.Name, b.Spec.PolicyName)
		}
		err := b.Spec.MatchResources.validateSelectors("spec.matchResources")
		if err == nil && b.Spec.ParamRef != nil {
			err = b.Spec.ParamRef.Selector.validate("spec.paramRef.selector")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: %v", ErrInvalidConfig, bk, b.Metadata.Name, err)
		}
		if kind == "ValidatingAdmissionPolicy" {
			if len(b.Spec.ValidationActions) == 0 {
				return nil, fmt.Errorf("%w: %s %q: spec.validationActions: Required value", ErrInvalidConfig, bk, b.Metadata.Name)
			}
			if slices.Contains(b.Spec.ValidationActions, "Deny") && slices.Contains(b.Spec.ValidationActions, "Warn") {
				return nil, fmt.Errorf("%w: %s %q: spec.validationActions: Deny and Warn may not be used together", ErrInvalidConfig, bk, b.Metadata.Name)
			}
		}
		cp.bindings = append(cp.bindings, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })
	for _, cp := range out {
		sort.Slice(cp.bindings, func(i, j int) bool { return cp.bindings[i].Metadata.Name < cp.bindings[j].Metadata.Name })
	}
	return out, nil
}

// compileEach compiles each policy with its bindings on its own, for
// configuration that comes from the cluster: a policy that does not compile
// here is kept, broken (it denies what it matches unless its failurePolicy
// is Ignore), rather than taking the others down; a binding whose policy is
// missing is left out, as kube leaves it. The result is sorted by name.
func compileEach(policies []Policy, bindings []Binding, kind string) []*compiledPolicy {
	var out []*compiledPolicy
	for _, p := range policies {
		if p.Kind != "" && p.Kind != kind {
			continue
		}
		var bs []Binding
		for _, b := range bindings {
			if b.Spec.PolicyName == p.Metadata.Name && (b.Kind == "" || b.Kind == kind+"Binding") {
				bs = append(bs, b)
			}
		}
		cps, err := compilePolicies([]Policy{p}, bs, kind)
		if err != nil {
			sort.Slice(bs, func(i, j int) bool { return bs[i].Metadata.Name < bs[j].Metadata.Name })
			cps = []*compiledPolicy{{Policy: p, bindings: bs, broken: err, failOpen: p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == "Ignore"}}
		}
		out = append(out, cps...)
	}
	sortPolicies(out)
	return out
}

func sortPolicies(cps []*compiledPolicy) {
	sort.SliceStable(cps, func(i, j int) bool { return cps[i].Metadata.Name < cps[j].Metadata.Name })
}

// matchResources applies a MatchResources: the rules (an empty rule list
// matches nothing, as in k8s), exclusions and selectors. It returns the
// attributes to admit: a, or a converted to the version of the rule that
// matched (matchPolicy Equivalent).
func matchResources(ctx context.Context, m *MatchResources, a *Attributes, ns NamespaceGetter, emptyMatches bool) (*Attributes, bool, error) {
	if m == nil {
		return a, emptyMatches, nil
	}
	v, ok := matchedVersion(a, m.MatchPolicy, func(a *Attributes) bool {
		ok := len(m.ResourceRules) == 0 && emptyMatches
		for i := range m.ResourceRules {
			if m.ResourceRules[i].Matches(a) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
		for i := range m.ExcludeResourceRules {
			if m.ExcludeResourceRules[i].Matches(a) {
				return false
			}
		}
		return true
	})
	if !ok {
		return a, false, nil
	}
	if ok, err := matchSelectors(ctx, m.NamespaceSelector, m.ObjectSelector, a, ns); err != nil || !ok {
		return a, ok, err
	}
	at, err := a.AtVersion(ctx, v)
	if err != nil {
		return a, false, meta.NewInternalError(err)
	}
	return at, true, nil
}

// evaluator holds the shared per-request state of policy evaluation.
type policyEngine struct {
	policies []*compiledPolicy
	opts     PolicyOptions
	kind     string
	metrics  *metrics
}

func (e *policyEngine) params(ctx context.Context, a *Attributes, p *compiledPolicy, b *Binding) ([]any, error) {
	if p.Spec.ParamKind == nil || b.Spec.ParamRef == nil {
		return []any{nil}, nil
	}
	ref := b.Spec.ParamRef
	if ref.Name != "" && ref.Selector != nil {
		return nil, errors.New("paramRef.name and paramRef.selector are mutually exclusive")
	}
	ns := ref.Namespace
	if ns == "" {
		ns = a.Namespace
	}
	objs := e.opts.Params
	if e.opts.ParamSource != nil {
		more, err := e.opts.ParamSource.ListParams(ctx, *p.Spec.ParamKind)
		if err != nil {
			return nil, err
		}
		objs = append(slices.Clip(objs), more...)
	}
	var out []any
	for _, obj := range objs {
		av, _ := obj["apiVersion"].(string)
		k, _ := obj["kind"].(string)
		if av != p.Spec.ParamKind.APIVersion || k != p.Spec.ParamKind.Kind {
			continue
		}
		md, _ := obj["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		pns, _ := md["namespace"].(string)
		if pns != "" && pns != ns {
			continue
		}
		if ref.Name != "" {
			if name == ref.Name {
				out = append(out, obj)
			}
			continue
		}
		ok, err := ref.Selector.Matches(labelsOf(obj))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, obj)
		}
	}
	if len(out) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == "Deny" {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return out, nil
}

// activation builds the CEL inputs shared by one policy/binding/param.
func (e *policyEngine) activation(ctx context.Context, a *Attributes, p *compiledPolicy, param any) map[string]any {
	// The environment's jsonAdapter reads the decoded objects in place;
	// request and namespaceObject are made only for policies that read them.
	var obj, old, nsObj, req any
	if a.Object != nil {
		obj = a.Object
	}
	if a.OldObject != nil {
		old = a.OldObject
	}
	if p.readsNamespace && e.opts.Namespaces != nil && a.Namespace != "" {
		if n, err := e.opts.Namespaces.GetNamespace(ctx, a.Namespace); err == nil && n != nil {
			nsObj = n
		}
	}
	if p.readsRequest {
		req = requestObject(a, "")
	}
	act := map[string]any{"object": obj, "oldObject": old, "request": req, "params": param,
		"namespaceObject": nsObj, "variables": map[string]any{}}
	if p.readsAuthorizer {
		bindAuthorizer(ctx, act, e.opts.Authorizer, a)
	}
	return act
}

// prepare evaluates the variables (eagerly, in order; a failed variable is
// left out, so reading it fails) and the match conditions: any false means
// no match; otherwise an error is returned.
func (e *policyEngine) prepare(ctx context.Context, p *compiledPolicy, act map[string]any, budget *int64) (bool, error) {
	vars := map[string]any{}
	act["variables"] = vars
	for i, prg := range p.variables {
		v, err := prg.eval(ctx, act, budget)
		if errors.Is(err, errOutOfBudget) {
			return false, err
		}
		if err == nil {
			vars[p.varNames[i]] = v
		}
	}
	var firstErr error
	for i, prg := range p.conditions {
		v, err := prg.eval(ctx, act, budget)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("failed to evaluate match condition %q: %v", p.condNames[i], err)
			}
			continue
		}
		if v == types.False {
			return false, nil
		}
	}
	if firstErr != nil {
		return false, firstErr
	}
	return true, nil
}

// ValidatingPolicies evaluates ValidatingAdmissionPolicies; it is a Validator.
type ValidatingPolicies struct{ e policyEngine }

var _ Validator = (*ValidatingPolicies)(nil)

// NewValidatingPolicies compiles the policies and their bindings; a policy
// without bindings never applies, a binding naming an unknown policy is an
// error.
func NewValidatingPolicies(policies []Policy, bindings []Binding, opts PolicyOptions) (*ValidatingPolicies, error) {
	cps, err := compilePolicies(policies, bindings, "ValidatingAdmissionPolicy")
	if err != nil {
		return nil, err
	}
	if opts.Budget == 0 {
		opts.Budget = RuntimeCELCostBudget
	}
	return &ValidatingPolicies{policyEngine{policies: cps, opts: opts, kind: "ValidatingAdmissionPolicy"}}, nil
}

// LoadValidatingPolicies is LoadPolicies then NewValidatingPolicies; params
// found in the YAML are added to opts.Params.
func LoadValidatingPolicies(data []byte, opts PolicyOptions) (*ValidatingPolicies, error) {
	ps, bs, params, err := LoadPolicies(data)
	if err != nil {
		return nil, err
	}
	opts.Params = append(append([]map[string]any(nil), opts.Params...), params...)
	return NewValidatingPolicies(ps, bs, opts)
}

func (v *ValidatingPolicies) useMetrics(m *metrics) { v.e.metrics = m }

// Name labels metrics.
func (v *ValidatingPolicies) Name() string { return "ValidatingAdmissionPolicy" }

type denial struct {
	policy, binding, message, reason string
}

// Validate evaluates every matching policy and binding; the first denial
// (by policy name, then binding name) wins.
func (v *ValidatingPolicies) Validate(ctx context.Context, a *Attributes) error {
	var denied *denial
	deny := func(d denial) {
		if denied == nil {
			denied = &d
		}
	}
	for _, p := range v.e.policies {
		if len(p.bindings) == 0 {
			continue
		}
		pa, ok, err := matchResources(ctx, p.Spec.MatchConstraints, a, v.e.opts.Namespaces, false)
		if err != nil {
			if !p.failOpen {
				deny(denial{policy: p.Metadata.Name, message: "failed to configure policy: " + err.Error()})
			}
			continue
		}
		if !ok {
			continue
		}
		if p.broken != nil {
			if !p.failOpen {
				deny(denial{policy: p.Metadata.Name, message: "failed to configure policy: " + p.broken.Error()})
			}
			continue
		}
		annotations := map[string][]string{}
		for bi := range p.bindings {
			b := &p.bindings[bi]
			ba := pa
			if b.Spec.MatchResources != nil {
				var ok bool
				ba, ok, err = matchResources(ctx, b.Spec.MatchResources, pa, v.e.opts.Namespaces, true)
				if err != nil || !ok {
					if err != nil && !p.failOpen {
						deny(denial{policy: p.Metadata.Name, binding: b.Metadata.Name, message: "failed to configure binding: " + err.Error()})
					}
					continue
				}
			}
			params, err := v.e.params(ctx, ba, p, b)
			if err != nil {
				if !p.failOpen {
					deny(denial{policy: p.Metadata.Name, binding: b.Metadata.Name, message: "failed to configure binding: " + err.Error()})
				}
				continue
			}
			for _, param := range params {
				v.evalOne(ctx, ba, p, b, param, deny, annotations)
			}
		}
		keys := make([]string, 0, len(annotations))
		for k := range annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			filters.AddAuditAnnotation(ctx, p.Metadata.Name+"/"+k, strings.Join(annotations[k], ", "))
		}
	}
	if denied == nil {
		return nil
	}
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", denied.policy, denied.message)
	if denied.binding != "" {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", denied.policy, denied.binding, denied.message)
	}
	st := forbidden(a, msg)
	st.Reason = meta.StatusReason(denied.reason)
	if st.Reason == "" {
		st.Reason = meta.StatusReasonInvalid
	}
	st.Code = reasonToCode(st.Reason)
	st.Details.Causes = append(st.Details.Causes, meta.StatusCause{Message: msg})
	return st
}

func reasonToCode(r meta.StatusReason) int32 {
	switch r {
	case meta.StatusReasonForbidden:
		return http.StatusForbidden
	case meta.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case meta.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}

func (v *ValidatingPolicies) evalOne(ctx context.Context, a *Attributes, p *compiledPolicy, b *Binding, param any, deny func(denial), annotations map[string][]string) {
	budget := v.e.opts.Budget
	act := v.e.activation(ctx, a, p, param)
	actions := b.Spec.ValidationActions
	// errorType is kube's error_type label of a failed validation.
	errorType := func(msg string) string {
		if strings.HasPrefix(msg, "validation failed due to running out of cost budget") {
			return "out_of_budget"
		}
		return "invalid_error"
	}
	// fail records a failed validation or an evaluation error under
	// failurePolicy Fail, with kube's check_total and check_duration_seconds
	// labels (enforcement_action per action); elapsed is the validation's.
	fail := func(msg, reason string, index int, elapsed time.Duration) {
		errType := errorType(msg)
		for _, act := range actions {
			v.e.metrics.policyChecked(p.Metadata.Name, b.Metadata.Name, errType, strings.ToLower(act), elapsed)
		}
		if slices.Contains(actions, "Deny") {
			deny(denial{policy: p.Metadata.Name, binding: b.Metadata.Name, message: msg, reason: reason})
		}
		if slices.Contains(actions, "Warn") {
			filters.AddWarning(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Metadata.Name, b.Metadata.Name, msg))
		}
		if slices.Contains(actions, "Audit") {
			val, _ := json.Marshal([]map[string]any{{"message": msg, "policy": p.Metadata.Name, "binding": b.Metadata.Name,
				"expressionIndex": index, "validationActions": actions}})
			filters.AddAuditAnnotation(ctx, "validation.policy.admission.k8s.io/validation_failure", string(val))
		}
	}
	// ignored records an evaluation error under failurePolicy Ignore: kube
	// counts it with enforcement_action "allow".
	ignored := func(msg string, elapsed time.Duration) {
		v.e.metrics.policyChecked(p.Metadata.Name, b.Metadata.Name, errorType(msg), "allow", elapsed)
	}
	start := time.Now()
	ok, err := v.e.prepare(ctx, p, act, &budget)
	if err != nil {
		if p.failOpen {
			ignored(err.Error(), time.Since(start))
		} else {
			fail(err.Error(), "", 0, time.Since(start))
		}
		return
	}
	if !ok {
		return
	}
	for i, prg := range p.validations {
		start := time.Now()
		val, err := prg.eval(ctx, act, &budget)
		if err != nil {
			msg := err.Error()
			if !errors.Is(err, errOutOfBudget) {
				msg = fmt.Sprintf("expression '%s' resulted in error: %v", prg.expr, err)
			}
			if p.failOpen {
				ignored(msg, time.Since(start))
			} else {
				fail(msg, "", i, time.Since(start))
			}
			if errors.Is(err, errOutOfBudget) {
				return
			}
			continue
		}
		if val == types.True {
			continue
		}
		vd := p.Spec.Validations[i]
		msg := vd.Message
		if m := p.messages[i]; m != nil {
			if mv, err := m.eval(ctx, act, &budget); err == nil {
				if s, ok := mv.Value().(string); ok {
					if s = strings.TrimSpace(s); s != "" && !strings.Contains(s, "\n") && len(s) <= 5*1024 {
						msg = s
					}
				}
			}
		}
		if msg == "" {
			msg = "failed expression: " + strings.TrimSpace(prg.expr)
		}
		fail(msg, vd.Reason, i, time.Since(start))
	}
	for i, prg := range p.audits {
		val, err := prg.eval(ctx, act, &budget)
		if err != nil {
			continue
		}
		s, ok := val.Value().(string)
		if !ok || strings.TrimSpace(s) == "" {
			continue
		}
		if len(s) > 10*1024 {
			s = s[:10*1024]
		}
		key := p.Spec.AuditAnnotations[i].Key
		if !slices.Contains(annotations[key], s) {
			annotations[key] = append(annotations[key], s)
		}
	}
}

// MutatingPolicies applies MutatingAdmissionPolicies; it is a Mutator.
type MutatingPolicies struct{ e policyEngine }

var (
	_ Mutator     = (*MutatingPolicies)(nil)
	_ Reinvocable = (*MutatingPolicies)(nil)
)

// NewMutatingPolicies compiles the policies and their bindings.
func NewMutatingPolicies(policies []Policy, bindings []Binding, opts PolicyOptions) (*MutatingPolicies, error) {
	cps, err := compilePolicies(policies, bindings, "MutatingAdmissionPolicy")
	if err != nil {
		return nil, err
	}
	if opts.Budget == 0 {
		opts.Budget = RuntimeCELCostBudget
	}
	return &MutatingPolicies{policyEngine{policies: cps, opts: opts, kind: "MutatingAdmissionPolicy"}}, nil
}

// LoadMutatingPolicies is LoadPolicies then NewMutatingPolicies.
func LoadMutatingPolicies(data []byte, opts PolicyOptions) (*MutatingPolicies, error) {
	ps, bs, params, err := LoadPolicies(data)
	if err != nil {
		return nil, err
	}
	opts.Params = append(append([]map[string]any(nil), opts.Params...), params...)
	return NewMutatingPolicies(ps, bs, opts)
}

func (m *MutatingPolicies) useMetrics(mt *metrics) { m.e.metrics = mt }

// Name labels metrics.
func (m *MutatingPolicies) Name() string { return "MutatingAdmissionPolicy" }

// Reinvocable is true when a policy has reinvocationPolicy IfNeeded.
func (m *MutatingPolicies) Reinvocable() bool {
	for _, p := range m.e.policies {
		if p.Spec.ReinvocationPolicy != nil && *p.Spec.ReinvocationPolicy == "IfNeeded" {
			return true
		}
	}
	return false
}

// Mutate applies every matching policy's mutations in order. On the
// reinvocation pass only IfNeeded policies run again.
func (m *MutatingPolicies) Mutate(ctx context.Context, a *Attributes) error {
	if a.Object == nil {
		return nil
	}
	for _, p := range m.e.policies {
		if a.IsReinvoke() && (p.Spec.ReinvocationPolicy == nil || *p.Spec.ReinvocationPolicy != "IfNeeded") {
			continue
		}
		pa, ok, err := matchResources(ctx, p.Spec.MatchConstraints, a, m.e.opts.Namespaces, false)
		if err != nil || !ok {
			if err != nil && !p.failOpen {
				return forbidden(a, fmt.Sprintf("policy '%s' failed to configure: %v", p.Metadata.Name, err))
			}
			continue
		}
		if p.broken != nil {
			if !p.failOpen {
				return forbidden(a, fmt.Sprintf("policy '%s' failed to configure: %v", p.Metadata.Name, p.broken))
			}
			continue
		}
		version := pa.Version
		for bi := range p.bindings {
			b := &p.bindings[bi]
			bversion := version
			if b.Spec.MatchResources != nil {
				ba, ok, err := matchResources(ctx, b.Spec.MatchResources, pa, m.e.opts.Namespaces, true)
				if err != nil || !ok {
					continue
				}
				bversion = ba.Version
			}
			params, err := m.e.params(ctx, a, p, b)
			if err != nil {
				if !p.failOpen {
					return forbidden(a, fmt.Sprintf("policy '%s' with binding '%s' denied request: failed to configure binding: %v", p.Metadata.Name, b.Metadata.Name, err))
				}
				continue
			}
			for _, param := range params {
				// Each application sees the object as the last one left
				// it, at the version its rules matched.
				at, err := a.AtVersion(ctx, bversion)
				if err != nil {
					return meta.NewInternalError(err)
				}
				if err := m.apply(ctx, at, p, b, param); err != nil {
					if !p.failOpen {
						return forbidden(a, fmt.Sprintf("policy '%s' with binding '%s' denied request: %v", p.Metadata.Name, b.Metadata.Name, err))
					}
				}
				if err := a.TakeMutation(ctx, at); err != nil {
					return meta.NewInternalError(err)
				}
			}
		}
	}
	return nil
}

func (m *MutatingPolicies) apply(ctx context.Context, a *Attributes, p *compiledPolicy, b *Binding, param any) error {
	budget := m.e.opts.Budget
	act := m.e.activation(ctx, a, p, param)
	ok, err := m.e.prepare(ctx, p, act, &budget)
	if err != nil || !ok {
		return err
	}
	for i, prg := range p.mutations {
		val, err := prg.eval(ctx, act, &budget)
		if err != nil {
			return fmt.Errorf("expression '%s' resulted in error: %v", prg.expr, err)
		}
		out, err := nativeValue(val)
		if err != nil {
			return err
		}
		var next map[string]any
		switch p.Spec.Mutations[i].PatchType {
		case "ApplyConfiguration":
			ac, ok := out.(map[string]any)
			if !ok {
				return fmt.Errorf("applyConfiguration must evaluate to an Object, got %T", out)
			}
			if a.MergeApply != nil {
				if next, err = a.MergeApply(a.Object, ac); err != nil {
					return err
				}
			} else {
				next = deepCopyMap(a.Object)
				mergeApply(next, ac)
			}
		case "JSONPatch":
			if next, err = applyJSONPatch(a.Object, out); err != nil {
				return err
			}
		}
		a.Object = next
		act["object"] = next
	}
	return nil
}

// mergeApply merges an apply configuration into obj: maps recursively,
// everything else (lists included: atomic without a schema) replaced.
func mergeApply(obj, ac map[string]any) {
	for k, v := range ac {
		if vm, ok := v.(map[string]any); ok {
			if om, ok := obj[k].(map[string]any); ok {
				mergeApply(om, vm)
				continue
			}
		}
		obj[k] = v
	}
}

func applyJSONPatch(obj map[string]any, ops any) (map[string]any, error) {
	pb, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch(pb)
	if err != nil {
		return nil, err
	}
	ob, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	nb, err := patch.Apply(ob)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(nb))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// yamlDocs splits a YAML stream into JSON documents, skipping empty ones.
func yamlDocs(data []byte) ([][]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out [][]byte
	for i := 0; ; i++ {
		var doc any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%w: document %d: %v", ErrInvalidConfig, i, err)
		}
		if doc == nil {
			continue
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: document %d: %v", ErrInvalidConfig, i, err)
		}
		out = append(out, b)
	}
}
