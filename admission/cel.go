// This file holds what every CEL use in admission shares: the environment
// (Kubernetes 1.34's, from package cellib), compilation with a per-call cost
// limit, evaluation against a shared budget, and the conversion of decoded
// JSON into CEL values.

package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/annexapi/annex/cellib"
)

// Kubernetes' CEL limits (k8s.io/apiserver/pkg/apis/cel/config.go).
const (
	// PerCallLimit is the cost one expression may spend in one evaluation.
	PerCallLimit = 1_000_000
	// RuntimeCELCostBudget is what all x-kubernetes-validations rules of one
	// object, and all expressions of one policy evaluation, may spend.
	RuntimeCELCostBudget = 10_000_000
	// MatchConditionBudget is what a policy's or webhook's matchConditions
	// may spend together.
	MatchConditionBudget = 2_500_000
)

// errOutOfBudget is returned by evalExpr when the shared budget is spent.
var errOutOfBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// celBaseOptions are the libraries every environment gets: Kubernetes
// 1.34's base CEL environment (cellib.Base): its libraries (lists, regex,
// url, quantity, ip, cidr, format, semver, authz) with their costs, and the
// cel-go extensions and options it enables (strings v2, lists v3, sets,
// two-variable comprehensions, optional types...), and nothing more, so a
// rule copied from a cluster means here what it means there. An
// environment's type provider must come before them: ip and cidr register
// their types with it.
func celBaseOptions() []cel.EnvOption {
	return cellib.Base()
}

// compiled is one CEL expression ready to run.
type compiled struct {
	expr string
	prg  cel.Program
	ast  *cel.Ast
}

// compileExpr compiles expr in env; want (if not nil) is the required output
// type, checked at compile time unless the expression is dyn.
func compileExpr(env *cel.Env, expr string, want *cel.Type, perCall uint64) (*compiled, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %v", strings.TrimSpace(iss.Err().Error()))
	}
	if want != nil {
		out := ast.OutputType()
		if !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
			return nil, fmt.Errorf("must evaluate to %s, not %s", want, out)
		}
	}
	if perCall == 0 {
		perCall = PerCallLimit
	}
	prg, err := env.Program(ast, cel.CostLimit(perCall), cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost))
	if err != nil {
		return nil, fmt.Errorf("program construction failed: %v", err)
	}
	return &compiled{expr: expr, prg: prg, ast: ast}, nil
}

// references reports whether the checked expression reads the variable name.
func (c *compiled) references(name string) bool {
	for _, r := range c.ast.NativeRep().ReferenceMap() {
		if r.Name == name {
			return true
		}
	}
	return false
}

// eval runs the program; budget (shared by a whole evaluation) is reduced by
// the actual cost, and errOutOfBudget returned once it is spent.
func (c *compiled) eval(ctx context.Context, act any, budget *int64) (ref.Val, error) {
	val, det, err := c.prg.ContextEval(ctx, act)
	if det != nil && det.ActualCost() != nil && budget != nil {
		cost := *det.ActualCost()
		if cost > math.MaxInt64 || int64(cost) > *budget {
			*budget = -1
			return nil, errOutOfBudget
		}
		*budget -= int64(cost)
	}
	if err != nil {
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return nil, errOutOfBudget
		}
		return nil, err
	}
	return val, nil
}

// jsonAdapter presents decoded JSON to CEL as it is, without a copy: maps
// and lists are wrapped, and each value is converted when an expression
// reads it, numbers as celValue converts them. Everything else goes to the
// wrapped adapter (the environment's registry).
type jsonAdapter struct{ types.Adapter }

func (a jsonAdapter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case map[string]any:
		return types.NewStringInterfaceMap(a, t)
	case []any:
		return types.NewDynamicList(a, t)
	case json.Number, float64, int, int32:
		return a.Adapter.NativeToValue(celValue(t))
	}
	return a.Adapter.NativeToValue(v)
}

// celValue turns decoded JSON (which may hold json.Number) into values
// cel-go's default adapter understands: integral numbers become int64,
// others float64. The input is not changed.
func celValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = celValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = celValue(e)
		}
		return out
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
		return t
	case int:
		return int64(t)
	case int32:
		return int64(t)
	}
	return v
}

// nativeValue converts a CEL result back to plain JSON values
// (map[string]any, []any, string, int64, float64, bool, nil).
func nativeValue(v ref.Val) (any, error) {
	switch v.Type() {
	case types.NullType:
		return nil, nil
	case types.MapType, types.ListType:
		if out, ok := plainJSON(v); ok {
			return out, nil
		}
		return structJSON(v)
	}
	return v.Value(), nil
}

// structJSON is nativeValue of a map or list through protobuf's JSON value,
// CEL's own conversion.
func structJSON(v ref.Val) (any, error) {
	n, err := v.ConvertToNative(types.JSONValueType)
	if err != nil {
		return nil, err
	}
	return integralToInt(n.(*structpb.Value).AsInterface()), nil
}

// maxIntJSON is the largest integer CEL's JSON conversion keeps a number
// (larger ones become strings).
const maxIntJSON = 1<<53 - 1

// plainJSON is structJSON without the protobuf values in between, for maps
// with string keys, lists, strings, bools, null, doubles and ints within
// ±maxIntJSON; false for anything else, left to structJSON.
func plainJSON(v ref.Val) (any, bool) {
	switch t := v.(type) {
	case types.String:
		return string(t), true
	case types.Bool:
		return bool(t), true
	case types.Null:
		return nil, true
	case types.Int:
		if t < -maxIntJSON || t > maxIntJSON {
			return nil, false
		}
		return int64(t), true
	case types.Double:
		return integralToInt(float64(t)), true
	}
	switch v.Type() {
	case types.MapType:
		m, ok := v.(traits.Mapper)
		if !ok {
			return nil, false
		}
		out := map[string]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			k, ok := it.Next().(types.String)
			if !ok {
				return nil, false
			}
			e, ok := plainJSON(m.Get(k))
			if !ok {
				return nil, false
			}
			out[string(k)] = e
		}
		return out, true
	case types.ListType:
		l, ok := v.(traits.Lister)
		if !ok {
			return nil, false
		}
		n, ok := l.Size().(types.Int)
		if !ok {
			return nil, false
		}
		out := make([]any, 0, n)
		for i := types.Int(0); i < n; i++ {
			e, ok := plainJSON(l.Get(i))
			if !ok {
				return nil, false
			}
			out = append(out, e)
		}
		return out, true
	}
	return nil, false
}

// integralToInt turns the float64s of a structpb round trip back into
// int64 where they are integral, so JSON encodes 3 and not 3.0 semantics are
// kept for integer fields.
func integralToInt(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = integralToInt(e)
		}
	case []any:
		for i, e := range t {
			t[i] = integralToInt(e)
		}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
	}
	return v
}
