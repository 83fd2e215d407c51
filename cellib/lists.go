// This file holds Kubernetes' list library (kubernetes.lists): isSorted,
// sum, min, max, indexOf and lastIndexOf. cel-go's own lists extension
// (slice, flatten, sort...) is a different library, which Base adds too.

package cellib

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// Lists returns the list library:
//
//	<list<T>>.isSorted() bool          T comparable: int, uint, double, bool, duration, timestamp, string, bytes
//	<list<T>>.sum() T                  T int, uint, double or duration; 0 of T for an empty list
//	<list<T>>.min() T, .max() T        T comparable; "min called on empty list" for an empty list
//	<list<T>>.indexOf(T) int           first position of an equal element, or -1
//	<list<T>>.lastIndexOf(T) int       last position of an equal element, or -1
//
// Examples:
//
//	[1, 2, 3].isSorted()                    // true
//	[1, 3].sum()                            // 4
//	['a', 'b', 'b', 'c'].lastIndexOf('b')  // 2
//	([0] + emptyList).min()                 // 0
func Lists() cel.EnvOption {
	var opts []cel.EnvOption
	var isSorted, sum, minimum, maximum []cel.FunctionOpt
	var models []cost.OverloadModel
	for _, t := range comparableTypes {
		id := func(f string) string { return "list_" + t.name + "_" + f }
		isSorted = append(isSorted, cel.MemberOverload(id("is_sorted_bool"), []*cel.Type{cel.ListType(t.t)}, cel.BoolType, cel.UnaryBinding(listIsSorted)))
		maximum = append(maximum, cel.MemberOverload(id("max_"+t.name), []*cel.Type{cel.ListType(t.t)}, t.t, cel.UnaryBinding(listExtreme("max", types.IntNegOne))))
		minimum = append(minimum, cel.MemberOverload(id("min_"+t.name), []*cel.Type{cel.ListType(t.t)}, t.t, cel.UnaryBinding(listExtreme("min", types.IntOne))))
		models = append(models, listTraversal(id("is_sorted_bool")), listTraversal(id("max_"+t.name)), listTraversal(id("min_"+t.name)))
	}
	for _, t := range summableTypes {
		id := "list_" + t.name + "_sum_" + t.name
		sum = append(sum, cel.MemberOverload(id, []*cel.Type{cel.ListType(t.t)}, t.t, cel.UnaryBinding(listSum(t.zero))))
		models = append(models, listTraversal(id))
	}
	a := cel.TypeParamType("A")
	opts = append(opts,
		cel.Function("isSorted", isSorted...),
		cel.Function("sum", sum...),
		cel.Function("min", minimum...),
		cel.Function("max", maximum...),
		cel.Function("indexOf", cel.MemberOverload("list_a_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType, cel.BinaryBinding(listIndexOf))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_a_last_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType, cel.BinaryBinding(listLastIndexOf))),
		cel.CostModel(append(models, listTraversal("list_a_index_of_int"), listTraversal("list_a_last_index_of_int"))...),
	)
	return cel.Lib(&library{name: "kubernetes.lists", options: opts})
}

// listType is an element type of the list functions, named as Kubernetes
// names their overloads. The order matters: a call on a list of unknown
// element type (dyn([]).sum()) dispatches to the first.
type listType struct {
	name string
	t    *cel.Type
	zero ref.Val
}

var (
	summableTypes = []listType{
		{"int", cel.IntType, types.Int(0)},
		{"uint", cel.UintType, types.Uint(0)},
		{"double", cel.DoubleType, types.Double(0)},
		{"duration", cel.DurationType, types.Duration{}},
	}
	comparableTypes = []listType{
		{name: "int", t: cel.IntType},
		{name: "uint", t: cel.UintType},
		{name: "double", t: cel.DoubleType},
		{name: "bool", t: cel.BoolType},
		{name: "duration", t: cel.DurationType},
		{name: "timestamp", t: cel.TimestampType},
		{name: "string", t: cel.StringType},
		{name: "bytes", t: cel.BytesType},
	}
)

func listIsSorted(v ref.Val) ref.Val {
	it, ok := v.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	var prev traits.Comparer
	for i := it.Iterator(); i.HasNext() == types.True; {
		next := i.Next()
		c, ok := next.(traits.Comparer)
		if !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		if prev != nil && prev.Compare(next) == types.IntOne {
			return types.False
		}
		prev = c
	}
	return types.True
}

// listSum adds the elements to zero, the sum of an empty list.
func listSum(zero ref.Val) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		it, ok := v.(traits.Iterable)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		acc := zero
		for i := it.Iterator(); i.HasNext() == types.True; {
			a, ok := acc.(traits.Adder)
			if !ok {
				return types.MaybeNoSuchOverloadErr(acc)
			}
			acc = a.Add(i.Next())
			if types.IsError(acc) {
				return acc
			}
		}
		return acc
	}
}

// listExtreme is min or max: the pick so far is replaced by a later element
// it compares to as prefer (1 for min: the element is smaller; -1 for max).
func listExtreme(name string, prefer types.Int) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		it, ok := v.(traits.Iterable)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		var best traits.Comparer
		for i := it.Iterator(); i.HasNext() == types.True; {
			next := i.Next()
			c, ok := next.(traits.Comparer)
			if !ok {
				return types.MaybeNoSuchOverloadErr(next)
			}
			if best == nil || best.Compare(next) == prefer {
				best = c
			}
		}
		if best == nil {
			return types.NewErr("%s called on empty list", name)
		}
		return best.(ref.Val)
	}
}

func listIndexOf(list, item ref.Val) ref.Val {
	l, ok := list.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(list)
	}
	n, _ := l.Size().(types.Int)
	for i := types.Int(0); i < n; i++ {
		if l.Get(i).Equal(item) == types.True {
			return i
		}
	}
	return types.Int(-1)
}

func listLastIndexOf(list, item ref.Val) ref.Val {
	l, ok := list.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(list)
	}
	n, _ := l.Size().(types.Int)
	for i := n - 1; i >= 0; i-- {
		if l.Get(i).Equal(item) == types.True {
			return i
		}
	}
	return types.Int(-1)
}
