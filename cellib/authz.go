// This file holds Kubernetes' authz library (kubernetes.authz and
// kubernetes.authzSelectors): the authorizer variable's checks, made
// through an Authorizer the server provides.

package cellib

import (
	"context"
	"errors"
	"reflect"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/annexapi/annex/filters"
	"github.com/annexapi/annex/meta"
)

// The types of the authz library.
var (
	AuthorizerType    = cel.ObjectType("kubernetes.authorization.Authorizer")
	PathCheckType     = cel.ObjectType("kubernetes.authorization.PathCheck")
	GroupCheckType    = cel.ObjectType("kubernetes.authorization.GroupCheck")
	ResourceCheckType = cel.ObjectType("kubernetes.authorization.ResourceCheck")
	DecisionType      = cel.ObjectType("kubernetes.authorization.Decision")
)

// Decision is what an Authorizer says, with Kubernetes' (and package
// authz's) values.
type Decision int

// The decisions.
const (
	DecisionDeny Decision = iota
	DecisionAllow
	DecisionNoOpinion
)

// Attributes is what a check asks about. It has the fields of
// authz.Attributes, in the same order, so that one converts to the other.
type Attributes struct {
	// User is who asks: the request's user, or a service account's.
	User *filters.User
	// Verb is the check's verb as the expression gave it.
	Verb string
	// IsResourceRequest is true for group(...).resource(...) checks and
	// false for path(...) checks.
	IsResourceRequest bool
	// Path is the checked path of a path check.
	Path string
	// APIGroup, Namespace, Resource, Subresource and Name of a resource
	// check; APIVersion is always "*".
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// FieldSelector and LabelSelector, as the expression wrote them.
	FieldSelector string
	LabelSelector string
}

// Authorizer decides the checks of CEL expressions: package authz's
// Authorizer, seen from here.
//
// Concurrency: Authorize is called from many goroutines at once. ctx is
// the request's.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AuthorizerFunc adapts a function to an Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f(ctx, a).
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

var _ Authorizer = AuthorizerFunc(nil)

// RequestResource is what authorizer.requestResource checks: the resource
// a request is for.
type RequestResource struct {
	Group, Resource, Subresource, Namespace, Name string
}

// AuthorizerValue returns the value of the authorizer variable for a
// request of user (nil: anonymous, checked with no user) in ctx; checks go
// to a.
func AuthorizerValue(ctx context.Context, a Authorizer, user *filters.User) ref.Val {
	return authorizerVal{ctx: ctx, authz: a, user: user}
}

// RequestResourceValue returns the value of authorizer.requestResource: a
// ResourceCheck for r, so that authorizer.requestResource.check('update')
// asks whether user may do that to what the request is for.
func RequestResourceValue(ctx context.Context, a Authorizer, user *filters.User, r RequestResource) ref.Val {
	return resourceCheckVal{
		group:    groupCheckVal{authz: authorizerVal{ctx: ctx, authz: a, user: user}, group: r.Group},
		resource: r.Resource, subresource: r.Subresource, namespace: r.Namespace, name: r.Name,
	}
}

// Authz returns the authz library:
//
//	<Authorizer>.path(<string>) PathCheck             error "path must not be empty"
//	<Authorizer>.group(<string>) GroupCheck           '' is the core group
//	<Authorizer>.serviceAccount(<ns>, <name>) Authorizer  checks as that service account
//	<GroupCheck>.resource(<string>) ResourceCheck     error "resource must not be empty"
//	<ResourceCheck>.subresource(<string>) ResourceCheck
//	<ResourceCheck>.namespace(<string>) ResourceCheck
//	<ResourceCheck>.name(<string>) ResourceCheck
//	<PathCheck>.check(<httpVerb>) Decision
//	<ResourceCheck>.check(<apiVerb>) Decision
//	<Decision>.allowed() bool                         no opinion is not allowed
//	<Decision>.reason() string
//	<Decision>.errored() bool
//	<Decision>.error() string                         '' without an error
//
// Examples:
//
//	authorizer.group('').resource('pods').namespace('default').check('create').allowed()
//	authorizer.path('/healthz').check('get').allowed()
//	authorizer.requestResource.subresource('scale').check('update').allowed()
func Authz() cel.EnvOption {
	str := []*cel.Type{cel.StringType}
	on := func(t *cel.Type, more ...*cel.Type) []*cel.Type { return append([]*cel.Type{t}, more...) }
	return cel.Lib(&library{name: "kubernetes.authz", options: []cel.EnvOption{
		cel.Function("path", cel.MemberOverload("authorizer_path", on(AuthorizerType, str...), PathCheckType, cel.BinaryBinding(authorizerPath))),
		cel.Function("group", cel.MemberOverload("authorizer_group", on(AuthorizerType, str...), GroupCheckType, cel.BinaryBinding(authorizerGroup))),
		cel.Function("serviceAccount", cel.MemberOverload("authorizer_serviceaccount", on(AuthorizerType, cel.StringType, cel.StringType), AuthorizerType,
			cel.FunctionBinding(authorizerServiceAccount))),
		cel.Function("resource", cel.MemberOverload("groupcheck_resource", on(GroupCheckType, str...), ResourceCheckType, cel.BinaryBinding(groupCheckResource))),
		cel.Function("subresource", cel.MemberOverload("resourcecheck_subresource", on(ResourceCheckType, str...), ResourceCheckType,
			resourceCheckSetter(func(r *resourceCheckVal, s string) { r.subresource = s }))),
		cel.Function("namespace", cel.MemberOverload("resourcecheck_namespace", on(ResourceCheckType, str...), ResourceCheckType,
			resourceCheckSetter(func(r *resourceCheckVal, s string) { r.namespace = s }))),
		cel.Function("name", cel.MemberOverload("resourcecheck_name", on(ResourceCheckType, str...), ResourceCheckType,
			resourceCheckSetter(func(r *resourceCheckVal, s string) { r.name = s }))),
		cel.Function("check",
			cel.MemberOverload("pathcheck_check", on(PathCheckType, str...), DecisionType, cel.BinaryBinding(pathCheckCheck)),
			cel.MemberOverload("resourcecheck_check", on(ResourceCheckType, str...), DecisionType, cel.BinaryBinding(resourceCheckCheck))),
		cel.Function("errored", decisionAccessor("decision_errored", cel.BoolType, func(d decisionVal) ref.Val { return types.Bool(d.err != nil) })),
		cel.Function("error", decisionAccessor("decision_error", cel.StringType, func(d decisionVal) ref.Val {
			if d.err == nil {
				return types.String("")
			}
			return types.String(d.err.Error())
		})),
		cel.Function("allowed", decisionAccessor("decision_allowed", cel.BoolType, func(d decisionVal) ref.Val { return types.Bool(d.decision == DecisionAllow) })),
		cel.Function("reason", decisionAccessor("decision_reason", cel.StringType, func(d decisionVal) ref.Val { return types.String(d.reason) })),
		cel.CostModel(
			fixed("pathcheck_check", checkCost), fixed("resourcecheck_check", checkCost),
			fixed("authorizer_path", 1), fixed("authorizer_group", 1), fixed("authorizer_serviceaccount", 1),
			fixed("groupcheck_resource", 1), fixed("resourcecheck_subresource", 1), fixed("resourcecheck_namespace", 1),
			fixed("resourcecheck_name", 1), fixed("decision_errored", 1), fixed("decision_error", 1),
			fixed("decision_allowed", 1), fixed("decision_reason", 1),
		),
	}})
}

// AuthzSelectors returns the library that narrows resource checks by
// selector (Kubernetes 1.31+, AuthorizeWithSelectors):
//
//	<ResourceCheck>.fieldSelector(<string>) ResourceCheck
//	<ResourceCheck>.labelSelector(<string>) ResourceCheck
//
// The selectors reach the Authorizer as written, in
// Attributes.FieldSelector and LabelSelector.
func AuthzSelectors() cel.EnvOption {
	str := []*cel.Type{ResourceCheckType, cel.StringType}
	return cel.Lib(&library{name: "kubernetes.authzSelectors", options: []cel.EnvOption{
		cel.Function("fieldSelector", cel.MemberOverload("authorizer_fieldselector", str, ResourceCheckType,
			resourceCheckSetter(func(r *resourceCheckVal, s string) { r.fieldSelector = s }))),
		cel.Function("labelSelector", cel.MemberOverload("authorizer_labelselector", str, ResourceCheckType,
			resourceCheckSetter(func(r *resourceCheckVal, s string) { r.labelSelector = s }))),
		cel.CostModel(selectorModel("authorizer_fieldselector"), selectorModel("authorizer_labelselector")),
	}})
}

func authorizerPath(av, pv ref.Val) ref.Val {
	a, ok := av.(authorizerVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(av)
	}
	p, bad := stringArg(pv)
	if bad != nil {
		return bad
	}
	if strings.TrimSpace(p) == "" {
		return types.NewErr("path must not be empty")
	}
	return pathCheckVal{authz: a, path: p}
}

func authorizerGroup(av, gv ref.Val) ref.Val {
	a, ok := av.(authorizerVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(av)
	}
	g, bad := stringArg(gv)
	if bad != nil {
		return bad
	}
	return groupCheckVal{authz: a, group: g}
}

func authorizerServiceAccount(args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NoSuchOverloadErr()
	}
	a, ok := args[0].(authorizerVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[0])
	}
	ns, bad := stringArg(args[1])
	if bad != nil {
		return bad
	}
	name, bad := stringArg(args[2])
	if bad != nil {
		return bad
	}
	if len(meta.NameIsDNSSubdomain(name, false)) > 0 {
		return types.NewErr("Invalid service account name")
	}
	if len(meta.NameIsDNSLabel(ns, false)) > 0 {
		return types.NewErr("Invalid service account namespace")
	}
	a.user = &filters.User{
		Name:   "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
	}
	return a
}

func groupCheckResource(gv, rv ref.Val) ref.Val {
	g, ok := gv.(groupCheckVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(gv)
	}
	r, bad := stringArg(rv)
	if bad != nil {
		return bad
	}
	if strings.TrimSpace(r) == "" {
		return types.NewErr("resource must not be empty")
	}
	return resourceCheckVal{group: g, resource: r}
}

// resourceCheckSetter returns a copy of a ResourceCheck with one field set.
func resourceCheckSetter(set func(*resourceCheckVal, string)) cel.OverloadOpt {
	return cel.BinaryBinding(func(rv, sv ref.Val) ref.Val {
		r, ok := rv.(resourceCheckVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(rv)
		}
		s, bad := stringArg(sv)
		if bad != nil {
			return bad
		}
		set(&r, s)
		return r
	})
}

// errNoAuthorizer is a check's error when the variable was bound without an
// Authorizer.
var errNoAuthorizer = errors.New("no authorizer configured")

func pathCheckCheck(pv, vv ref.Val) ref.Val {
	p, ok := pv.(pathCheckVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(pv)
	}
	verb, bad := stringArg(vv)
	if bad != nil {
		return bad
	}
	return p.authz.decide(Attributes{User: p.authz.user, Verb: verb, Path: p.path})
}

func resourceCheckCheck(rv, vv ref.Val) ref.Val {
	r, ok := rv.(resourceCheckVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(rv)
	}
	verb, bad := stringArg(vv)
	if bad != nil {
		return bad
	}
	a := r.group.authz
	return a.decide(Attributes{
		User: a.user, Verb: verb, IsResourceRequest: true,
		APIGroup: r.group.group, APIVersion: "*", Resource: r.resource, Subresource: r.subresource,
		Namespace: r.namespace, Name: r.name, FieldSelector: r.fieldSelector, LabelSelector: r.labelSelector,
	})
}

func decisionAccessor(id string, out *cel.Type, f func(decisionVal) ref.Val) cel.FunctionOpt {
	return cel.MemberOverload(id, []*cel.Type{DecisionType}, out, cel.UnaryBinding(func(v ref.Val) ref.Val {
		d, ok := v.(decisionVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return f(d)
	}))
}

// selectorModel prices parsing a selector into requirements: a list, a
// traversal of the string, and a requirement (a struct and a list) per two
// characters.
func selectorModel(id string) cost.OverloadModel {
	selectorCost := func(sz cost.SizeEstimate) cost.Estimate {
		parse := sz.MultiplyByCostFactor(stringFactor)
		requirements := sz.MultiplyByCostFactor(0.5).MultiplyByCostFactor(cost.ListCreateBaseCost + cost.StructCreateBaseCost)
		return cost.FixedCostEstimate(cost.ListCreateBaseCost).Add(parse).Add(requirements)
	}
	return priced(id,
		func(e cost.Estimator, _ *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
			if len(args) != 1 {
				return nil
			}
			return cost.NewCallEstimate(selectorCost(cost.EstimateSize(e, args[0])), nil)
		},
		func(args []ref.Val, _ ref.Val) *uint64 {
			if len(args) < 2 {
				return nil
			}
			c := selectorCost(cost.FixedSizeEstimate(actualSize(args[1]))).Max
			return &c
		})
}

// The values of the authz types. Each holds the request's context, as
// cel-go passes none to functions; a value lives only as long as one
// evaluation.
type (
	authorizerVal struct {
		ctx   context.Context
		authz Authorizer
		user  *filters.User
	}
	pathCheckVal struct {
		authz authorizerVal
		path  string
	}
	groupCheckVal struct {
		authz authorizerVal
		group string
	}
	resourceCheckVal struct {
		group                                                                groupCheckVal
		resource, subresource, namespace, name, fieldSelector, labelSelector string
	}
	decisionVal struct {
		decision Decision
		reason   string
		err      error
	}
)

func (a authorizerVal) decide(attrs Attributes) ref.Val {
	if a.authz == nil {
		return decisionVal{decision: DecisionNoOpinion, err: errNoAuthorizer}
	}
	d, reason, err := a.authz.Authorize(a.ctx, attrs)
	return decisionVal{decision: d, reason: reason, err: err}
}

// The ref.Val methods the types do not share. Equal fails, as in Kubernetes:
// these values are only receivers.
func (a authorizerVal) ConvertToNative(t reflect.Type) (any, error) {
	return objectVal{AuthorizerType}.ConvertToNative(t)
}
func (a authorizerVal) Type() ref.Type { return AuthorizerType }
func (a authorizerVal) Value() any     { return a }
func (a authorizerVal) ConvertToType(t ref.Type) ref.Val {
	return objectVal{AuthorizerType}.convert(a, t)
}
func (a authorizerVal) Equal(o ref.Val) ref.Val { return types.MaybeNoSuchOverloadErr(o) }

func (p pathCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return objectVal{PathCheckType}.ConvertToNative(t)
}
func (p pathCheckVal) Type() ref.Type { return PathCheckType }
func (p pathCheckVal) Value() any     { return p }
func (p pathCheckVal) ConvertToType(t ref.Type) ref.Val {
	return objectVal{PathCheckType}.convert(p, t)
}
func (p pathCheckVal) Equal(o ref.Val) ref.Val { return types.MaybeNoSuchOverloadErr(o) }

func (g groupCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return objectVal{GroupCheckType}.ConvertToNative(t)
}
func (g groupCheckVal) Type() ref.Type { return GroupCheckType }
func (g groupCheckVal) Value() any     { return g }
func (g groupCheckVal) ConvertToType(t ref.Type) ref.Val {
	return objectVal{GroupCheckType}.convert(g, t)
}
func (g groupCheckVal) Equal(o ref.Val) ref.Val { return types.MaybeNoSuchOverloadErr(o) }

func (r resourceCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return objectVal{ResourceCheckType}.ConvertToNative(t)
}
func (r resourceCheckVal) Type() ref.Type { return ResourceCheckType }
func (r resourceCheckVal) Value() any     { return r }
func (r resourceCheckVal) ConvertToType(t ref.Type) ref.Val {
	return objectVal{ResourceCheckType}.convert(r, t)
}
func (r resourceCheckVal) Equal(o ref.Val) ref.Val { return types.MaybeNoSuchOverloadErr(o) }

func (d decisionVal) ConvertToNative(t reflect.Type) (any, error) {
	return objectVal{DecisionType}.ConvertToNative(t)
}
func (d decisionVal) Type() ref.Type                   { return DecisionType }
func (d decisionVal) Value() any                       { return d }
func (d decisionVal) ConvertToType(t ref.Type) ref.Val { return objectVal{DecisionType}.convert(d, t) }
func (d decisionVal) Equal(o ref.Val) ref.Val          { return types.MaybeNoSuchOverloadErr(o) }

var (
	_ ref.Val = authorizerVal{}
	_ ref.Val = pathCheckVal{}
	_ ref.Val = groupCheckVal{}
	_ ref.Val = resourceCheckVal{}
	_ ref.Val = decisionVal{}
)
