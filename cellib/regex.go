// This file holds Kubernetes' regex library (kubernetes.regex): find and
// findAll. It is not cel-go's regex extension (regex.replace,
// regex.extract), which Kubernetes does not enable.

package cellib

import (
	"regexp"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Regex returns the regex library (RE2 syntax, as Go's regexp):
//
//	<string>.find(<string>) string                the first match, or ''
//	<string>.findAll(<string>) list(string)       every match
//	<string>.findAll(<string>, <int>) list(string) at most n matches when n >= 0
//
// A constant pattern is compiled once, with the program: a bad one fails
// program construction. Otherwise a bad pattern is the runtime error
// "Illegal regex: ...".
//
// Examples:
//
//	"abc 123".find('[0-9]+')              // '123'
//	"123 abc 456".findAll('[0-9]+', 1)    // ['123']
func Regex() cel.EnvOption {
	return cel.Lib(&library{
		name: "kubernetes.regex",
		options: []cel.EnvOption{
			cel.Function("find", cel.MemberOverload("string_find_string", []*cel.Type{cel.StringType, cel.StringType}, cel.StringType,
				cel.BinaryBinding(func(s, re ref.Val) ref.Val { return regexFind(nil, s, re) }))),
			cel.Function("findAll",
				cel.MemberOverload("string_find_all_string", []*cel.Type{cel.StringType, cel.StringType}, cel.ListType(cel.StringType),
					cel.BinaryBinding(func(s, re ref.Val) ref.Val { return regexFindAll(nil, s, re, types.Int(-1)) })),
				cel.MemberOverload("string_find_all_string_int", []*cel.Type{cel.StringType, cel.StringType, cel.IntType}, cel.ListType(cel.StringType),
					cel.FunctionBinding(func(args ...ref.Val) ref.Val {
						if len(args) != 3 {
							return types.NoSuchOverloadErr()
						}
						return regexFindAll(nil, args[0], args[1], args[2])
					}))),
			cel.CostModel(regexModel("string_find_string"), regexModel("string_find_all_string"), regexModel("string_find_all_string_int")),
		},
		program: []cel.ProgramOption{cel.OptimizeRegex(
			regexOptimization("find", func(re *regexp.Regexp, args []ref.Val) ref.Val {
				if len(args) != 2 {
					return types.NoSuchOverloadErr()
				}
				return regexFind(re, args[0], nil)
			}),
			regexOptimization("findAll", func(re *regexp.Regexp, args []ref.Val) ref.Val {
				switch len(args) {
				case 2:
					return regexFindAll(re, args[0], nil, types.Int(-1))
				case 3:
					return regexFindAll(re, args[0], nil, args[2])
				}
				return types.NoSuchOverloadErr()
			}),
		)},
	})
}

// regexOptimization compiles a constant pattern (the second argument of
// fn) when the program is built.
func regexOptimization(fn string, call func(re *regexp.Regexp, args []ref.Val) ref.Val) *interpreter.RegexOptimization {
	return &interpreter.RegexOptimization{
		Function:   fn,
		RegexIndex: 1,
		Factory: func(c interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
			re, err := regexp.Compile(pattern)
			if err != nil {
				return nil, err
			}
			return interpreter.NewCall(c.ID(), c.Function(), c.OverloadID(), c.Args(), func(args ...ref.Val) ref.Val {
				return call(re, args)
			}), nil
		},
	}
}

// compilePattern is re, or the pattern in reVal compiled.
func compilePattern(re *regexp.Regexp, reVal ref.Val) (*regexp.Regexp, ref.Val) {
	if re != nil {
		return re, nil
	}
	p, bad := stringArg(reVal)
	if bad != nil {
		return nil, bad
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, types.NewErr("Illegal regex: %v", err.Error())
	}
	return re, nil
}

// regexFind is find: re is the pattern compiled with the program, or nil
// to compile reVal's.
func regexFind(re *regexp.Regexp, sVal, reVal ref.Val) ref.Val {
	s, bad := stringArg(sVal)
	if bad != nil {
		return bad
	}
	re, bad = compilePattern(re, reVal)
	if bad != nil {
		return bad
	}
	return types.String(re.FindString(s))
}

// regexFindAll is findAll, at most n matches when n >= 0.
func regexFindAll(re *regexp.Regexp, sVal, reVal, nVal ref.Val) ref.Val {
	s, bad := stringArg(sVal)
	if bad != nil {
		return bad
	}
	n, ok := nVal.(types.Int)
	if !ok {
		return types.MaybeNoSuchOverloadErr(nVal)
	}
	re, bad = compilePattern(re, reVal)
	if bad != nil {
		return bad
	}
	return types.NewStringList(types.DefaultTypeAdapter, re.FindAllString(s, int(n)))
}

// regexModel prices find and findAll: the string's length times the
// pattern's, the result at most as long as the string.
func regexModel(id string) cost.OverloadModel {
	return priced(id,
		func(e cost.Estimator, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
			if target == nil || len(args) < 1 {
				return nil
			}
			sz := cost.EstimateSize(e, *target)
			str := sz.Add(cost.FixedSizeEstimate(1)).MultiplyByCostFactor(stringFactor)
			re := cost.EstimateSize(e, args[0]).MultiplyByCostFactor(regexFactor)
			return cost.NewCallEstimate(str.Multiply(re), &cost.SizeEstimate{Min: 0, Max: sz.Max})
		},
		func(args []ref.Val, _ ref.Val) *uint64 {
			if len(args) < 2 {
				return nil
			}
			c := regexCost(actualSize(args[0]), actualSize(args[1]))
			return &c
		})
}
