// This file holds the cost of the libraries' functions, as Kubernetes prices
// them (k8s.io/apiserver pkg/cel/library/cost.go): each overload gets a
// static estimate and a runtime cost, registered as a cel.CostModel so that
// every program of the environment is charged them. Estimates receive the
// receiver apart from the arguments; runtime costs receive the receiver as
// the first argument, as cel-go passes them.

package cellib

import (
	"math"

	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

const (
	stringFactor = cost.StringTraversalCostFactor   // 0.1 per character
	regexFactor  = cost.RegexStringLengthCostFactor // 0.25 per character of a pattern
	// checkCost is the fixed cost of an authorization check: two fit in
	// one expression's per-call limit.
	checkCost = 350_000
	// maxNameFormatRegexSize bounds the pattern of a named format, for
	// validate's estimate.
	maxNameFormatRegexSize = 128
)

// priced pairs an overload with its estimate and runtime cost.
func priced(id string, est cost.FunctionEstimator, track cost.FunctionTracker) cost.OverloadModel {
	return cost.Overload(id, cost.ManualCost(est, track))
}

// fixed costs c, whatever the arguments.
func fixed(id string, c uint64) cost.OverloadModel {
	return priced(id,
		func(cost.Estimator, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
			return cost.NewCallEstimate(cost.FixedCostEstimate(c), nil)
		},
		func([]ref.Val, ref.Val) *uint64 { return &c })
}

// scan costs a traversal of one string argument: arg is its index among
// the arguments of the estimate (receiver apart) and of the runtime cost
// (receiver first). factor is per character; sized says the result is as
// long as the argument.
func scan(id string, estArg, trackArg int, factor float64, sized bool) cost.OverloadModel {
	return priced(id,
		func(e cost.Estimator, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
			if len(args) <= estArg {
				return nil
			}
			sz := cost.EstimateSize(e, args[estArg])
			var res *cost.SizeEstimate
			if sized {
				res = &sz
			}
			return cost.NewCallEstimate(sz.MultiplyByCostFactor(factor), res)
		},
		func(args []ref.Val, _ ref.Val) *uint64 {
			if len(args) <= trackArg {
				return nil
			}
			c := ceilCost(float64(actualSize(args[trackArg])) * factor)
			return &c
		})
}

// regexCost is the cost of matching a pattern of patternLen characters
// against a string of strLen: one traversal of the string (plus one, so an
// empty string still costs) per four characters of the pattern.
func regexCost(strLen, patternLen uint64) uint64 {
	str := ceilCost((1 + float64(strLen)) * stringFactor)
	re := ceilCost(float64(patternLen) * regexFactor)
	return cost.SafeMultiply(str, re)
}

// traversalCost is the cost of walking v: a tenth per character of strings
// and bytes, the sum of the elements of lists and of the entries of maps,
// and 1 for anything else.
func traversalCost(v ref.Val) uint64 {
	switch t := v.(type) {
	case types.String:
		return uint64(float64(len(t)) * stringFactor)
	case types.Bytes:
		return uint64(float64(len(t)) * stringFactor)
	case traits.Lister:
		var c uint64
		for it := t.Iterator(); it.HasNext() == types.True; {
			c = cost.SafeAdd(c, traversalCost(it.Next()))
		}
		return c
	case traits.Mapper:
		var c uint64
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			c = cost.SafeAdd(c, traversalCost(k), traversalCost(t.Get(k)))
		}
		return c
	}
	return 1
}

// listTraversal prices the list functions: one comparison per element,
// plus a traversal of each element when they are strings or bytes; at run
// time, one traversal of the list.
func listTraversal(id string) cost.OverloadModel {
	return priced(id,
		func(e cost.Estimator, target *cost.AstNode, _ []cost.AstNode) *cost.CallEstimate {
			if target == nil {
				return nil
			}
			size := cost.EstimateSize(e, *target)
			el := cost.FixedCostEstimate(1)
			if params := (*target).Type().Parameters(); len(params) > 0 {
				if k := params[0].Kind(); k == types.StringKind || k == types.BytesKind {
					// The elements' node, at path @items when the list has a
					// path, so an estimator may size them by a schema's maxLength.
					var path []string
					if p := (*target).Path(); p != nil {
						path = append(append(path, p...), "@items")
					}
					elSize := cost.EstimateSize(e, cost.NewAstNode(nil, path, params[0], nil))
					el = el.Add(elSize.MultiplyByCostFactor(stringFactor))
				}
			}
			return cost.NewCallEstimate(size.MultiplyByCost(el), nil)
		},
		func(args []ref.Val, _ ref.Val) *uint64 {
			var c uint64
			if len(args) > 0 {
				c = traversalCost(args[0])
			}
			return &c
		})
}

// actualSize is the size of a sized value (strings, bytes, lists, maps,
// IPs and CIDRs) and 1 for anything else.
func actualSize(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok && n >= 0 {
			return uint64(n)
		}
	}
	return 1
}

// ceilCost rounds a cost up, saturating.
func ceilCost(f float64) uint64 {
	if f <= 0 || math.IsNaN(f) {
		return 0
	}
	if f >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Ceil(f))
}
